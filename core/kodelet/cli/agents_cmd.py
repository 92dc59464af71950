"""``kodelet agents`` and ``kodelet AGENT install|uninstall|status`` for Codex, Qwen Code, ...

Each agent in :data:`kodelet.agents.DIALECTS` gets the contract ``kodelet claude
install`` has (:mod:`.hook_files`): project and user scope, ``--dry-run`` diff,
idempotent, atomic, only kodelet's entries touched, never through a link. The entries
run ``kodelet claude hook --agent NAME``, the Claude bridge reading the agent's dialect.
"""

from __future__ import annotations

import os
import shutil
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from ..agents import DIALECTS, Dialect
from ..claude.installed import PROJECT_COMMAND, own_hooks
from . import hook_trust
from .claude_cmd import bridged_hooks, failure_lines, hook_lines
from .common import fail, print_json, printable, state
from .hook_files import (
    SettingsError,
    begin_change,
    command_problem,
    lean_command,
    read_settings,
    with_ours,
    without_ours,
    write_settings,
    write_without_ours,
)
from .plugin_files import GeneratesPlugin, change_plugin, plugin_state


class Scope(StrEnum):
    project = "project"
    user = "user"


def hook_command(dialect: Dialect, scope: Scope) -> str:
    """As for Claude Code: ``kodelet`` on each teammate's PATH in a shared project file,
    this interpreter's lean client by absolute path in the user's own file."""
    if scope is Scope.project:
        return f"{PROJECT_COMMAND} --agent {dialect.name}"
    return lean_command("claude", "hook", "--agent", dialect.name)


def config_path(dialect: Dialect, scope: Scope, cwd: Path) -> Path:
    return dialect.config_path(scope.value, cwd, os.environ)


def scope_state(dialect: Dialect, scope: Scope, cwd: Path) -> dict[str, Any]:
    """Where kodelet's entries are in one of the agent's files, and what they run."""
    path = config_path(dialect, scope, cwd)
    entry: dict[str, Any] = {"scope": scope.value, "path": str(path), "error": None}
    if isinstance(dialect, GeneratesPlugin):
        return plugin_state(dialect, path, entry)
    try:
        _, data = read_settings(path, f"{dialect.title} hooks", dialect.settings_keys)
    except SettingsError as exc:
        data, entry["error"] = {}, str(exc)
    ours = list(own_hooks(data))
    entry["events"] = [event for event, _ in ours]
    entry["commands"] = sorted({h["command"] for _, h in ours if "command" in h})
    entry["command_problems"] = [
        f"{c}: {why}" for c in entry["commands"] if (why := command_problem(c))
    ]
    untrusted = hook_trust.untrusted(dialect, path, data)
    entry["untrusted"] = untrusted or []
    if untrusted:
        entry["command_problems"].append(
            f"{len(untrusted)} of kodelet's entries are not trusted by {dialect.title}, which"
            f" will not run them: `kodelet {dialect.name} install --scope {scope.value}`"
            " records the trust"
        )
    return entry


def _change(
    ctx: typer.Context, dialect: Dialect, scope: Scope, dry_run: bool, install: bool
) -> None:
    path = config_path(dialect, scope, state(ctx).cwd)
    if isinstance(dialect, GeneratesPlugin):
        home = Path(os.environ.get("HOME") or Path.home())
        stop = state(ctx).cwd if scope is Scope.project else home / ".config"
        try:
            command = hook_command(dialect, scope)
            typer.echo(change_plugin(dialect, path, command, stop, dry_run, install))
        except (SettingsError, OSError) as exc:
            fail(str(exc), 1)
        for note in dialect.notes if install and not dry_run else ():
            typer.echo(f"note: {note}")
        return
    keys = dialect.settings_keys
    opened = begin_change(ctx, path, install, f"{dialect.title} hooks", keys)
    if opened is None:
        return
    old, data = opened
    try:
        if install:
            command = hook_command(dialect, scope)
            ours = [(e, {"type": "command", "command": command}) for e in dialect.hook_events()]
            new = with_ours(data, ours)
            typer.echo(write_settings(path, old, data, new, dry_run))
        else:
            new = without_ours(data)
            typer.echo(write_without_ours(path, old or "", data, dry_run, keys))
        if trusted := hook_trust.change(dialect, path, data, new, dry_run):
            typer.echo(trusted)
    except SettingsError as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", 1)
    if install and not dry_run:
        from .verify_cmd import start_folder_note

        for note in dialect.notes:
            typer.echo(f"note: {note}")
        if held := start_folder_note(dialect.name, scope.value, state(ctx).cwd):
            typer.echo(f"note: {held}")


def failing_open(dialect: Dialect) -> str:
    return (
        f"{dialect.title} lets a call through when the hook command itself cannot run"
        " (not found, crashed, timed out); kodelet cannot change that"
    )


def agent_app(dialect: Dialect) -> typer.Typer:
    """``kodelet NAME install|uninstall|status`` for one agent."""
    title = dialect.title
    scope_help = "; ".join(f"{s}: {w}" for s, w in dialect.config.items()) + "."
    app = typer.Typer(
        help=f"Run kodelet's hooks inside {title}: install, uninstall, status.",
        no_args_is_help=True,
    )

    scope_option = typer.Option(Scope.project, "--scope", help=scope_help)
    dry_run_option = typer.Option(False, "--dry-run", help="Print the diff; write nothing.")

    @app.command("install", help=f"Make {title} call kodelet for tool calls, prompts and stops.")
    def install(
        ctx: typer.Context, scope: Scope = scope_option, dry_run: bool = dry_run_option
    ) -> None:
        _change(ctx, dialect, scope, dry_run, install=True)

    @app.command(
        "uninstall", help=f"Remove kodelet's entries from {title}'s hooks; the rest stays."
    )
    def uninstall(
        ctx: typer.Context, scope: Scope = scope_option, dry_run: bool = dry_run_option
    ) -> None:
        _change(ctx, dialect, scope, dry_run, install=False)

    @app.command(
        "status",
        help=f"Where kodelet is installed in {title}, what happens when it fails, and which"
        f" kodelet hooks run inside {title}.",
    )
    def status(
        ctx: typer.Context,
        as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
    ) -> None:
        cwd = state(ctx).cwd
        scopes = [scope_state(dialect, s, cwd) for s in Scope]
        on_failure, config_error, rows = bridged_hooks(ctx)
        fails_open = failing_open(dialect) if dialect.fails_open else None
        from .verify_cmd import (
            cannot_apply,
            cannot_apply_lines,
            hooks_not_running,
            not_held_here,
            not_running_lines,
        )

        here_problem = not_held_here(ctx, dialect.name)
        not_running = hooks_not_running(ctx)
        unheld = here_problem or any(r["blocking"] for r in not_running)
        limits = cannot_apply(dialect.name, rows)
        if as_json:
            print_json(
                {
                    "agent": dialect.name,
                    "project": str(cwd),
                    "binary": shutil.which(dialect.binary),
                    "scopes": scopes,
                    "on_failure": on_failure,
                    "config_error": config_error,
                    "fails_open": fails_open,
                    "notes": list(dialect.notes),
                    "hooks": rows,
                    "not_held_here": here_problem,
                    "not_running": not_running,
                    "cannot_apply": limits,
                }
            )
            if unheld:
                raise typer.Exit(1)
            return
        lines = [
            f"project: {cwd}",
            f"{dialect.binary}: {shutil.which(dialect.binary) or 'not on PATH'}",
        ]
        for s in scopes:
            where = ", ".join(s["events"]) if s["events"] else "not installed"
            lines.append(f"{s['scope']:8} {s['path']}: {s['error'] or where}")
            if s["events"]:
                lines.append(f"{'':8}   command: {'; '.join(s['commands'])}")
            lines += [f"{'':8}   problem: {p}" for p in s["command_problems"]]
        lines += ["", *failure_lines(on_failure, config_error)]
        if fails_open:
            lines.append(f"fails open: {fails_open}")
        lines += [f"note: {n}" for n in dialect.notes]
        lines += ["", *hook_lines(title, rows)]
        lines += not_running_lines(not_running)
        lines += cannot_apply_lines(title, limits)
        if here_problem:
            lines += ["", f"NOT HELD here: {here_problem}"]
        typer.echo("\n".join(printable(line) for line in lines))
        if unheld:
            raise typer.Exit(1)

    return app


APPS: dict[str, typer.Typer] = {
    name: agent_app(d) for name, d in DIALECTS.items() if name != "claude"
}
"""Agent name -> its ``kodelet NAME`` sub-app."""


def claude_state(cwd: Path) -> list[dict[str, Any]]:
    """Claude Code's own scopes, as ``kodelet agents`` lists them."""
    from .claude_cmd import Scope as ClaudeScope
    from .claude_cmd import settings_path

    out = []
    for scope in ClaudeScope:
        path = settings_path(scope, cwd)
        entry: dict[str, Any] = {"scope": scope.value, "path": str(path), "error": None}
        try:
            _, data = read_settings(path, "Claude settings")
        except SettingsError as exc:
            data, entry["error"] = {}, str(exc)
        entry["events"] = [event for event, _ in own_hooks(data)]
        out.append(entry)
    return out


def agents(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """The coding agents on PATH and where kodelet is connected in each."""
    cwd = state(ctx).cwd
    rows: list[dict[str, Any]] = [
        {
            "agent": "claude",
            "title": "Claude Code",
            "binary": shutil.which("claude"),
            "scopes": claude_state(cwd),
        }
    ]
    for d in DIALECTS.values():
        if d.name == "claude":
            continue
        rows.append(
            {
                "agent": d.name,
                "title": d.title,
                "binary": shutil.which(d.binary),
                "scopes": [scope_state(d, s, cwd) for s in Scope],
            }
        )
    if as_json:
        print_json({"project": str(cwd), "agents": rows})
        return
    lines = [f"project: {cwd}"]
    for row in rows:
        found = row["binary"] or "not on PATH"
        lines.append(f"{row['agent']:8} {row['title']}: {found}")
        for s in row["scopes"]:
            where = "connected" if s["events"] else "not connected"
            lines.append(f"{'':8}   {s['scope']:8} {s['path']}: {s['error'] or where}")
    typer.echo("\n".join(printable(line) for line in lines))
