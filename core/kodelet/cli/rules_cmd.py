"""``kodelet rules``: turn the recommended rules on and off, list, explain and test rules.

A thin shell over :mod:`kodelet.rule_files` (where the files are) and
:mod:`kodelet.rules` (what they say). docs/RULES.md is the reference.
"""

from __future__ import annotations

import json
import os
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from .. import jsonio, rule_files
from ..places import Places
from .common import fail, print_json, printable, render_table, state

if TYPE_CHECKING:
    from ..rules.engine import Engine, Verdict
    from ..rules.facts import Command, Facts, PathFact
    from ..rules.ruleset import RuleFile

app = typer.Typer(
    help="Rules: a guard written as data (deny, ask or allow tool calls by what they do). "
    "Start with `kodelet rules enable recommended`; see docs/RULES.md.",
    no_args_is_help=True,
)

TIERS = ("managed", "user", "project")
BAD_FILE = 2
MISMATCH = 1


class Scope(StrEnum):
    project = "project"
    user = "user"


SCOPE = typer.Option(
    Scope.project,
    "--scope",
    help="project: this project's .kodelet/rules.toml; user: your own rules.toml, for "
    "every project.",
)
JSON = typer.Option(False, "--json", help="Print JSON for scripts.")


def _places(ctx: typer.Context) -> Places:
    return Places.resolve(state(ctx).cwd, None, os.environ)


def _home() -> str:
    return os.environ.get("HOME") or os.path.expanduser("~")


def _bad(message: str) -> NoReturn:
    fail(message, BAD_FILE)


# -- enable / disable ----------------------------------------------------------------


def _edit_use(ctx: typer.Context, name: str, scope: Scope, on: bool) -> None:
    import tomlkit
    import tomlkit.exceptions

    from ..rules.ruleset import RULE_SETS

    if name not in RULE_SETS:
        fail(f"no rule set named {name!r}; the rule sets are: {', '.join(RULE_SETS)}", 2)
    places = _places(ctx)
    path = rule_files.path_for(scope.value, places, os.environ)
    found = rule_files.read(scope.value, path)
    if found is not None and found.problem:
        _bad(found.problem)
    before = None if found is None else found.text
    text = before or ""
    try:
        tomllib.loads(text)
        doc = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.ParseError) as exc:
        _bad(f"{path}: not valid TOML ({exc}); fix it first")
    use = doc.get("use")
    if use is not None and not isinstance(use, list):
        _bad(f'{path}: use must be a list of strings (use = ["recommended"]); fix it first')
    names = [str(v) for v in (use or [])]
    where = "this project" if scope is Scope.project else "every project (your user rules)"
    if (name in names) == on:
        state_word = "on" if on else "off"
        typer.echo(f"{name} rules were already {state_word} for {where} ({path}); nothing changed")
        _other_scope(places, name, scope, on)
        return
    if on:
        if use is None:
            array = tomlkit.array()
            array.append(name)
            doc["use"] = array
        else:
            use.append(name)
    else:
        assert use is not None  # the name was in it
        while name in use:
            use.remove(name)
    out = tomlkit.dumps(doc)
    try:
        again = tomllib.loads(out)
    except tomllib.TOMLDecodeError:  # pragma: no cover - tomlkit wrote what it read
        _bad(f"{path}: the edit would not be valid TOML; edit the file by hand")
    if (name in again.get("use", [])) != on:  # pragma: no cover
        _bad(f"{path}: the edit did not take; edit the file by hand")
    try:
        jsonio.write_atomically(path, out, mode=0o644 if before is None else None, expect=before)
    except jsonio.ChangedError:
        fail(f"{path} changed while it was being edited; run the command again", 1)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", 1)
    verb = "on" if on else "off"
    typer.echo(f"{name} rules are now {verb} for {where}: {path}")
    _other_scope(places, name, scope, on)


def _other_scope(places: Places, name: str, scope: Scope, on: bool) -> None:
    """Say so when the other scope keeps the set on, so `disable` is not misread."""
    if on:
        return
    other = Scope.user if scope is Scope.project else Scope.project
    found = rule_files.read(other.value, rule_files.path_for(other.value, places, os.environ))
    if found is None or found.problem:
        return
    try:
        use = tomllib.loads(found.text).get("use", [])
    except tomllib.TOMLDecodeError:
        return
    if isinstance(use, list) and name in use:
        typer.echo(
            f"note: the {other.value} rules still turn {name} on ({found.path}); "
            f"`kodelet rules disable {name} --scope {other.value}` turns that off"
        )


@app.command("enable")
def enable(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="RULESET", help="The rule set: recommended."),
    scope: Scope = SCOPE,
) -> None:
    """Turn a shipped rule set on.

    Adds it to `use` in rules.toml (created when missing; comments are kept)."""
    _edit_use(ctx, name, scope, True)


@app.command("disable")
def disable(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="RULESET", help="The rule set: recommended."),
    scope: Scope = SCOPE,
) -> None:
    """Turn a shipped rule set off.

    Removes it from `use` in rules.toml (comments are kept)."""
    _edit_use(ctx, name, scope, False)


# -- the active rules ----------------------------------------------------------------


def _load(ctx: typer.Context, paths: list[Path] | None = None) -> tuple[list[RuleFile], Engine]:
    """The active rule files (or ``paths``, read as project files), parsed and compiled;
    exit 2 with the one-line error on a refused or bad file."""
    from ..rules.engine import Engine
    from ..rules.ruleset import RuleFileError, parse

    if paths:
        sources = []
        for p in paths:
            try:
                raw = jsonio.read_file(p, f"rule file {p}")
                sources.append(("project", str(p), raw.decode("utf-8")))
            except (OSError, ValueError, jsonio.FileError) as exc:
                _bad(f"cannot read rule file {p}: {getattr(exc, 'strerror', None) or exc}")
    else:
        sources = []
        for found in rule_files.find(_places(ctx), os.environ):
            if found.problem:
                _bad(found.problem)
            sources.append((found.tier, found.path, found.text))
    try:
        files = [parse(text, tier=tier, origin=origin) for tier, origin, text in sources]  # type: ignore[arg-type]
        return files, Engine(files)
    except RuleFileError as exc:
        _bad(str(exc))


@app.command("list")
def list_rules(ctx: typer.Context, as_json: bool = JSON) -> None:
    """Show every rule in force here, with its source.

    Strongest tier first: managed, user, recommended@user, project, recommended@project;
    managed rules are marked, and rules a stronger tier's `disable` switched off."""
    files, engine = _load(ctx)
    rows = []
    for layer in engine.layers:
        for rule in layer.file.rules:
            off = engine.disabled.get(f"{layer.label}:{rule.name}")
            rows.append(
                {
                    "source": layer.label,
                    "managed": layer.tier == "managed",
                    "file": layer.file.origin,
                    "status": f"disabled by {off}" if off else "active",
                    **rule.to_dict(),
                }
            )
    on_unknown = {"decision": engine.on_unknown, "source": engine.unknown_source}
    if as_json:
        ignored = [{"by": by, "rule": name, "held_by": held} for by, name, held in engine.ignored]
        print_json(
            {
                "rules": rows,
                "on_unknown": on_unknown,
                "files": [f.origin for f in files],
                "ignored_disables": ignored,
            }
        )
        return
    if not files:
        looked = ", ".join(str(rule_files.path_for(t, _places(ctx), os.environ)) for t in TIERS)
        typer.echo(
            f"no rule files here (none of: {looked}); "
            "`kodelet rules enable recommended` turns the recommended rules on"
        )
        return
    cells = [
        [
            r["source"],
            r["name"],
            r["decision"],
            r["status"] + (" (managed: no user or project file lifts it)" if r["managed"] else ""),
        ]
        for r in rows
    ]
    typer.echo(render_table(["SOURCE", "NAME", "DECISION", "STATUS"], cells))
    typer.echo("")
    for f in files:
        typer.echo(f"{f.tier:8} {f.origin}")
    for by, name, held in engine.ignored:
        typer.echo(
            f"note: {by} disables {name!r}, which {held} holds: only rules of weaker tiers "
            "can be disabled, so it stays in force"
        )
    typer.echo(
        f"unknown commands ($VAR as the program, unparseable): {engine.on_unknown} "
        f"({'default' if engine.unknown_source == 'builtin' else engine.unknown_source})"
    )


# -- explain ---------------------------------------------------------------------------


def _call(command: str | None, payload: Path | None) -> tuple[str, dict[str, Any], str]:
    """(tool_name, tool_input, cwd from the payload or "") of what ``explain`` judges."""
    if (command is None) == (payload is None):
        fail("give a COMMAND or --payload FILE (one of them)", 2)
    if command is not None:
        return "bash", {"command": command}, ""
    assert payload is not None
    try:
        data = jsonio.loads(jsonio.read_file(payload, f"payload {payload}"), f"payload {payload}")
    except jsonio.JSONError as exc:
        fail(f"payload {payload} is not valid JSON: {exc.detail}" if exc.syntax else str(exc), 2)
    except (jsonio.FileError, ValueError, OSError) as exc:
        fail(f"cannot read payload {payload}: {getattr(exc, 'strerror', None) or exc}", 2)
    if not isinstance(data, dict) or not isinstance(data.get("tool_name"), str):
        fail(
            f"payload {payload} must be a JSON object with tool_name and tool_input "
            "(a kodelet before_tool_call payload)",
            2,
        )
    tool_input = data.get("tool_input", {})
    if not isinstance(tool_input, dict):
        fail(f"payload {payload}: tool_input must be a JSON object", 2)
    cwd = data.get("cwd")
    return data["tool_name"], tool_input, cwd if isinstance(cwd, str) else ""


def _judge(engine: Engine, project: Path, tool: str, tool_input: Any, cwd: str) -> Verdict:
    where = cwd if os.path.isabs(cwd) else os.path.join(project, cwd)
    return engine.decide(
        tool,
        tool_input,
        cwd=os.path.normpath(where),
        project=str(project),
        home=_home(),
        kodelet_home=str(_places_home()),
    )


def _places_home() -> Path:
    return Places.resolve(None, None, os.environ).global_root


@app.command("explain")
def explain(
    ctx: typer.Context,
    command: str = typer.Argument(None, metavar="[COMMAND]", help="A shell command, quoted."),
    payload: Path = typer.Option(
        None,
        "--payload",
        metavar="FILE",
        help='A before_tool_call payload JSON, or {"tool_name": ..., "tool_input": ...}.',
    ),
    cwd: str = typer.Option(
        None,
        "--cwd",
        metavar="DIR",
        help="The folder the call runs in (default: the payload's cwd, else the project).",
    ),
    as_json: bool = JSON,
) -> None:
    """Show how the rules judge one call.

    Prints the parse, the facts, every rule that matches and which one decides: a false
    positive is one command away from understood."""
    tool, tool_input, given_cwd = _call(command, payload)
    files, engine = _load(ctx)
    project = state(ctx).cwd
    verdict = _judge(engine, project, tool, tool_input, cwd or given_cwd)
    if as_json:
        print_json(
            {
                "tool": tool,
                "input": tool_input,
                "facts": verdict.facts.to_dict(),
                "matches": [m.to_dict() for m in verdict.matches],
                "decision": verdict.decision,
                "rule": verdict.rule,
                "source": verdict.source,
                "origin": verdict.origin,
                "reason": verdict.reason,
            }
        )
        return
    lines = _explain_lines(verdict, tool, tool_input)
    if not files:
        lines.append(
            "(no rule files here, so no rule is in force; "
            "`kodelet rules enable recommended` turns the recommended rules on)"
        )
    typer.echo("\n".join(printable(line) for line in lines))


def _path_text(p: PathFact) -> str:
    shown = p.raw if p.raw == p.path else f"{p.raw} -> {p.path}"
    return f"{shown} ({p.zone}{', glob' if p.glob else ''})"


def _command_lines(i: int, c: Command) -> list[str]:
    program = c.program or "(decided at run time)"
    head = f"  {i}. {program}" + (f" {c.subcommand}" if c.subcommand else "")
    lines = [head, f"     text: {c.text}"]
    if c.flags:
        lines.append(f"     flags: {', '.join(sorted(c.flags))}")
    if c.args:
        lines.append(f"     args: {' '.join(a.replace(chr(0), '<run-time>') for a in c.args)}")
    for label, paths in (("paths", c.paths), ("writes", c.writes), ("reads", c.reads)):
        if paths:
            lines.append(f"     {label}: {'; '.join(_path_text(p) for p in paths)}")
    if c.via:
        lines.append(f"     via: {' > '.join(c.via)}")
    if c.stdin_from:
        lines.append(f"     stdin from: {', '.join(c.stdin_from)}")
    return lines


def _explain_lines(verdict: Verdict, tool: str, tool_input: Any) -> list[str]:
    from ..rules.engine import UNKNOWN

    f: Facts = verdict.facts
    shown = tool_input.get("command") if tool == "bash" else json.dumps(tool_input)
    lines = [f"call: {tool} {shown}", f"cwd: {f.cwd}   project: {f.project}", f"kind: {f.kind}"]
    if f.kind == "shell":
        lines.append("parse:" if f.commands else "parse: (no command)")
        for i, c in enumerate(f.commands, start=1):
            lines += _command_lines(i, c)
        if f.parse_error:
            lines.append(f"  cannot be parsed: {f.parse_error}")
    elif f.files:
        lines.append(f"file: {'; '.join(_path_text(p) for p in f.files)}")
    if f.flows:
        lines.append("flows: " + ", ".join(f"{fl.source} -> {fl.sink}" for fl in f.flows))
    if f.dynamic:
        lines.append("dynamic: yes (a program is decided at run time)")
    lines.append("rules that match:" if verdict.matches else "rules that match: none")
    for m in verdict.matches:
        lifted = f" (lifted by {m.suppressed_by})" if m.suppressed_by else ""
        where = m.layer.file.origin
        origin = f" [{where}]" if where.startswith("/") and m.name != UNKNOWN else ""
        name = m.name if m.name == UNKNOWN else f"{m.layer.label}:{m.name}"
        lines.append(f"  {m.decision:5} {name}{lifted}{origin}")
    if verdict.decision == "none":
        lines.append("decided: nothing (no rule decides; the agent's own permissions apply)")
    else:
        lines.append(
            f"decided: {verdict.decision} by {verdict.rule} ({verdict.source})"
            + (f": {verdict.reason}" if verdict.reason else "")
        )
    return lines


# -- test -------------------------------------------------------------------------------


@app.command("test")
def test(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(
        None, metavar="[FILE...]", help="Rule files to test (default: the active ones)."
    ),
    as_json: bool = JSON,
) -> None:
    """Run the rule files' [[tests]] cases.

    The cases of the rule files in force here (or of FILE..., read alone). Exit 1 when a
    case gets another decision than it expects, 2 when a file is bad: for a team's CI."""
    parsed, engine = _load(ctx, files or None)
    project = state(ctx).cwd
    results = []
    for f in parsed:
        for case in f.tests:
            verdict = _judge(engine, project, case.tool, case.input, case.cwd)
            got = verdict.decision if verdict.decision != "none" else "allow"
            ok = got == case.expect and (not case.rule or verdict.rule == case.rule)
            results.append(
                {
                    "file": f.origin,
                    "case": case.label,
                    "ok": ok,
                    "expected": case.expect + (f" by {case.rule}" if case.rule else ""),
                    "got": got + (f" by {verdict.rule} ({verdict.source})" if verdict.rule else ""),
                }
            )
    failed = [r for r in results if not r["ok"]]
    if as_json:
        print_json({"cases": results, "passed": len(results) - len(failed), "failed": len(failed)})
    else:
        for r in results:
            mark = "ok  " if r["ok"] else "FAIL"
            tail = "" if r["ok"] else f": expected {r['expected']}, got {r['got']}"
            typer.echo(printable(f"{mark} {r['file']}: {r['case']}{tail}"))
        if not results:
            typer.echo(
                "no [[tests]] cases in " + (", ".join(f.origin for f in parsed) or "any rule file")
            )
        else:
            typer.echo(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    if failed:
        raise typer.Exit(MISMATCH)
