"""`kodelet claude run`: fire the Claude Code hooks of this directory, Claude Code's way.

Only the Claude runner takes part (no kodelet hooks, no mapping), so a hook can be
tried from the shell with the input Claude Code would give it and the answer printed
as the hook JSON Claude Code would act on. Every one of the 16 events works.

What the answer cannot say goes to stderr, one line each: a hook that failed, output
keys Claude Code ignores, what a SessionStart hook wrote to ``CLAUDE_ENV_FILE``, and
async hooks, which (as in Claude Code) are not part of the answer: it is printed
first, then their late results are waited for and reported.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

import typer

from ..claude.events import HookEvent, parse_hook_event
from ..config import ConfigError, load_config
from ..places import Places
from .common import fail, print_json, printable, state
from .hooks_cmd import _read_payload

if TYPE_CHECKING:
    from ..claude.results import HookResult

EVENT_NAMES = ", ".join(e.value for e in HookEvent)


def _say(results: Iterable[HookResult]) -> None:
    """One stderr line for each thing a result says that the merged answer does not."""
    from ..claude.results import Outcome

    for r in results:
        name = f"{r.hook} (async)" if r.late else r.hook
        if r.outcome in (Outcome.ERROR, Outcome.TIMEOUT, Outcome.CANCELLED):
            typer.echo(f"kodelet: hook {name} failed: {printable(r.error or r.outcome)}", err=True)
        elif r.late and (r.output or r.blocking):
            late = json.dumps(r.output, ensure_ascii=False) if r.output else r.message or ""
            typer.echo(
                f"kodelet: hook {name} answered late ({r.outcome.value}): {printable(late)}",
                err=True,
            )
        if r.ignored:
            keys = ", ".join(r.ignored)
            typer.echo(f"kodelet: hook {name}: Claude Code ignores {printable(keys)}", err=True)
        for line in (r.session_env or "").splitlines():
            typer.echo(f"kodelet: hook {name}: CLAUDE_ENV_FILE: {printable(line)}", err=True)
        if r.is_async:
            typer.echo(
                f"kodelet: hook {name} runs on in the background (async); its late result "
                "is not part of the answer and is waited for after it",
                err=True,
            )


def run(
    ctx: typer.Context,
    event: str = typer.Argument(..., help=f"The Claude Code event ({EVENT_NAMES})."),
    payload: str = typer.Option(
        None, "--payload", "-p", help="Claude hook input JSON file, or - for stdin (default: {})."
    ),
) -> None:
    """Run the Claude Code hooks found for this directory (settings files and plugin
    repositories) on one event and print the merged hook output as JSON.

    Hooks that cannot run or that fail are named on stderr; async hooks are waited
    for after the answer is printed. Exit status is 0 whatever they decided.
    The off switches hold as for every other command: ``--no-hooks``,
    ``KODELET_NO_HOOKS=1`` and ``[claude] hooks = false`` run no hook, and a hook
    disabled in config.toml is not run."""
    # Imported here: the runner is not needed by any other command.
    from ..adapters.claude_hooks import matcher_of
    from ..adapters.claude_settings import load_hooks
    from ..claude import HookMatcher, Runner, merge
    from ..claude.types import HookDataError

    try:
        hook_event = parse_hook_event(event)
    except ValueError as exc:
        fail(str(exc), 2)
    data = _read_payload(payload)
    cwd = str(state(ctx).cwd)
    data.setdefault("cwd", cwd)
    places = Places.resolve(cwd)
    try:
        config = load_config(places, os.environ, no_hooks=state(ctx).no_hooks or None)
    except ConfigError as exc:
        fail(str(exc), 2)
    off = config.claude_off()
    specs = [] if off else load_hooks(places, os.environ)
    if off:
        typer.echo(f"kodelet: no Claude Code hook run: {off}", err=True)
    table: dict[str, list[HookMatcher]] = defaultdict(list)
    for spec in specs:
        if spec.event != hook_event:
            continue
        if spec.command is None:
            typer.echo(f"kodelet: skipped {spec.name}: {printable(spec.problem or '')}", err=True)
            continue
        if not config.hook_enabled(spec.name):
            typer.echo(f"kodelet: skipped {spec.name}: disabled in config.toml", err=True)
            continue
        table[hook_event].append(matcher_of(spec, config.hook(spec.name).timeout))
    with Runner(table, cwd=cwd) as runner:
        try:
            results = runner.fire(hook_event, data)
        except HookDataError as exc:
            fail(f"invalid input: {exc}", 2)
        _say(results)
        print_json(merge(hook_event, results))
        sys.stdout.flush()
        _say(runner.drain_sync())


def register(app: typer.Typer) -> None:
    """Add ``run`` to ``app`` (the ``kodelet claude`` group)."""
    app.command("run")(run)
