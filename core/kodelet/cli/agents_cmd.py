"""``kodelet agents`` and ``kodelet AGENT install|uninstall|status`` for every agent.

Each agent in :data:`kodelet.agents.DIALECTS`, Claude Code included, gets the same
three commands from :func:`agent_app`, driven by its dialect (its scopes and files, the
events it answers, what its entries say): the contract of :mod:`.hook_files` (project
and user scope, ``--dry-run`` diff, idempotent, atomic, only kodelet's entries touched,
never through a link) and one ``status``. The entries run ``kodelet claude hook``, the
bridge, with ``--agent NAME`` for every agent but the bridge's default, Claude Code.
What is Claude Code's alone (``hook``, ``run``, ``install --transport http``) is in
:mod:`.claude_cmd`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from ..agents import DEFAULT, DIALECTS, Dialect
from ..agents.installs import lean_command
from ..agents.versions import version_lines, version_state
from ..claude.installed import (
    OLD_PROJECT_COMMAND,
    PROJECT_COMMAND,
    guarded,
    own_hook,
    own_hooks,
    unguarded,
)
from ..config import ConfigError, load_config
from ..places import Places, find_project
from ..warm import native_client
from . import hook_trust
from .audit_cmd import audit_lines, audit_state
from .common import fail, print_json, printable, state
from .hook_files import (
    SettingsError,
    begin_change,
    command_problem,
    read_settings,
    with_ours,
    without_ours,
    write_settings,
    write_without_ours,
)
from .plugin_files import GeneratesPlugin, change_plugin, plugin_state

Http = tuple[str, str]
"""(url, authorization) of the warm kodelet over HTTP (Claude Code's ``--transport http``)."""


def hook_command(dialect: Dialect, scope: str) -> str:
    """What the agent's file of ``scope`` runs. The project file is shared with the team,
    so it names ``kodelet-hook`` as found on each teammate's PATH (``kodelet`` where this
    installation has no ``kodelet-hook``); the others are this machine's, so they run
    its native client of the warm kodelet by path, or where it has none, this
    interpreter's lean client (no site, no kodelet import: docs/HOSTS.md). Where the
    agent says where its project is, they name their scope, to stand down for an entry
    of an earlier scope that does the work (:mod:`kodelet.agents.installs`)."""
    agent = () if dialect is DEFAULT else ("--agent", dialect.name)
    if scope == "project":
        usable = native_client.installed().kind in ("native", "python")
        command = " ".join((PROJECT_COMMAND if usable else OLD_PROJECT_COMMAND, *agent))
    else:
        named = ("--scope", scope) if dialect.knows_project else ()
        command = lean_command("claude", "hook", *agent, *named)
    return guarded(command) if dialect is DEFAULT else command


def config_path(dialect: Dialect, scope: str, cwd: Path) -> Path:
    return dialect.config_path(scope, cwd, os.environ)


def entries(
    dialect: Dialect, command: str, on_failure: str = "block", http: Http | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """kodelet's (event, entry) pairs for the agent: ``command`` per event, or with
    ``http`` HTTP entries plus a SessionStart command that keeps the warm kodelet up
    (``command`` with ``ensure`` for ``hook``). ``onFailure`` only where the agent reads
    it."""
    failure = on_failure if dialect.on_failure_key else "allow"
    ours = [(e, own_hook(e, command, on_failure=failure, http=http)) for e in dialect.hook_events()]
    if http is not None:
        ensure = command.replace(" claude hook", " claude ensure", 1)
        ours.insert(0, ("SessionStart", {"type": "command", "command": ensure}))
    return ours


def configured_on_failure(cwd: Path) -> str:
    try:
        return load_config(Places.resolve(cwd), dict(os.environ)).claude_on_failure
    except ConfigError as exc:
        fail(str(exc), 2)


def _installed(dialect: Dialect, data: dict[str, Any]) -> dict[str, Any]:
    """What kodelet's entries in one hook file say: events, transport, commands, onFailure."""
    ours = list(own_hooks(data))
    http = [h for _, h in ours if h.get("type") == "http"]
    return {
        "events": [event for event, _ in ours],
        "transport": ("http" if http else "command") if ours else None,
        "urls": sorted({h["url"] for h in http}),
        "commands": sorted({unguarded(h["command"]) for _, h in ours if "command" in h}),
        "blocks_on_failure": sorted({e for e, h in ours if h.get("onFailure") == "block"}),
    }


def scope_state(dialect: Dialect, scope: str, cwd: Path) -> dict[str, Any]:
    """Where kodelet's entries are in one of the agent's files, and what they run."""
    path = config_path(dialect, scope, cwd)
    entry: dict[str, Any] = {"scope": scope, "path": str(path), "error": None}
    if isinstance(dialect, GeneratesPlugin):
        entry = plugin_state(dialect, path, entry)
        entry.update(transport="command" if entry["commands"] else None, urls=[])
        entry.update(blocks_on_failure=[], untrusted=[])
        return entry
    try:
        _, data = read_settings(path, dialect.what, dialect.settings_keys)
    except SettingsError as exc:
        data, entry["error"] = {}, str(exc)
    entry.update(_installed(dialect, data))
    blocked = "" if dialect.fails_open else ": calls are blocked"
    entry["command_problems"] = [
        f"{c}: {why}{blocked}" for c in entry["commands"] if (why := command_problem(c))
    ]
    lacking = [e for e in dialect.hook_events() if e not in entry["events"]]
    if entry["events"] and lacking:
        entry["command_problems"].append(
            f"kodelet's entries here lack {', '.join(lacking)} (installed by an older"
            f" kodelet, or taken out by hand): {dialect.title} sends kodelet nothing"
            f" there; `kodelet {dialect.name} install --scope {scope}` adds it"
        )
    untrusted = sorted(dialect.untrusted(path, data, os.environ) or ())
    entry["untrusted"] = untrusted
    if untrusted:
        entry["command_problems"].append(
            f"{len(untrusted)} of kodelet's entries are not trusted by {dialect.title}, which"
            f" will not run them: `kodelet {dialect.name} install --scope {scope}`"
            " records the trust"
        )
    return entry


def change(
    ctx: typer.Context,
    dialect: Dialect,
    scope: str,
    dry_run: bool,
    install: bool,
    http: Callable[[], Http] | None = None,
) -> None:
    """``kodelet NAME install|uninstall``: kodelet's entries into or out of the agent's
    file of ``scope``; ``http`` gives the warm kodelet's address for HTTP entries."""
    cwd = state(ctx).cwd
    path = config_path(dialect, scope, cwd)
    if isinstance(dialect, GeneratesPlugin):
        home = Path(os.environ.get("HOME") or Path.home())
        stop = cwd if scope == "project" else home / ".config"
        try:
            command = hook_command(dialect, scope)
            typer.echo(change_plugin(dialect, path, command, stop, dry_run, install))
        except (SettingsError, OSError) as exc:
            fail(str(exc), 1)
        for note in dialect.notes if install and not dry_run else ():
            typer.echo(f"note: {note}")
        return
    keys = dialect.settings_keys
    opened = begin_change(ctx, path, install, dialect.what, keys)
    if opened is None:
        return
    old, data = opened
    try:
        if install:
            address = http() if http is not None else None
            on_failure = configured_on_failure(cwd) if dialect.on_failure_key else "allow"
            ours = entries(dialect, hook_command(dialect, scope), on_failure, address)
            new = with_ours(data, ours)
            typer.echo(write_settings(path, old, data, new, dry_run))
            if address is not None and not dry_run:
                path.chmod(0o600)  # it holds the warm kodelet's secret
        else:
            new = without_ours(data)
            typer.echo(write_without_ours(path, old or "", data, dry_run, keys))
            if "http" in dialect.transports and scope in ("local", "user") and not dry_run:
                from ..warm import http as warm_http

                if warm_http.forget(Places.resolve(find_project(cwd)), scope):
                    typer.echo("the HTTP transport's port and secret are released")
        if trusted := hook_trust.change(dialect, path, data, new, dry_run):
            typer.echo(trusted)
    except SettingsError as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", 1)
    if install and not dry_run:
        from ..agents.git_ignore import keep_out_of_git
        from .verify_cmd import start_folder_note

        for note in dialect.notes:
            typer.echo(f"note: {note}")
        if held := start_folder_note(dialect.name, scope, cwd):
            typer.echo(f"note: {held}")
        if scope == "local" and (ignored := keep_out_of_git(path)):
            typer.echo(f"note: {ignored}")


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


RULES = "builtin:rules"  # kodelet.rules.guard.NAME, without importing the rules


def hook_lines(agent: str, rows: list[dict[str, Any]]) -> list[str]:
    """The kodelet hooks that run inside ``agent``, in order, as ``status`` lists them,
    saying which fail open (a failure of theirs lets the call through)."""
    head = f"kodelet hooks that run inside {agent}:" + ("" if rows else " (none)")
    lines = [head]
    for r in rows:
        opens = " fails open: a failure lets the call through" if r["on_failure"] == "allow" else ""
        # builtin:rules says which tiers are in force (managed ones included)
        held = f": {r['reason']}" if r["name"] == RULES and r.get("reason") else ""
        lines.append(f"  {r['event']:18} {r['order']}. {r['name']} ({r['kind']}){held}{opens}")
    return lines


def failing_open(dialect: Dialect) -> str:
    return (
        f"{dialect.title} lets a call through when the hook command itself cannot run"
        " (not found, crashed, timed out); kodelet cannot change that"
    )


def who_works(dialect: Dialect, scopes: list[dict[str, Any]], cwd: Path) -> None:
    """Fill in each scope's ``works`` (its entries run kodelet's hooks; None: nothing
    installed) and ``work`` (what ``status`` says of it when kodelet is installed at more
    than one scope): one entry does the work, the others stand down, as the bridge
    decides for each call (:func:`kodelet.agents.installs.stands_down`)."""
    from ..agents.installs import ORDER, declared_scope, worker

    installed = [s for s in scopes if s["events"]]
    for s in scopes:
        s["works"], s["work"] = (True if s["events"] else None), None
    if len(installed) < 2:
        return
    # The agent as started here, plainly (no flag that leaves a scope out).
    env = dict(os.environ)
    if dialect.project_env:
        env[dialect.project_env] = str(cwd)
    call = {"hook_event_name": dialect.agent_event("PreToolUse"), "cwd": str(cwd)}
    plain = [[dialect.process_names[0]]]
    found = worker(dialect, call, env, lambda: plain)
    for s in installed:
        named = {declared_scope(c) for c in s["commands"]}
        own = named.pop() if len(named) == 1 else None
        if found == s["scope"]:
            s["work"] = "yes (one run per event)"
        elif found is not None and own == s["scope"] and ORDER.index(found) < ORDER.index(own):
            s["works"] = False
            s["work"] = f"no, the {found} entry does (this one stands down)"
        elif found is not None and ORDER.index(found) > ORDER.index(s["scope"]):
            when = f"; it is sure when {dialect.sure_when}" if dialect.sure_when else ""
            s["work"] = (
                f"no, kodelet cannot be sure it runs here, so the {found} entry does (where"
                f" {dialect.title} runs this one after all, each hook runs twice{when})"
            )
        elif found is not None:
            again = f"`kodelet {dialect.name} install --scope {s['scope']}`"
            s["work"] = (
                f"yes, and so does the {found} entry: every hook runs twice (this entry"
                f" names no scope; {again} again writes one that stands down)"
            )
        else:
            first = installed[0]["scope"]
            when = f" (it is sure when {dialect.sure_when})" if dialect.sure_when else ""
            s["work"] = (
                f"yes, and so does every other entry: each hook runs twice per event, since"
                f" kodelet cannot be sure {dialect.title} runs the {first} entry here{when}"
            )


def scope_lines(dialect: Dialect, s: dict[str, Any]) -> list[str]:
    """One scope of ``status``: where, which events, and what kodelet's entries say."""
    where = ", ".join(s["events"]) if s["events"] else "not installed"
    lines = [f"{s['scope']:8} {s['path']}: {s['error'] or where}"]
    if s["events"]:
        if len(dialect.transports) > 1:
            lines.append(f"{'':8}   transport: {s['transport']}")
        if s["urls"]:
            lines.append(f"{'':8}   url: {'; '.join(s['urls'])}")
        lines.append(f"{'':8}   command: {'; '.join(s['commands'])}")
        if dialect.on_failure_key:
            guarded = ", ".join(s["blocks_on_failure"]) or "none"
            lines.append(f"{'':8}   blocks when kodelet cannot run: {guarded}")
        if s.get("work"):
            lines.append(f"{'':8}   does the work: {s['work']}")
    return lines + [f"{'':8}   problem: {p}" for p in s["command_problems"]]


def status(ctx: typer.Context, dialect: Dialect, as_json: bool) -> None:
    """``kodelet NAME status``."""
    cwd = state(ctx).cwd
    scopes = [scope_state(dialect, s, cwd) for s in dialect.config]
    who_works(dialect, scopes, cwd)
    from .verify_cmd import (
        bridged_hooks,
        cannot_apply,
        cannot_apply_lines,
        hooks_not_running,
        not_held_here,
        not_running_lines,
    )

    on_failure, config_error, rows = bridged_hooks(ctx)
    fails_open = failing_open(dialect) if dialect.fails_open else None

    here_problem = not_held_here(ctx, dialect.name)
    not_running = hooks_not_running(ctx)
    unheld = here_problem or any(r["blocking"] for r in not_running)
    limits = cannot_apply(dialect.name, rows)
    version = version_state(dialect, os.environ)
    audit = _audit(cwd)
    if as_json:
        print_json(
            {
                "agent": dialect.name,
                "project": str(cwd),
                "binary": shutil.which(dialect.binary),
                "hook_client": native_client.installed()._asdict(),
                **version,
                "scopes": scopes,
                "on_failure": on_failure,
                "config_error": config_error,
                "fails_open": fails_open,
                "notes": list(dialect.notes),
                "hooks": rows,
                "not_held_here": here_problem,
                "not_running": not_running,
                "cannot_apply": limits,
                "audit": audit,
            }
        )
        if unheld:
            raise typer.Exit(1)
        return
    lines = [
        f"project: {cwd}",
        f"{dialect.binary}: {shutil.which(dialect.binary) or 'not on PATH'}",
        *version_lines(dialect, version),
        f"hook client: {native_client.installed().describe()}",
    ]
    for s in scopes:
        lines += scope_lines(dialect, s)
    lines += ["", *failure_lines(on_failure, config_error)]
    if fails_open:
        lines.append(f"fails open: {fails_open}")
    lines += [f"note: {n}" for n in dialect.notes]
    lines += ["", *hook_lines(dialect.title, rows), *dialect.status_notes]
    lines += not_running_lines(not_running)
    lines += cannot_apply_lines(dialect.title, limits)
    if audit is not None and (said := audit_lines(audit)):
        lines += ["", *said]
    if here_problem:
        lines += ["", f"NOT HELD here: {here_problem}"]
    typer.echo("\n".join(printable(line) for line in lines))
    if unheld:
        raise typer.Exit(1)


def _audit(cwd: Path) -> dict[str, Any] | None:
    """The decision log's state (None when the configuration cannot be read: the
    status says that already)."""
    places = Places.resolve(cwd, None, os.environ)
    try:
        settings = load_config(places, os.environ).audit
    except ConfigError:
        return None
    return audit_state(settings, places.global_root)


def scope_option(dialect: Dialect) -> tuple[type[StrEnum], Any]:
    """(the agent's scopes as an enum, ``--scope`` taking them, ``project`` by default)."""
    scope = StrEnum(f"{dialect.name.title()}Scope", [(s, s) for s in dialect.config])  # type: ignore[misc]
    help = "; ".join(f"{s}: {w}" for s, w in dialect.config.items()) + "."
    return scope, typer.Option(scope("project"), "--scope", help=help)


DRY_RUN = typer.Option(False, "--dry-run", help="Print the diff; write nothing.")


def agent_app(dialect: Dialect, install: Callable[..., None] | None = None) -> typer.Typer:
    """``kodelet NAME install|uninstall|status`` for one agent; ``install`` replaces the
    plain install command (Claude Code's takes ``--transport``)."""
    title = dialect.title
    app = typer.Typer(
        help=f"Run kodelet's hooks inside {title}: install, uninstall, status.",
        no_args_is_help=True,
    )
    scope_type, scope = scope_option(dialect)

    def plain_install(ctx: typer.Context, scope: Any = scope, dry_run: bool = DRY_RUN) -> None:
        change(ctx, dialect, str(scope), dry_run, install=True)

    def uninstall(ctx: typer.Context, scope: Any = scope, dry_run: bool = DRY_RUN) -> None:
        change(ctx, dialect, str(scope), dry_run, install=False)

    for command in (plain_install, uninstall):
        command.__annotations__["scope"] = scope_type  # typer reads the choices from it
    plain = f"Make {title} call kodelet for tool calls, prompts and stops."
    if install is None:
        app.command("install", help=plain)(plain_install)
    else:
        app.command("install")(install)
    app.command(
        "uninstall", help=f"Remove kodelet's entries from {title}'s hooks; the rest stays."
    )(uninstall)

    @app.command(
        "status",
        help=f"Where kodelet is installed in {title}, what happens when it fails, and which"
        f" kodelet hooks run inside {title}.",
    )
    def status_command(
        ctx: typer.Context,
        as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
    ) -> None:
        status(ctx, dialect, as_json)

    return app


APPS: dict[str, typer.Typer] = {
    name: agent_app(d) for name, d in DIALECTS.items() if d is not DEFAULT
}
"""Agent name -> its ``kodelet NAME`` sub-app; Claude Code's is :data:`.claude_cmd.app`,
the same commands plus what is Claude Code's alone."""


def agents(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """The coding agents on PATH and where kodelet is connected in each."""
    cwd = state(ctx).cwd
    env = dict(os.environ)
    with ThreadPoolExecutor(max_workers=len(DIALECTS)) as pool:  # each waits on its binary
        versions = list(pool.map(lambda d: version_state(d, env), DIALECTS.values()))
    rows: list[dict[str, Any]] = [
        {
            "agent": d.name,
            "title": d.title,
            "binary": shutil.which(d.binary),
            **version,
            "scopes": [scope_state(d, s, cwd) for s in d.config],
        }
        for d, version in zip(DIALECTS.values(), versions, strict=True)
    ]
    if as_json:
        print_json({"project": str(cwd), "agents": rows})
        return
    lines = [f"project: {cwd}"]
    for d, row in zip(DIALECTS.values(), rows, strict=True):
        found = row["binary"] or "not on PATH"
        lines.append(f"{row['agent']:8} {row['title']}: {found}")
        lines += [f"{'':8}   {line}" for line in version_lines(d, row)]
        for s in row["scopes"]:
            where = "connected" if s["events"] else "not connected"
            lines.append(f"{'':8}   {s['scope']:8} {s['path']}: {s['error'] or where}")
    typer.echo("\n".join(printable(line) for line in lines))
