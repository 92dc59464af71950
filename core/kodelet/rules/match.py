"""One rule against the facts of one call.

The fixed fields of a rule (program, flags, zone, ...) are plain set tests over
:class:`~kodelet.rules.facts.Facts`; a ``when`` condition is CEL (docs/DECISIONS.md,
"Rules: CEL for conditions"), compiled once per rule by :class:`Matcher` and evaluated
over ``call`` (``Facts.to_dict()``) and ``cmd`` (the command being matched). A CEL
evaluation error fails closed: a ``deny``/``ask`` rule whose condition cannot be
evaluated matches, an ``allow`` rule does not.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .paths import glob_regex
from .ruleset import Rule, RuleFileError

if TYPE_CHECKING:
    from .facts import Command, Facts, Flow, PathFact

__all__ = ["NETWORK", "Matcher", "glob_match"]

_NETWORK = """curl wget nc ncat netcat socat ssh scp sftp rsync ftp tftp telnet http https xh
aria2c axel lftp openssl s_client mail sendmail"""
NETWORK = frozenset(_NETWORK.split())
"""Programs a ``network`` flow side stands for, beside what facts.py calls a sink."""

_CMD = re.compile(r"\bcmd\b")
_CALL = re.compile(r"\bcall\b")
KEPT = 256
"""Commands whose condition answer a matcher keeps."""


class Matcher:
    """A rule ready to match: its ``when`` compiled (lazily importing CEL)."""

    def __init__(self, rule: Rule, *, lazy: bool = False) -> None:
        """``lazy``: compile ``when`` at its first use, not now (the guard's choice:
        building CEL's parser costs a second on a cold start, and a call that never
        reaches the condition does not need it; :class:`RuleFileError` then comes from
        :meth:`matches`)."""
        self.rule = rule
        self.uses_cmd = bool(rule.when) and bool(_CMD.search(rule.when))
        self.uses_call = bool(rule.when) and bool(_CALL.search(rule.when))
        self._program: Callable[[dict[str, Any]], Any] | None = None
        # A condition on ``cmd`` alone is a function of the command: its answers are
        # kept (an agent runs the same commands again and again; CEL costs milliseconds).
        self._seen: OrderedDict[Command, bool] = OrderedDict()
        if rule.when and not lazy:
            self._program = compile_when(rule)

    def prepare(self) -> None:
        """Compile ``when`` now, ahead of the first call (the warm kodelet's start). A
        condition that does not compile is left to that call, which is refused then as
        it would be without this (the warm answer is the in-process one)."""
        if self.rule.when and self._program is None:
            with contextlib.suppress(RuleFileError):
                self._program = compile_when(self.rule)

    def matches(self, facts: Facts, call: Callable[[], Any]) -> bool:
        """Whether the rule matches; ``call`` gives the CEL value of ``facts`` (built once
        per call, only when some rule has a condition)."""
        rule = self.rule
        if rule.tool and facts.kind not in rule.tool:
            return False
        if rule.flow and not any(_flow(spec, f) for spec in rule.flow for f in facts.flows):
            return False
        if rule.command_level or self.uses_cmd:
            return any(self._when(call, cmd) for cmd in self._candidates(facts))
        return self._when(call, None)

    def _candidates(self, facts: Facts) -> Iterator[Any]:
        """The commands (a file tool: its one pseudo-command) the command-level fields
        hold for, as the ``cmd`` CEL sees."""
        rule = self.rule
        if facts.kind == "shell":
            for c in facts.commands:
                if self._command_holds(facts, c):
                    yield c
            return
        if rule.program or rule.subcommand or rule.flags or rule.any_flags or rule.via:
            return
        if self.uses_cmd:  # a condition on a command: a call without one never matches
            return
        paths = tuple(facts.files)
        if _paths_hold(rule, facts, paths, tuple(facts.writes), tuple(facts.reads)):
            yield None

    def _command_holds(self, facts: Facts, c: Command) -> bool:
        rule = self.rule
        if rule.program and c.program not in rule.program:
            return False
        if rule.subcommand and c.subcommand not in rule.subcommand:
            return False
        if rule.flags and not all(f in c.flags for f in rule.flags):
            return False
        if rule.any_flags and not any(f in c.flags for f in rule.any_flags):
            return False
        if rule.via and not any(v in c.via for v in rule.via):
            return False
        every = (*c.paths, *c.writes, *c.reads)
        return _paths_hold(rule, facts, every, tuple(c.writes), tuple(c.reads))

    def _when(self, call: Callable[[], Any], cmd: Command | None) -> bool:
        if not self.rule.when:
            return True
        if cmd is None or self.uses_call:
            return self._evaluate(call, cmd)
        held = self._seen.get(cmd)
        if held is not None:
            self._seen.move_to_end(cmd)
            return held
        answer = self._seen[cmd] = self._evaluate(call, cmd)
        if len(self._seen) > KEPT:
            self._seen.popitem(last=False)
        return answer

    def _evaluate(self, call: Callable[[], Any], cmd: Command | None) -> bool:
        if self._program is None:
            self._program = compile_when(self.rule)
        try:
            value = self._program(
                {
                    "call": call() if self.uses_call else None,
                    "cmd": None if cmd is None else _cel(cmd),
                }
            )
        except Exception:  # cannot be evaluated: fail closed
            return self.rule.decision != "allow"
        if _is_bool(value):
            return bool(value)
        return self.rule.decision != "allow"  # not a bool (an error value): fail closed


def _paths_hold(
    rule: Rule,
    facts: Facts,
    every: tuple[PathFact, ...],
    writes: tuple[PathFact, ...],
    reads: tuple[PathFact, ...],
) -> bool:
    if rule.zone and not any(p.zone in rule.zone for p in every):
        return False
    if rule.writes_zone and not any(p.zone in rule.writes_zone for p in writes):
        return False
    if rule.reads and not _any_glob(rule.reads, reads, facts):
        return False
    return not rule.path or _any_glob(rule.path, every, facts)


def _any_glob(patterns: Iterable[str], paths: Iterable[PathFact], facts: Facts) -> bool:
    return any(
        glob_match(pat, p.path, home=facts.home, project=facts.project)
        for pat in patterns
        for p in paths
    )


def _flow(spec: str, flow: Flow) -> bool:
    source, _, sink = spec.partition("->")
    return _side(source, flow.source, True) and _side(sink, flow.sink, False)


def _side(want: str, got: str, source: bool) -> bool:
    if want in ("*", got):
        return True
    if want == "network":
        return got in NETWORK if source else got != "interpreter"
    if source and want == "file":
        return got.startswith("file:") or got == "secret-file"
    return False


def glob_match(pattern: str, path: str, *, home: str, project: str) -> bool:
    """Whether the absolute ``path`` matches ``pattern``: ``~/`` is the home folder, a
    pattern without ``/`` matches a file name anywhere, one starting ``**/`` matches at
    any depth, another relative one is relative to the project; ``*`` and ``?`` stay in
    one path segment, ``**`` spans segments."""
    if not path:
        return False
    if "/" not in pattern:
        return _regex(pattern).fullmatch(os.path.basename(path.rstrip("/")) or "/") is not None
    if pattern == "~" or pattern.startswith("~/"):
        pattern = home.rstrip("/") + pattern[1:]
    elif not pattern.startswith(("/", "**/")):
        pattern = project.rstrip("/") + "/" + pattern
    return _regex(pattern).fullmatch(path) is not None


@functools.lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(glob_regex(pattern), re.DOTALL)


def _is_bool(value: Any) -> bool:
    from celpy.celtypes import BoolType

    return isinstance(value, bool | BoolType)


def _cel(command: Command) -> Any:
    from celpy.adapter import json_to_cel

    return json_to_cel(command.to_dict())


def cel_value(facts: Facts) -> Any:
    """``facts`` as the CEL variable ``call``."""
    from celpy.adapter import json_to_cel

    return json_to_cel(facts.to_dict())


def compile_when(rule: Rule) -> Callable[[dict[str, Any]], Any]:
    """The rule's ``when``, compiled; :class:`RuleFileError` (naming the rule) when it is
    not CEL.

    Transpiled to Python once (cel-python's ``CompiledRunner``): its tree-walking
    interpreter took about 10 ms a condition, the compiled program a small fraction of
    it. The transpiler is younger than the interpreter, so an expression it cannot
    compile, or a call it raises on, is given to the interpreter: the answer is the
    interpreter's either way, only the time differs."""
    import celpy

    def build(runner: type[Any]) -> Any:
        env = celpy.Environment(runner_class=runner)
        return env.program(env.compile(rule.when))

    try:
        interpreted = build(celpy.InterpretedRunner)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RuleFileError(
            f"{rule.origin}: rule {rule.name!r}: when is not a CEL expression ({first}); "
            "see docs/RULES.md, Conditions"
        ) from None
    try:
        compiled = build(celpy.CompiledRunner)
    except Exception:
        slow: Callable[[dict[str, Any]], Any] = interpreted.evaluate
        return slow

    def evaluate(activation: dict[str, Any]) -> Any:
        try:
            value = compiled.evaluate(activation)
        except Exception:
            return interpreted.evaluate(activation)
        return value if _is_bool(value) else interpreted.evaluate(activation)

    return evaluate
