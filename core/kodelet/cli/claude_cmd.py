"""`kodelet claude` commands: put kodelet in front of Claude Code's tool calls and prompts.

``install`` writes command hooks calling ``kodelet claude hook`` into one of Claude
Code's settings files, ``uninstall`` removes exactly those, ``status`` says where
they are and which kodelet hooks they would run.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from ..claude.installed import PROJECT_COMMAND, own_hook, own_hooks
from ..config import ConfigError, load_config
from ..places import Places, find_project
from .common import fail, listing_quietly, make_runtime, print_json, printable, state
from .hook_files import (
    SettingsError,
    begin_change,
    command_problem,
    lean_command,
    read_settings,
    with_ours,
    write_settings,
    write_without_ours,
)

app = typer.Typer(
    help="Run kodelet's hooks inside Claude Code: install, uninstall, status.",
    no_args_is_help=True,
)


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
    return lean_command("claude", "hook")


def entries(
    command: str, on_failure: str = "block", http: tuple[str, str] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """kodelet's (event, entry) pairs: ``command`` per event, or with ``http`` (url,
    authorization) HTTP entries plus a SessionStart command that keeps the warm
    kodelet up (``command`` with ``ensure`` for ``hook``)."""
    from ..agents.bridge import EVENTS

    events: list[tuple[str, dict[str, Any]]] = [
        (event, own_hook(event, command, on_failure=on_failure, http=http)) for event in EVENTS
    ]
    if http is not None:
        ensure = command.rsplit(" hook", 1)[0] + " ensure"
        events.insert(0, ("SessionStart", {"type": "command", "command": ensure}))
    return events


SCOPE_HELP = (
    "user: ~/.claude/settings.json; project: .claude/settings.json;"
    " local: .claude/settings.local.json."
)


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
    opened = begin_change(ctx, path, install)
    if opened is None:
        return
    old, data = opened
    try:
        if install:
            http = _http_entry(cwd, scope, dry_run) if transport is Transport.http else None
            new = with_ours(data, entries(hook_command(scope), configured_on_failure(cwd), http))
            typer.echo(write_settings(path, old, data, new, dry_run))
            from .verify_cmd import start_folder_note

            if (note := start_folder_note("claude", scope.value, cwd)) and not dry_run:
                typer.echo(f"note: {note}")
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


def bridged_hooks(ctx: typer.Context) -> tuple[str, str | None, list[dict[str, Any]]]:
    """(``[claude] on_failure``, the config error if any, the kodelet hooks the bridge
    runs): what every agent's ``status`` shows of the project."""
    from ..agents.bridge import EVENTS
    from ..listing import hook_rows

    cwd = state(ctx).cwd
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
    return on_failure, config_error, rows


def failure_lines(on_failure: str, config_error: str | None) -> list[str]:
    """What ``status`` says happens when kodelet itself fails."""
    if on_failure == "allow":
        lines = [
            'on_failure: allow ([claude] on_failure = "allow": when kodelet fails,'
            " calls go through)"
        ]
    else:
        lines = ["on_failure: block (when kodelet fails, tool calls and prompts are blocked)"]
    if config_error:
        lines.append(f"config error (every tool call is blocked until fixed): {config_error}")
    return lines


def hook_lines(agent: str, rows: list[dict[str, Any]]) -> list[str]:
    """The kodelet hooks that run inside ``agent``, in order, as ``status`` lists them."""
    head = f"kodelet hooks that run inside {agent}:" + ("" if rows else " (none)")
    return [head, *(f"  {r['event']:18} {r['order']}. {r['name']} ({r['kind']})" for r in rows)]


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
            f"{c}: {why}: calls are blocked"
            for c in entry["commands"]
            if (why := command_problem(c))
        ]
        scopes.append({"scope": scope.value, "path": str(path), **entry})
    on_failure, config_error, rows = bridged_hooks(ctx)
    from .verify_cmd import hooks_not_running, not_held_here, not_running_lines

    here_problem = not_held_here(ctx, "claude")
    not_running = hooks_not_running(ctx)
    unheld = here_problem or any(r["blocking"] for r in not_running)
    if as_json:
        print_json(
            {
                "project": str(cwd),
                "not_held_here": here_problem,
                "not_running": not_running,
                "on_failure": on_failure,
                "config_error": config_error,
                "scopes": scopes,
                "hooks": rows,
            }
        )
        if unheld:
            raise typer.Exit(1)
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
    lines += ["", *failure_lines(on_failure, config_error)]
    lines += ["", *hook_lines("Claude Code", rows)]
    lines.append(
        "Claude Code runs the hooks of its own settings files itself (`kodelet hooks list`"
        " shows them)."
    )
    lines += not_running_lines(not_running)
    if here_problem:
        lines += ["", f"NOT HELD here: {here_problem}"]
    typer.echo("\n".join(printable(line) for line in lines))
    if unheld:
        raise typer.Exit(1)


@app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def hook(ctx: typer.Context) -> None:
    """The command Claude Code runs: one hook input on stdin, Claude Code's output on stdout."""
    extra = ["--no-hooks"] if state(ctx).no_hooks else []
    from ..agents.bridge import main as hook_main

    raise typer.Exit(hook_main([*ctx.args, *extra]))
