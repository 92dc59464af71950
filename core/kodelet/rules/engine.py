"""The engine: rule files in tiers, and the one decision they reach for a call.

Tiers, strongest first: managed > user > recommended (turned on by the user) >
project > recommended (turned on by the project). Among the rules that match, the
most severe decision wins (deny > ask > allow), except that an ``allow`` rule
suppresses the deny and ask rules of *weaker* tiers only, and ``disable`` switches
off rules of weaker tiers only: a cloned repository's rule file can neither lift
nor remove a rule of the user's or the machine's. A shell command whose program is
decided at run time, or that cannot be parsed, is judged by ``on_unknown`` of the
strongest tier that sets it (default ``ask``), as rule ``builtin:unknown-command``,
which no allow rule lifts.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

import attrs

from .match import Matcher, cel_value
from .ruleset import SEVERITY, TIERS, RuleFile, RuleFileError, parse

if TYPE_CHECKING:
    from .facts import Facts
    from .shell import Parser

__all__ = ["UNKNOWN", "Engine", "Layer", "Match", "Verdict", "recommended_text"]

UNKNOWN = "builtin:unknown-command"
CACHE_SIZE = 512
"""Command texts whose parse an engine keeps."""


def recommended_text() -> str:
    """The shipped recommended rule set (package data)."""
    return resources.files(__package__).joinpath("recommended.toml").read_text("utf-8")


@attrs.frozen
class Layer:
    """One tier's rule file in precedence order (``rank`` 0 is the strongest)."""

    rank: int
    source: str
    """``managed``, ``user``, ``project`` or ``recommended``."""
    tier: str
    """The tier it sits at (for ``recommended``: the tier that turned it on)."""
    file: RuleFile

    @property
    def label(self) -> str:
        return f"recommended@{self.tier}" if self.source == "recommended" else self.source


@attrs.frozen
class Match:
    """A rule that matched a call, and whether a stronger tier's allow lifted it."""

    layer: Layer
    name: str
    decision: str
    reason: str
    suppressed_by: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "source": self.layer.label,
            "origin": self.layer.file.origin,
            "rule": self.name,
            "decision": self.decision,
            "reason": self.reason,
        }
        if self.suppressed_by:
            out["suppressed_by"] = self.suppressed_by
        return out


@attrs.frozen
class Verdict:
    """What the rules decided for one call; ``decision`` is ``none`` when no rule matched."""

    decision: Literal["deny", "ask", "allow", "none"]
    rule: str
    source: str
    reason: str
    facts: Facts
    matched: tuple[tuple[str, str, str], ...] = ()
    """(source, rule, decision) of every rule that matched, strongest tier first."""
    matches: tuple[Match, ...] = ()
    origin: str = ""
    """The file of the deciding rule (a path, or ``recommended``)."""


class Engine:
    """Rule files in tiers, compiled once; :meth:`decide` judges one call.

    ``sets`` replaces the text of a shipped rule set (``{"recommended": text}``), for
    tests. ``lazy`` compiles each ``when`` at its first use (:class:`~.match.Matcher`):
    the guard's choice; the CLI compiles all, so a bad condition is found at once."""

    def __init__(
        self,
        files: Sequence[RuleFile],
        *,
        sets: Mapping[str, str] | None = None,
        lazy: bool = False,
    ) -> None:
        self.layers = _layers(files, sets or {})
        self._matchers: list[tuple[Layer, list[Matcher]]] = []
        self.disabled: dict[str, str] = {}
        """``label:name`` of each rule switched off -> the tier that did it."""
        for layer in self.layers:
            weaker_off = {
                name: stronger.label
                for stronger in self.layers
                if stronger.rank < layer.rank
                for name in stronger.file.disable
            }
            kept = []
            for rule in layer.file.rules:
                if rule.name in weaker_off:
                    self.disabled[f"{layer.label}:{rule.name}"] = weaker_off[rule.name]
                else:
                    kept.append(Matcher(rule, lazy=lazy))
            self._matchers.append((layer, kept))
        self.ignored: list[tuple[str, str, str]] = [
            (layer.label, name, holder.label)
            for layer in self.layers
            for name in layer.file.disable
            for holder in self.layers
            if holder.rank <= layer.rank and any(r.name == name for r in holder.file.rules)
        ]
        """(tier, rule name, tier holding it) of each ``disable`` that reaches no weaker
        tier's rule: a project naming the user's rules, say."""
        setter = next((la for la in self.layers if la.file.on_unknown), None)
        self.on_unknown = setter.file.on_unknown if setter is not None else "ask"
        self.unknown_layer: Layer | None = None
        if self.layers:
            # No allow rule lifts it: it sits at the strongest tier there is.
            strongest = self.layers[0]
            self.unknown_layer = Layer(
                rank=strongest.rank,
                source=setter.source if setter is not None else "builtin",
                tier=setter.tier if setter is not None else strongest.tier,
                file=setter.file if setter is not None else RuleFile(tier="managed", origin=""),
            )
        self.unknown_source = "builtin" if setter is None else setter.label
        self.active = any(m for _, m in self._matchers) or setter is not None
        self._parser: Parser | None = None
        # The warm kodelet answers calls in threads; the parse cache, the tree-sitter
        # parser and the matchers' kept answers are one engine's, so one call at a time.
        self._lock = threading.RLock()

    def warm_up(self, project: str, home: str) -> None:
        """Import and build what the first call would (the bash grammar, CEL's parser,
        every condition), so the warm kodelet's first calls do not pay about a second."""
        with self._lock:
            for _, matchers in self._matchers:
                for m in matchers:
                    m.prepare()
        self.facts("bash", {"command": "true"}, cwd=project, project=project, home=home)

    def rule_count(self) -> dict[str, int]:
        """Rules in force per tier label, strongest first (what ``hooks list`` says)."""
        return {layer.label: len(m) for layer, m in self._matchers}

    def decide(
        self,
        tool_name: str,
        tool_input: Mapping[str, Any],
        *,
        cwd: str,
        project: str,
        home: str,
        kodelet_home: str = "",
    ) -> Verdict:
        """The verdict on one call (``cwd`` absolute, the folder the call runs in)."""
        facts = self.facts(
            tool_name, tool_input, cwd=cwd, project=project, home=home, kodelet_home=kodelet_home
        )
        return self.judge(facts)

    def facts(
        self,
        tool_name: str,
        tool_input: Mapping[str, Any],
        *,
        cwd: str,
        project: str,
        home: str,
        kodelet_home: str = "",
    ) -> Facts:
        """The facts of one call. Parses are kept by command text (the engine's own
        :class:`~kodelet.rules.shell.Parser`); paths are resolved afresh every call, as
        a symlink made since must count."""
        from .facts import derive
        from .shell import Parser

        with self._lock:
            if self._parser is None:
                self._parser = Parser(CACHE_SIZE)
            return derive(
                tool_name,
                tool_input,
                cwd=cwd,
                project=project,
                home=home,
                kodelet_home=kodelet_home or f"{home.rstrip('/')}/.kodelet",
                parser=self._parser,
            )

    def judge(self, facts: Facts) -> Verdict:
        """The verdict on a call whose facts are known."""
        with self._lock:
            return self._judge(facts)

    def _judge(self, facts: Facts) -> Verdict:
        held: list[Any] = []

        def call() -> Any:
            if not held:
                held.append(cel_value(facts))
            return held[0]

        found: list[Match] = []
        for layer, matchers in self._matchers:
            for m in matchers:
                if m.matches(facts, call):
                    r = m.rule
                    found.append(Match(layer, r.name, r.decision, r.reason))
        unknown = self.unknown_layer
        if (
            unknown
            and self.active
            and facts.kind == "shell"
            and (facts.dynamic or facts.parse_error)
        ):
            dynamic = next((c.text for c in facts.commands if c.dynamic), "")
            shown = dynamic if len(dynamic) <= 80 else dynamic[:77] + "..."
            what = (
                f"the command cannot be parsed ({facts.parse_error})"
                if facts.parse_error
                else f"`{shown}` runs a program decided only when it runs ($VAR, $(...), "
                "eval, a string built at run time)"
            )
            reason = (
                f"{what}, so no rule can judge it; write the command out plainly "
                f"(on_unknown = {self.on_unknown!r} decides such commands)"
            )
            found.insert(0, Match(unknown, UNKNOWN, self.on_unknown, reason))
        return _verdict(facts, found)


def _layers(files: Sequence[RuleFile], sets: Mapping[str, str]) -> list[Layer]:
    layers: list[Layer] = []
    used: set[str] = set()
    for t, tier in enumerate(TIERS):
        mine = [f for f in files if f.tier == tier]
        layers += [Layer(rank=2 * t, source=tier, tier=tier, file=f) for f in mine]
        for name in dict.fromkeys(n for f in mine for n in f.use):
            if name in used:
                continue  # already in force at a stronger tier
            used.add(name)
            try:
                text = sets[name] if name in sets else recommended_text()
            except OSError as exc:
                raise RuleFileError(
                    f"{name}: the shipped rule set cannot be read ({exc.strerror or exc}); "
                    "reinstall kodelet"
                ) from None
            shipped = parse(text, tier=tier, origin=name)
            if shipped.use or shipped.disable:
                raise RuleFileError(f"{name}: a shipped rule set may not use or disable others")
            layers.append(Layer(rank=2 * t + 1, source=name, tier=tier, file=shipped))
    return layers


def _verdict(facts: Facts, found: list[Match]) -> Verdict:
    """Allow lifts weaker tiers' deny/ask; then the most severe decision, strongest first."""
    allows = [m for m in found if m.decision == "allow"]
    final: list[Match] = []
    for m in found:
        if m.decision != "allow" and m.name != UNKNOWN:
            lifter = next((a for a in allows if a.layer.rank < m.layer.rank), None)
            if lifter is not None:
                m = attrs.evolve(m, suppressed_by=f"{lifter.layer.label}:{lifter.name}")
        final.append(m)
    live = [m for m in final if not m.suppressed_by]
    matched = tuple((m.layer.label, m.name, m.decision) for m in final)
    if not live:
        return Verdict("none", "", "", "", facts, matched, tuple(final))
    best = max(live, key=lambda m: (SEVERITY[m.decision], -m.layer.rank))
    return Verdict(
        decision=best.decision,  # type: ignore[arg-type]
        rule=best.name,
        source=best.layer.source,
        reason=best.reason,
        facts=facts,
        matched=matched,
        matches=tuple(final),
        origin=best.layer.file.origin,
    )
