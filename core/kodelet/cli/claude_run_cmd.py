"""`kodelet claude run`: fire the Claude Code hooks of this directory, Claude Code's way.

Only the Claude runner takes part (no kodelet hooks, no mapping), so a hook can be
tried from the shell with the input Claude Code would give it and the answer printed
as the hook JSON Claude Code would act on. Every one of the 15 events works.
"""

from __future__ import annotations

import os
from collections import defaultdict

import typer

from ..claude.events import HookEvent, parse_hook_event
from ..config import ConfigError, load_config
from ..places import Places
from .common import fail, print_json, printable, state
from .hooks_cmd import _read_payload

EVENT_NAMES = ", ".join(e.value for e in HookEvent)


def run(
    ctx: typer.Context,
    event: str = typer.Argument(..., help=f"The Claude Code event ({EVENT_NAMES})."),
    payload: str = typer.Option(
        None, "--payload", "-p", help="Claude hook input JSON file, or - for stdin (default: {})."
    ),
) -> None:
    """Run the Claude Code hooks found for this directory (settings files and plugin
    repositories) on one event and print the merged hook output as JSON.

    Hooks that cannot run are named on stderr. Exit status is 0 whatever they decided.
    The off switches hold as for every other command: ``--no-hooks``,
    ``KODELET_NO_HOOKS=1`` and ``[claude] hooks = false`` run no hook, and a hook
    disabled in config.toml is not run."""
    # Imported here: the runner is not needed by any other command.
    from ..adapters.claude_code import matcher_of
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
        results += runner.drain_sync()
    print_json(merge(hook_event, results))


def register(app: typer.Typer) -> None:
    """Add ``run`` to ``app`` (the ``kodelet claude`` group)."""
    app.command("run")(run)
