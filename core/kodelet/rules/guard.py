"""``builtin:rules``: the rule files' verdict on each tool call, as a built-in guard.

Registered by :func:`kodelet.assembly.load_runtime` when some rule file exists (the
files are found there; this module gets their text), last among the hooks so it
judges the input as the user's hooks rewrote it, i.e. what would run. ``deny`` blocks,
``ask`` asks (an agent without an approver blocks), anything else lets the call be.
A rule file that was refused or does not parse blocks every call, naming the file and
the fix: a guard that cannot read its rules says no.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..markers import hookimpl
from ..results import BeforeToolCallResult
from .engine import Engine, Verdict, recommended_text
from .ruleset import TIERS, RuleFile, RuleFileError, Tier, parse

__all__ = ["NAME", "RulesGuard", "Source", "reason"]

NAME = "builtin:rules"


@attrs.frozen
class Source:
    """A rule file as found on disk: its text, or why it was refused (with the fix)."""

    tier: Tier
    origin: str
    text: str = ""
    problem: str = ""


class RulesGuard:
    """The built-in as a plugin object over one :class:`Engine`, built at the first
    call (so a runtime that only lists hooks compiles no condition)."""

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        project: str,
        home: str,
        kodelet_home: str,
        sets: Mapping[str, str] | None = None,
    ) -> None:
        self.project, self.home, self.kodelet_home = project, home, kodelet_home
        self.files: list[RuleFile] = []
        self.problem = next((s.problem for s in sources if s.problem), "")
        self._sets = sets
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._note = ""
        if not self.problem:
            try:
                self.files = [parse(s.text, tier=s.tier, origin=s.origin) for s in sources]
            except RuleFileError as exc:
                self.problem = str(exc)

    def engine(self) -> Engine:
        """The engine, its conditions compiled as calls first reach them: a condition
        that does not compile blocks the call that reaches it and every call after (a
        rule whose fixed fields do not match decides nothing, whatever its condition)."""
        with self._lock:  # the warm kodelet's calls run in threads: build it once
            if self._engine is None:
                self._engine = Engine(self.files, sets=self._sets, lazy=True)
            return self._engine

    def warm_up(self) -> None:
        """Build the engine now (the warm kodelet's start), not at the first call."""
        if not self.problem:
            self.engine().warm_up(self.project, self.home)

    @property
    def listing_note(self) -> str:
        """What ``hooks list`` and ``status`` say of the rules in force: each tier and
        how many rules it holds, strongest first."""
        if self._note:
            return self._note
        if self.problem:
            return f"blocks every tool call: {self.problem}"
        counts: dict[str, int] = {}
        for f in sorted(self.files, key=lambda f: TIERS.index(f.tier)):
            if f.rules:
                counts[f.tier] = counts.get(f.tier, 0) + len(f.rules)
            for name in f.use:
                if not any(label.startswith(f"{name}@") for label in counts):
                    counts[f"{name}@{f.tier}"] = self._set_size(name)
        parts = [f"{label} {n}" if n >= 0 else label for label, n in counts.items()]
        self._note = "rules in force: " + (", ".join(parts) or "none")
        return self._note

    def _set_size(self, name: str) -> int:
        try:
            text = (self._sets or {}).get(name) or recommended_text()
            return len(parse(text, tier="project", origin=name).rules)
        except (OSError, RuleFileError):
            return -1

    @hookimpl(trylast=True)
    def before_tool_call(
        self, tool_name: str, tool_input: dict[str, Any], cwd: str
    ) -> BeforeToolCallResult | None:
        if self.problem:
            return BeforeToolCallResult(blocked=True, reason=_broken(self.problem))
        try:
            where = cwd if os.path.isabs(cwd or "") else os.path.join(self.project, cwd or "")
            verdict = self.engine().decide(
                tool_name,
                tool_input,
                cwd=os.path.normpath(where),
                project=self.project,
                home=self.home,
                kodelet_home=self.kodelet_home,
            )
        except RuleFileError as exc:
            self.problem = str(exc)
            return BeforeToolCallResult(blocked=True, reason=_broken(self.problem))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a guard that cannot decide says no
            why = f"{NAME}: the rules could not judge this call ({type(exc).__name__}: {exc})"
            return BeforeToolCallResult(blocked=True, reason=why)
        if verdict.decision == "deny":
            return BeforeToolCallResult(blocked=True, reason=reason(verdict))
        if verdict.decision == "ask":
            return BeforeToolCallResult(ask=True, reason=reason(verdict))
        if verdict.decision == "allow" and verdict.rule:
            # A reason alone changes nothing in the answer; the trace keeps it, so the
            # decision log records which rule let the call go (docs/AUDIT.md).
            return BeforeToolCallResult(reason=reason(verdict))
        return None


def reason(verdict: Verdict) -> str:
    """``kodelet rule NAME (SOURCE): why`` -- what the model and the user read."""
    return f"kodelet rule {verdict.rule} ({verdict.source}): {verdict.reason}"


def _broken(problem: str) -> str:
    return f"kodelet rules: {problem} (every tool call is blocked until it is fixed)"
