"""The rule file format: TOML read with :mod:`tomllib`, checked strictly.

A rule file is policy a team reviews, so a typo must never turn a rule off quietly:
every key is known, every value is checked, and the first problem is one line that
names the file, the rule and the fix (``RuleFileError``). The engine is handed text
and where it came from; finding the files on disk is the composition layer's work
(:mod:`kodelet.rule_files`). docs/RULES.md is the reference for users.
"""

from __future__ import annotations

import difflib
import functools
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import attrs

from ..errors import KodeletError

__all__ = [
    "DECISIONS",
    "FLOW_SINKS",
    "FLOW_SOURCES",
    "KINDS",
    "RULE_SETS",
    "SEVERITY",
    "TIERS",
    "ZONES",
    "Decision",
    "Rule",
    "RuleFile",
    "RuleFileError",
    "RuleTest",
    "Tier",
    "parse",
]

Decision = Literal["deny", "ask", "allow"]
Tier = Literal["managed", "user", "project"]

DECISIONS: tuple[Decision, ...] = ("deny", "ask", "allow")
SEVERITY: Mapping[str, int] = {"allow": 0, "ask": 1, "deny": 2}
TIERS: tuple[Tier, ...] = ("managed", "user", "project")
RULE_SETS = ("recommended",)
"""What ``use`` may name: the rule sets shipped with kodelet."""

KINDS = ("shell", "write", "edit", "read", "search", "fetch", "mcp", "agent", "other")
ZONES = (
    "project",
    "project_root",
    "tmp",
    "home",
    "home_root",
    "kodelet",
    "system",
    "root",
    "unknown",
)
FLOW_SOURCES = ("file", "secret-file", "env", "stdin", "network", "*")
"""What a flow's left side may be besides ``file:<zone>`` and a program's name."""
FLOW_SINKS = ("network", "interpreter", "*")
"""What a flow's right side may be besides a program's name."""

NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
_PROGRAM = re.compile(r"[A-Za-z0-9_.+-][A-Za-z0-9_.+@-]*")

LIST_FIELDS = (
    "tool",
    "program",
    "subcommand",
    "flags",
    "any_flags",
    "zone",
    "writes_zone",
    "reads",
    "path",
    "flow",
    "via",
)
COMMAND_FIELDS = frozenset(
    ("program", "subcommand", "flags", "any_flags", "via", "zone", "writes_zone", "reads", "path")
)
"""Fields that must all hold for the same command (for a file tool, its file)."""
RULE_KEYS = ("name", "decision", "reason", *LIST_FIELDS, "when")
TEST_KEYS = ("name", "command", "tool", "input", "cwd", "expect", "rule")
FILE_KEYS = ("use", "disable", "on_unknown", "rules", "tests")


class RuleFileError(KodeletError):
    """A rule file that cannot be used, said in one line: the file, the rule, the fix."""


@attrs.frozen
class Rule:
    """One ``[[rules]]`` table. Empty tuples are fields the rule does not constrain."""

    name: str
    decision: Decision
    reason: str
    origin: str = ""
    """The file it came from (a path, or ``recommended``)."""
    tool: tuple[str, ...] = ()
    program: tuple[str, ...] = ()
    subcommand: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    any_flags: tuple[str, ...] = ()
    zone: tuple[str, ...] = ()
    writes_zone: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    flow: tuple[str, ...] = ()
    via: tuple[str, ...] = ()
    when: str = ""

    @functools.cached_property
    def command_level(self) -> bool:
        """Whether some field must hold for one command (or a file tool's file); asked
        of every rule on every call, so worked out once."""
        return any(getattr(self, f) for f in COMMAND_FIELDS)

    def to_dict(self) -> dict[str, Any]:
        """The rule as written (what ``rules list --json`` prints)."""
        out: dict[str, Any] = {"name": self.name, "decision": self.decision}
        if self.reason:
            out["reason"] = self.reason
        for f in LIST_FIELDS:
            if getattr(self, f):
                out[f] = list(getattr(self, f))
        if self.when:
            out["when"] = self.when
        return out


@attrs.frozen
class RuleTest:
    """One ``[[tests]]`` case: a tool call and the decision the rules must reach."""

    label: str
    tool: str
    input: Mapping[str, Any]
    expect: Decision
    rule: str = ""
    cwd: str = ""
    origin: str = ""


@attrs.frozen
class RuleFile:
    """A parsed rule file at its tier. ``origin`` is its path, or ``recommended`` for
    the shipped set (whose tier is that of the file that turned it on)."""

    tier: Tier
    origin: str
    rules: tuple[Rule, ...] = ()
    use: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    on_unknown: str = ""
    tests: tuple[RuleTest, ...] = ()


def parse(text: str, *, tier: Tier, origin: str) -> RuleFile:
    """The rule file ``text`` read from ``origin``; :class:`RuleFileError` on any problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleFileError(f"{origin}: not valid TOML ({exc}); fix the syntax") from None
    return from_data(data, tier=tier, origin=origin)


def from_data(data: Mapping[str, Any], *, tier: Tier, origin: str) -> RuleFile:
    """A rule file from its decoded TOML (``data``), checked as :func:`parse` checks it."""
    _known(data, FILE_KEYS, origin, "at the top level")
    use = _names(data, "use", origin, "")
    for name in use:
        if name not in RULE_SETS:
            raise RuleFileError(
                f"{origin}: use names {name!r}, which is no rule set; write "
                f"use = [{', '.join(repr(s) for s in RULE_SETS)}]".replace("'", '"')
            )
    disable = _names(data, "disable", origin, "")
    for name in disable:
        if not NAME.fullmatch(name):
            raise RuleFileError(
                f"{origin}: disable names {name!r}, which is no rule name "
                "(rule names are lower-case letters, digits and dashes)"
            )
    on_unknown = data.get("on_unknown", "")
    if "on_unknown" in data and on_unknown not in ("ask", "deny"):
        raise RuleFileError(
            f'{origin}: on_unknown = {on_unknown!r}; write on_unknown = "ask" or "deny"'
        )
    rules = _tables(data, "rules", origin)
    tests = _tables(data, "tests", origin)
    parsed: list[Rule] = []
    seen: set[str] = set()
    for i, table in enumerate(rules):
        rule = _rule(table, i, origin)
        if rule.name in seen:
            raise RuleFileError(
                f"{origin}: rule {rule.name!r} (rules[{i}]) has the name of an earlier rule; "
                "give each rule its own name"
            )
        seen.add(rule.name)
        parsed.append(rule)
    return RuleFile(
        tier=tier,
        origin=origin,
        rules=tuple(parsed),
        use=use,
        disable=disable,
        on_unknown=str(on_unknown),
        tests=tuple(_test(t, i, origin) for i, t in enumerate(tests)),
    )


def _known(table: Mapping[str, Any], keys: Sequence[str], origin: str, where: str) -> None:
    for key in table:
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(keys)}"
            at = f" {where}" if where else ""
            raise RuleFileError(f"{origin}: unknown key {key!r}{at} ({hint})")


def _tables(data: Mapping[str, Any], key: str, origin: str) -> list[Mapping[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise RuleFileError(
            f"{origin}: {key} must be an array of tables; write each one as [[{key}]]"
        )
    return cast(list[Mapping[str, Any]], value)


def _names(table: Mapping[str, Any], key: str, origin: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        example = {"use": '["recommended"]', "disable": '["rule-name"]'}.get(key, '["..."]')
        raise RuleFileError(
            f"{origin}{where}: {key} must be a list of strings; write {key} = {example}"
        )
    return tuple(value)


def _rule(table: Mapping[str, Any], i: int, origin: str) -> Rule:
    raw_name = table.get("name")
    label = f"rule {raw_name!r} (rules[{i}])" if isinstance(raw_name, str) else f"rules[{i}]"
    where = f": {label}"
    _known(table, RULE_KEYS, f"{origin}{where}", "")
    if not isinstance(raw_name, str) or not raw_name:
        raise RuleFileError(f'{origin}{where}: has no name; add name = "what-it-stops"')
    if not NAME.fullmatch(raw_name):
        raise RuleFileError(
            f"{origin}{where}: bad name; a rule name is lower-case letters, digits and "
            f'dashes, starting with a letter or digit (name = "no-force-push")'
        )
    decision = table.get("decision")
    if decision not in DECISIONS:
        shown = "no decision" if decision is None else f"decision = {decision!r}"
        raise RuleFileError(f'{origin}{where}: {shown}; write decision = "deny", "ask" or "allow"')
    reason = table.get("reason", "")
    if not isinstance(reason, str):
        raise RuleFileError(f"{origin}{where}: reason must be a string")
    if not reason.strip() and decision != "allow":
        raise RuleFileError(
            f"{origin}{where}: a {decision} rule needs a reason the model and the user see; "
            'add reason = "why, and what to do instead"'
        )
    fields: dict[str, tuple[str, ...]] = {}
    for key in LIST_FIELDS:
        if key in table:
            fields[key] = _names(table, key, origin, where)
            if not fields[key]:
                raise RuleFileError(
                    f"{origin}{where}: {key} is empty, so the rule could never match; "
                    f"remove {key} or name at least one value"
                )
    _check_values(fields, origin, where)
    when = table.get("when", "")
    if not isinstance(when, str):
        raise RuleFileError(f"{origin}{where}: when must be a string holding a CEL expression")
    if "when" in table and not when.strip():
        raise RuleFileError(f"{origin}{where}: when is empty; remove it or write a condition")
    return Rule(
        name=raw_name,
        decision=cast(Decision, decision),
        reason=reason.strip(),
        origin=origin,
        when=when.strip(),
        **fields,
    )


def _check_values(fields: Mapping[str, tuple[str, ...]], origin: str, where: str) -> None:
    def bad(key: str, value: str, known: Sequence[str]) -> RuleFileError:
        close = difflib.get_close_matches(value, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
        return RuleFileError(f"{origin}{where}: {key} has {value!r}, which is no {key} ({hint})")

    for value in fields.get("tool", ()):
        if value not in KINDS:
            raise bad("tool", value, KINDS)
    for key in ("zone", "writes_zone"):
        for value in fields.get(key, ()):
            if value not in ZONES:
                raise bad(key, value, ZONES)
    for key in ("flags", "any_flags"):
        for value in fields.get(key, ()):
            if value.startswith("-"):
                raise RuleFileError(
                    f"{origin}{where}: {key} has {value!r}; flags are written without dashes, "
                    f"by their long name ({value.lstrip('-')!r}: -f is matched as 'force')"
                )
    for value in fields.get("program", ()):
        # "(fork-bomb)" is the program facts give a fork bomb, whatever its spelling.
        if value != "(fork-bomb)" and not _PROGRAM.fullmatch(value):
            raise RuleFileError(
                f"{origin}{where}: program has {value!r}; name a program by its base name "
                "(rm, git), without a path or spaces"
            )
    for value in fields.get("flow", ()):
        source, arrow, sink = value.partition("->")
        if (
            not arrow
            or not _flow_side(source, FLOW_SOURCES, True)
            or not _flow_side(sink, FLOW_SINKS, False)
        ):
            raise RuleFileError(
                f"{origin}{where}: flow has {value!r}; write SOURCE->SINK, SOURCE one of "
                f"{', '.join(FLOW_SOURCES)}, file:ZONE or a program, SINK one of "
                f"{', '.join(FLOW_SINKS)} or a program"
            )


def _flow_side(text: str, known: Sequence[str], source: bool) -> bool:
    if text in known:
        return True
    if source and text.startswith("file:"):
        return text[5:] in ZONES
    return bool(_PROGRAM.fullmatch(text))


def _test(table: Mapping[str, Any], i: int, origin: str) -> RuleTest:
    label = table.get("name") if isinstance(table.get("name"), str) else ""
    where = f": tests[{i}]" + (f" ({label!r})" if label else "")
    _known(table, TEST_KEYS, f"{origin}{where}", "")
    expect = table.get("expect")
    if expect not in DECISIONS:
        raise RuleFileError(f'{origin}{where}: write expect = "deny", "ask" or "allow"')
    command = table.get("command")
    if command is not None:
        if "tool" in table or "input" in table:
            raise RuleFileError(f"{origin}{where}: give either command or tool and input, not both")
        if not isinstance(command, str) or not command.strip():
            raise RuleFileError(f"{origin}{where}: command must be a non-empty string")
        tool: Any = "bash"
        tool_input: Any = {"command": command}
        shown = command
    else:
        tool = table.get("tool")
        tool_input = table.get("input")
        if not isinstance(tool, str) or not tool or not isinstance(tool_input, dict):
            raise RuleFileError(
                f'{origin}{where}: give command = "..." or tool = "file_write" with '
                'input = {file_path = "...", text = "..."}'
            )
        shown = f"{tool} {tool_input}"
    rule = table.get("rule", "")
    if not isinstance(rule, str):
        raise RuleFileError(f"{origin}{where}: rule must be a rule name (a string)")
    cwd = table.get("cwd", "")
    if not isinstance(cwd, str):
        raise RuleFileError(f"{origin}{where}: cwd must be a folder (a string)")
    return RuleTest(
        label=str(label) or f"tests[{i}] {shown}"[:120],
        tool=tool,
        input=tool_input,
        expect=cast(Decision, expect),
        rule=rule,
        cwd=cwd,
        origin=origin,
    )
