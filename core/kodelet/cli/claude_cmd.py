"""`kodelet claude`: Claude Code's install, uninstall and status (those of every agent,
:mod:`.agents_cmd`) and what is Claude Code's alone.

``hook`` is the command every agent's entries run (the bridge); ``install --transport
http`` makes Claude Code post each call to the warm kodelet instead of starting a
process; ``run`` (:mod:`.claude_run_cmd`) fires the Claude Code hooks of a folder.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import typer

from ..agents import DIALECTS
from ..places import Places, find_project
from .agents_cmd import DRY_RUN, Http, agent_app, change, scope_option
from .common import fail, state

CLAUDE = DIALECTS["claude"]


class Transport(StrEnum):
    command = "command"
    http = "http"


def _http_entry(ctx: typer.Context, scope: str, dry_run: bool) -> Http:
    """(url, authorization) of the warm kodelet over HTTP; port and secret chosen once
    and kept where only this user can read them: the project's for the local scope,
    the user's for the user scope (answered for every project)."""
    if scope == "project":
        fail(
            "--transport http writes a secret: use --scope local or --scope user "
            "(the project file is shared)",
            2,
        )
    from ..warm import http

    places = Places.resolve(find_project(state(ctx).cwd))
    record = http.load(places, scope)
    if record is None and dry_run:
        return "http://127.0.0.1:<port>" + http.PATH, "Bearer <secret>"
    record = record or http.ensure_record(places, scope)
    return record.url, record.header()


_SCOPE, _SCOPE_OPTION = scope_option(CLAUDE)

HTTP_LIMIT = (
    "the warm kodelet keeps the port for as long as this is installed, through restarts "
    "and upgrades; only if it is killed outright (SIGKILL, out of memory) is the port "
    "free until the next session start, which rotates the secret. On a machine shared "
    "with other users the command transport, which has no port, is the safer choice "
    "(docs/SECURITY.md)."
)


def install(
    ctx: typer.Context,
    scope: Any = _SCOPE_OPTION,
    dry_run: bool = DRY_RUN,
    transport: Transport = typer.Option(
        Transport.command,
        "--transport",
        help="command: the lean client per call (default); http: Claude Code posts to the"
        " warm kodelet on 127.0.0.1, no process per call (local and user scopes).",
    ),
) -> None:
    """Make Claude Code call `kodelet claude hook` for tool calls, prompts and stops."""
    http = None
    if transport is Transport.http:
        http = lambda: _http_entry(ctx, str(scope), dry_run)  # noqa: E731
    change(ctx, CLAUDE, str(scope), dry_run, install=True, http=http)
    if http is not None and not dry_run:
        from ..warm import http as warm_http

        warm_http.settle(Places.resolve(find_project(state(ctx).cwd)), str(scope))
        typer.echo(f"note: {HTTP_LIMIT}")


install.__annotations__["scope"] = _SCOPE

app = agent_app(CLAUDE, install)


@app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def hook(ctx: typer.Context) -> None:
    """The command Claude Code runs: one hook input on stdin, Claude Code's output on stdout."""
    extra = ["--no-hooks"] if state(ctx).no_hooks else []
    from ..agents.bridge import main as hook_main

    raise typer.Exit(hook_main([*ctx.args, *extra]))
