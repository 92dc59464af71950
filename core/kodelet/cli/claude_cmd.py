"""`kodelet claude` commands: put kodelet in front of Claude Code's tool calls and prompts.

``install`` writes command hooks calling ``kodelet claude hook`` into one of Claude
Code's settings files, ``uninstall`` removes exactly those, ``status`` says where
they are and which kodelet hooks they would run.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import shlex
import shutil
import stat
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from .. import jsonio
from ..claude.installed import PROJECT_COMMAND, is_own, own_hook, own_hooks
from ..config import ConfigError, load_config
from ..places import Places, find_project
from .common import fail, listing_quietly, make_runtime, print_json, printable, state

app = typer.Typer(
    help="Run kodelet's hooks inside Claude Code: install, uninstall, status.",
    no_args_is_help=True,
)

TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")


class Scope(StrEnum):
    user = "user"
    project = "project"
    local = "local"


def settings_path(scope: Scope, cwd: Path) -> Path:
    if scope is Scope.user:
        return Path.home() / ".claude" / "settings.json"
    name = "settings.json" if scope is Scope.project else "settings.local.json"
    return cwd / ".claude" / name


def hook_command(scope: Scope = Scope.local) -> str:
    """What the settings file of ``scope`` runs. The project file is shared with the
    team, so it names ``kodelet`` as found on each teammate's PATH; the local and user
    files are this machine's, so they run this interpreter's lean client of the warm
    kodelet directly (no site, no kodelet import: docs/HOSTS.md)."""
    if scope is Scope.project:
        return PROJECT_COMMAND
    from ..warm import client

    lean = os.path.join(os.path.dirname(os.path.realpath(client.__file__)), "hook.py")
    return f"{shlex.quote(sys.executable)} -I -S {shlex.quote(lean)} claude hook"


def command_problem(command: str) -> str | None:
    """Why Claude Code could not start ``command`` here, or None."""
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return "not a command"
    if os.sep in program:
        found = program if os.access(program, os.X_OK) else None
    else:
        found = shutil.which(program)
    return None if found else f"{program!r} cannot be found (exit 127: calls are blocked)"


class SettingsError(Exception):
    pass


def read_settings(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when absent) and its JSON; a bad file is a :class:`SettingsError`."""
    try:
        raw = jsonio.read_file(path, "Claude settings")
        text = raw.decode("utf-8")
    except FileNotFoundError:
        return None, {}
    except (jsonio.FileError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {exc}") from None
    try:
        data = jsonio.loads(text, str(path)) if text.strip() else {}
    except ValueError as exc:
        raise SettingsError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} must hold a JSON object, not {type(data).__name__}")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise SettingsError(f"{path}: 'hooks' must map each event to a list")
    return text, data


def without_ours(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` minus kodelet's entries; groups and events left empty by that go too."""
    if "hooks" not in data:
        return dict(data)
    hooks: dict[str, Any] = {}
    for event, groups in data["hooks"].items():
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(is_own(h) for h in inner):
                kept.append(group)
                continue
            rest = [h for h in inner if not is_own(h)]
            if rest:
                kept.append({**group, "hooks": rest})
        if kept or not groups:
            hooks[event] = kept
    out = dict(data)
    if hooks or not data["hooks"]:
        out["hooks"] = hooks
    else:
        del out["hooks"]
    return out


def with_ours(
    data: dict[str, Any],
    command: str,
    on_failure: str = "block",
    http: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """``data`` with kodelet's entries: ``command`` per event, or with ``http`` (url,
    authorization) HTTP entries plus a SessionStart command that keeps the warm
    kodelet up (``command`` with ``ensure`` for ``hook``)."""
    out = without_ours(data)
    hooks = dict(out.get("hooks", {}))
    from ..bridges.claude_code import EVENTS

    events: list[tuple[str, dict[str, Any]]] = [
        (event, own_hook(event, command, on_failure=on_failure, http=http)) for event in EVENTS
    ]
    if http is not None:
        ensure = command.rsplit(" hook", 1)[0] + " ensure"
        events.insert(0, ("SessionStart", {"type": "command", "command": ensure}))
    for event, hook in events:
        group: dict[str, Any] = {"hooks": [hook]}
        if event in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        hooks[event] = [*hooks.get(event, []), group]
    out["hooks"] = hooks
    return out


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_settings(
    path: Path, old: str | None, before: dict[str, Any], data: dict[str, Any], dry_run: bool
) -> str:
    """Write ``data`` atomically, the previous file kept as ``<name>.bak``; a message.
    ``old`` is the file's text (None when absent), ``before`` what it held."""
    new = render(data)
    if old is not None and before == data:
        return f"unchanged: {path}"
    if dry_run:
        diff = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=str(path) if old is not None else "/dev/null",
            tofile=str(path),
        )
        return "".join(diff).rstrip("\n")
    if old is not None:
        # Written like the settings themselves: a link planted at the backup's name is
        # replaced, never followed.
        jsonio.write_atomically(path.with_name(path.name + ".bak"), old)
    jsonio.write_atomically(path, new)
    return f"wrote {path}" + ("" if old is None else f" (previous file: {path.name}.bak)")


def write_without_ours(path: Path, old: str, before: dict[str, Any], dry_run: bool) -> str:
    """Uninstall: the settings as they were before install. A file left holding nothing
    is removed rather than left as ``{}``; install's ``.bak`` goes once the file holds
    everything it held (its own bytes put back when they are the same settings). A
    backup holding anything more stays."""
    new = without_ours(before)
    bak = path.with_name(path.name + ".bak")
    kept: str | None = None
    kept_data: dict[str, Any] = {}
    with contextlib.suppress(SettingsError):
        check_writable(bak)
        kept, kept_data = read_settings(bak)
    needless = kept is not None and without_ours(kept_data) == new
    if before == new or (new and not needless):
        return write_settings(path, old, before, new, dry_run)
    text = render(new) if new else ""
    if new and kept is not None and kept_data == new:
        text = kept
    if dry_run:
        diff = difflib.unified_diff(
            old.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=str(path),
            tofile=str(path) if new else "/dev/null",
        )
        return "".join(diff).rstrip("\n")
    if new:
        jsonio.write_atomically(path, text)
    else:
        path.unlink()
    if needless:
        bak.unlink()
    if not new:
        return f"removed {path}: it held only kodelet's entries"
    return f"wrote {path} (as it was before install; {bak.name} removed)"


SCOPE_HELP = (
    "user: ~/.claude/settings.json; project: .claude/settings.json;"
    " local: .claude/settings.local.json."
)


def check_writable(path: Path) -> None:
    """Refuse a settings file kodelet must not write: a link (its text would be copied
    into the checkout, or written through it), a file or folder another user owns."""
    for p in (path.parent, path):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise SettingsError(f"{p} is a symbolic link; kodelet writes no settings through one")
        if st.st_uid != os.geteuid():
            raise SettingsError(f"{p} is owned by uid {st.st_uid}, not by you; left unchanged")


def configured_on_failure(cwd: Path) -> str:
    try:
        return load_config(Places.resolve(cwd), dict(os.environ)).claude_on_failure
    except ConfigError as exc:
        fail(str(exc), 2)


class Transport(StrEnum):
    command = "command"
    http = "http"


def _http_entry(cwd: Path, scope: Scope, dry_run: bool) -> tuple[str, str]:
    """(url, authorization) of the project's warm kodelet over HTTP; port and secret
    chosen once and kept where only this user can read them."""
    if scope is Scope.project:
        fail(
            "--transport http writes a secret: use --scope local or --scope user "
            "(the project file is shared)",
            2,
        )
    from ..warm import http

    places = Places.resolve(find_project(cwd))
    record = http.load(places)
    if record is None and dry_run:
        return "http://127.0.0.1:<port>" + http.PATH, "Bearer <secret>"
    if record is None or record.project != str(places.cwd):
        record = http.ensure_record(places)
    return record.url, record.header()


def _change(
    ctx: typer.Context,
    scope: Scope,
    dry_run: bool,
    install: bool,
    transport: Transport = Transport.command,
) -> None:
    cwd = state(ctx).cwd
    path = settings_path(scope, cwd)
    try:
        check_writable(path)
        old, data = read_settings(path)
    except SettingsError as exc:
        fail(str(exc), 1)
    if not install and old is None:
        typer.echo(f"not installed: {path} does not exist")
        return
    try:
        if install:
            http = _http_entry(cwd, scope, dry_run) if transport is Transport.http else None
            new = with_ours(data, hook_command(scope), configured_on_failure(cwd), http)
            typer.echo(write_settings(path, old, data, new, dry_run))
            if http is not None and not dry_run:
                path.chmod(0o600)  # it holds the warm kodelet's secret
        else:
            typer.echo(write_without_ours(path, old or "", data, dry_run))
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", 1)


@app.command("install")
def install(
    ctx: typer.Context,
    scope: Scope = typer.Option(Scope.project, "--scope", help=SCOPE_HELP),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the diff; write nothing."),
    transport: Transport = typer.Option(
        Transport.command,
        "--transport",
        help="command: the lean client per call (default); http: Claude Code posts to the"
        " warm kodelet on 127.0.0.1, no process per call (local and user scopes).",
    ),
) -> None:
    """Make Claude Code call `kodelet claude hook` for tool calls, prompts and stops."""
    _change(ctx, scope, dry_run, install=True, transport=transport)


@app.command("uninstall")
def uninstall(
    ctx: typer.Context,
    scope: Scope = typer.Option(Scope.project, "--scope", help=SCOPE_HELP),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the diff; write nothing."),
) -> None:
    """Remove kodelet's entries from a settings file; every other hook and key stays."""
    _change(ctx, scope, dry_run, install=False)


def _installed(data: dict[str, Any]) -> dict[str, Any]:
    """What kodelet's entries in one settings file say: events, commands, onFailure."""
    ours = list(own_hooks(data))
    http = [h for _, h in ours if h.get("type") == "http"]
    return {
        "events": [event for event, _ in ours],
        "transport": ("http" if http else "command") if ours else None,
        "urls": sorted({h["url"] for h in http}),
        "commands": sorted({h["command"] for _, h in ours if "command" in h}),
        "blocks_on_failure": sorted({e for e, h in ours if h.get("onFailure") == "block"}),
    }


@app.command("status")
def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Where kodelet is installed in Claude Code, what happens when it fails, and which
    kodelet hooks run inside Claude Code."""
    cwd = state(ctx).cwd
    scopes: list[dict[str, Any]] = []
    for scope in Scope:
        path = settings_path(scope, cwd)
        try:
            _, data = read_settings(path)
            entry: dict[str, Any] = {**_installed(data), "error": None}
        except SettingsError as exc:
            entry = {
                "events": [],
                "transport": None,
                "urls": [],
                "commands": [],
                "blocks_on_failure": [],
                "error": str(exc),
            }
        entry["command_problems"] = [
            f"{c}: {why}" for c in entry["commands"] if (why := command_problem(c))
        ]
        scopes.append({"scope": scope.value, "path": str(path), **entry})
    from ..bridges.claude_code import EVENTS
    from ..listing import hook_rows

    config_error = None
    try:
        on_failure = load_config(Places.resolve(cwd), dict(os.environ)).claude_on_failure
    except ConfigError as exc:
        on_failure, config_error = "block", str(exc)
    wanted = {event.value for event, _ in EVENTS.values()}
    rows: list[dict[str, Any]] = []
    if config_error is None:
        with listing_quietly():
            # Claude Code runs its settings files' hooks itself; kodelet runs these.
            rt = make_runtime(ctx, claude="plugins")
            try:
                rows = [
                    r for r in hook_rows(rt) if r["event"] in wanted and r["status"] == "active"
                ]
            finally:
                rt.close()
    if as_json:
        print_json(
            {
                "project": str(cwd),
                "on_failure": on_failure,
                "config_error": config_error,
                "scopes": scopes,
                "hooks": rows,
            }
        )
        return
    lines = [f"project: {cwd}"]
    for s in scopes:
        where = ", ".join(s["events"]) if s["events"] else "not installed"
        lines.append(f"{s['scope']:8} {s['path']}: {s['error'] or where}")
        if s["events"]:
            guarded = ", ".join(s["blocks_on_failure"]) or "none"
            lines.append(f"{'':8}   transport: {s['transport']}")
            if s["urls"]:
                lines.append(f"{'':8}   url: {'; '.join(s['urls'])}")
            lines.append(f"{'':8}   command: {'; '.join(s['commands'])}")
            lines.append(f"{'':8}   blocks when kodelet cannot run: {guarded}")
        lines += [f"{'':8}   problem: {p}" for p in s["command_problems"]]
    lines.append("")
    if on_failure == "allow":
        lines.append(
            'on_failure: allow ([claude] on_failure = "allow": when kodelet fails,'
            " calls go through)"
        )
    else:
        lines.append("on_failure: block (when kodelet fails, tool calls and prompts are blocked)")
    if config_error:
        lines.append(f"config error (every tool call is blocked until fixed): {config_error}")
    lines.append("")
    lines.append("kodelet hooks that run inside Claude Code:" + ("" if rows else " (none)"))
    lines += [f"  {r['event']:18} {r['order']}. {r['name']} ({r['kind']})" for r in rows]
    lines.append(
        "Claude Code runs the hooks of its own settings files itself (`kodelet hooks list`"
        " shows them)."
    )
    typer.echo("\n".join(printable(line) for line in lines))


@app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def hook(ctx: typer.Context) -> None:
    """The command Claude Code runs: one hook input on stdin, Claude Code's output on stdout."""
    extra = ["--no-hooks"] if state(ctx).no_hooks else []
    from ..bridges.claude_code import main as hook_main

    raise typer.Exit(hook_main([*ctx.args, *extra]))
