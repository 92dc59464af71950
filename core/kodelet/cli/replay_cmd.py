"""`kodelet replay`: run a recorded agent session through your hooks."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..config import ConfigError
from ..recipes.callbacks import MODEL_ENV, CallbackRegistry
from ..replay import report
from ..replay.demo import demo_runtime
from ..replay.format import DEMO_NAME, RecordedSession, SessionFormatError, load, load_demo
from ..replay.player import Player, Replay, Step
from ..runtime import Runtime
from .common import fail, make_runtime, print_json, state

PROGRESS_AFTER = 300
WHOLE_WIDTH = 100_000  # wide enough that rich cuts nothing
DEMO_NOTE = (
    "These were the demo's own hooks: demo-guard, a native plugin, and demo-redact, an "
    "executable. `kodelet replay --my-hooks` replays the demo through yours."
)


def _registry(runtime: Runtime, model: str | None) -> CallbackRegistry:
    """The callback registry the compact recipe runs through (``--model`` picks its runner).

    A model that cannot be used is refused before the replay starts: found
    only at the first compaction, it would surface as a warning halfway down
    the timeline of a replay that otherwise "worked".
    """
    name = model or runtime.env.get(MODEL_ENV) or None
    if name is not None:
        flag = "--model" if model else MODEL_ENV
        try:
            import llm
        except ImportError:
            fail(f"{flag} {name}: needs the 'llm' package: pip install 'kodelet[llm]'", 2)
        try:
            llm.get_model(name)
        except llm.UnknownModelError:
            fail(f"{flag} {name}: unknown model (`llm models` lists the installed ones)", 2)
    return CallbackRegistry.default(runtime.places, model=name, env=runtime.env)


def _load(session: Path | None, from_claude: Path | None) -> tuple[str, RecordedSession]:
    if session is not None and from_claude is not None:
        fail("give either SESSION or --from-claude FILE, not both", 2)
    try:
        if from_claude is not None:
            from ..replay.claude import import_file

            return str(from_claude), import_file(from_claude)
        if session is not None:
            return str(session), load(session)
        return DEMO_NAME, load_demo()
    except SessionFormatError as exc:
        fail(str(exc), 2)


def _play(player: Player, total: int) -> Replay:
    if total <= PROGRESS_AFTER:
        return player.play()
    progress = Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("replay", total=total)

    def advance(_: Step) -> None:
        progress.advance(task)

    player.on_step = advance
    with progress:
        return player.play()


def replay(
    ctx: typer.Context,
    session: Path = typer.Argument(
        None,
        metavar="SESSION",
        help="A recorded session (JSON, see docs/REPLAY.md). Default: the shipped demo.",
        show_default=False,
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON document."),
    model: str = typer.Option(
        None,
        "--model",
        metavar="MODEL",
        help="Model for recipe callbacks such as compact (default: "
        "$KODELET_MODEL, else the offline summarizer).",
        show_default=False,
    ),
    from_claude: Path = typer.Option(
        None,
        "--from-claude",
        metavar="FILE",
        help="Import a Claude Code transcript (.jsonl) and replay it.",
        show_default=False,
    ),
    my_hooks: bool = typer.Option(
        False,
        "--my-hooks",
        help="Replay the demo through your own hooks instead of the demo's "
        "(a SESSION or --from-claude always uses yours).",
    ),
    only_acted: bool = typer.Option(
        False, "--only-acted", help="Show only the hook calls that did something."
    ),
) -> None:
    """Replay a recorded agent session through your hooks and show what they decided.

    With no SESSION, the shipped demo runs through the demo's own hooks, so every
    kind of action shows; --my-hooks runs it through yours."""
    name, recorded = _load(session, from_claude)
    demo = session is None and from_claude is None and not my_hooks
    with contextlib.ExitStack() as stack:
        runtime = _runtime(ctx, stack, demo=demo)
        player = Player(runtime, recorded, name=name, registry=_registry(runtime, model))
        result = _play(player, recorded.event_count())
    if as_json:
        print_json(report.to_json(result, only_acted=only_acted))
    else:
        _print_report(result, demo=demo, only_acted=only_acted)


def _runtime(ctx: typer.Context, stack: contextlib.ExitStack, *, demo: bool) -> Runtime:
    if not demo:
        runtime = make_runtime(ctx, warn_skipped=True)
        stack.callback(runtime.close)
        return runtime
    try:
        return stack.enter_context(demo_runtime(no_hooks=state(ctx).no_hooks))
    except ConfigError as exc:
        fail(str(exc), 2)


def _print_report(result: Replay, *, demo: bool, only_acted: bool) -> None:
    """A terminal gets each row cut to its width; a pipe or a file gets every detail
    whole, for grep, without the table's padding."""
    console = Console()
    whole = not console.is_terminal
    if whole:
        console = Console(width=WHOLE_WIDTH)
    with console.capture() if whole else contextlib.nullcontext() as captured:
        report.render(result, console, only_acted=only_acted, whole=whole)
        if demo:
            console.print(DEMO_NOTE)
    if captured is not None:
        sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
