"""What `kodelet replay` does: run recorded agent sessions through your hooks."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..config import ConfigError
from ..recipes.callbacks import MODEL_ENV
from ..replay import corpus, corpus_report, report
from ..replay.demo import demo_runtime
from ..replay.format import DEMO_NAME, RecordedSession, SessionFormatError, dumps, load_demo
from ..replay.player import Player, Replay, Step
from ..replay.pool import (
    Outcome,
    RunOptions,
    RuntimeSpec,
    registry_for,
    run_dask,
    run_inline,
    run_processes,
)
from ..replay.sources import Format, Source, expand, load
from ..runtime import Runtime
from .common import fail, listing_quietly, print_json, state, warn_skipped_hooks

PROGRESS_AFTER = 300
EXECUTORS = ("processes", "dask")
WHOLE_WIDTH = 100_000  # wide enough that rich cuts nothing
DEMO_NOTE = (
    "These were the demo's own hooks: demo-guard, a native plugin, and demo-redact, an "
    "executable. `kodelet replay --my-hooks` replays the demo through yours."
)


def _check_model(model: str | None) -> str | None:
    """The model for recipe callbacks (``--model``, else ``$KODELET_MODEL``), refused before
    any replay starts if it cannot be used: found only at the first compaction, it would
    surface as a warning halfway down the timeline of a replay that otherwise "worked"."""
    name = model or os.environ.get(MODEL_ENV) or None
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
    return name


def _build_warning(spec: RuntimeSpec) -> Runtime:
    """The user's runtime, saying once on stderr which of their hooks cannot run."""
    with listing_quietly():
        runtime = _build(spec)
    warn_skipped_hooks(runtime)
    return runtime


def _build(spec: RuntimeSpec) -> Runtime:
    try:
        return spec.build()
    except ConfigError as exc:
        fail(str(exc), 2)


@contextlib.contextmanager
def _progress(label: str, total: int, *, force: bool = False) -> Iterator[Callable[[], None]]:
    """A bar on stderr when it is a terminal; yields the function that advances it."""
    console = Console(stderr=True)
    if not (force or console.is_terminal):
        yield lambda: None
        return
    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task(label, total=total)
    with progress:
        yield lambda: progress.advance(task)


def _warn(messages: tuple[str, ...] | list[str]) -> None:
    for message in messages:
        typer.echo(f"kodelet: warning: {message}", err=True)


# -- one session ------------------------------------------------------------------


def _one(
    spec: RuntimeSpec,
    name: str,
    recorded: RecordedSession,
    *,
    options: RunOptions,
    as_json: bool,
    html: Path | None,
    demo: bool = False,
) -> None:
    _warn(recorded.warnings)
    with contextlib.ExitStack() as stack:
        runtime = _demo_runtime(stack, spec) if demo else _build_warning(spec)
        stack.callback(runtime.close)
        player = Player(
            runtime,
            recorded,
            name=name,
            registry=registry_for(runtime, options.model),
            cwd=options.payload_cwd,
        )
        result = _play(player, recorded.event_count())
    if html is not None:
        d = corpus.digest(result, timeline=True, only_acted=options.only_acted)
        _write_html(html, corpus.Corpus.of([d]), options.only_acted, None)
    if as_json:
        print_json(report.to_json(result, only_acted=options.only_acted))
    else:
        _print_report(result, demo=demo, only_acted=options.only_acted)


def _demo_runtime(stack: contextlib.ExitStack, spec: RuntimeSpec) -> Runtime:
    """The demo's own hooks and the built-ins, none of the user's (docs/REPLAY.md)."""
    try:
        return stack.enter_context(demo_runtime(no_hooks=spec.no_hooks))
    except ConfigError as exc:
        fail(str(exc), 2)


def _print_whole(render: Callable[[Console], None]) -> None:
    """A terminal gets the tables cut to its width; a pipe or a file gets every name
    and number whole (rich would cut them to 80 columns), without trailing padding."""
    console = Console()
    if console.is_terminal:
        render(console)
        return
    console = Console(width=WHOLE_WIDTH)
    with console.capture() as captured:
        render(console)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def _print_report(result: Replay, *, demo: bool, only_acted: bool) -> None:
    def render(console: Console) -> None:
        whole = not console.is_terminal  # grep gets every detail whole
        report.render(result, console, only_acted=only_acted, whole=whole)
        if demo:
            console.print(DEMO_NOTE)

    _print_whole(render)


def _play(player: Player, total: int) -> Replay:
    if total <= PROGRESS_AFTER:
        return player.play()
    with _progress("replaying", total, force=True) as advance:

        def on_step(_: Step) -> None:
            advance()

        player.on_step = on_step
        return player.play()


# -- a corpus ---------------------------------------------------------------------


def _run(
    spec: RuntimeSpec,
    options: RunOptions,
    sources: list[Source],
    *,
    jobs: int,
    executor: str,
    scheduler: str | None,
    label: str,
) -> Outcome:
    with _progress(label, len(sources)) as advance:

        def on_done(_: corpus.Digest) -> None:
            advance()

        if executor == "dask":
            try:
                return run_dask(spec, options, sources, scheduler, on_done)
            except OSError as exc:
                fail(f"--scheduler {scheduler}: cannot reach the Dask scheduler: {exc}", 1)
        if jobs <= 1 or len(sources) == 1:
            try:
                return run_inline(spec, options, sources, on_done)
            except ConfigError as exc:
                fail(str(exc), 2)
        return run_processes(spec, options, sources, jobs, on_done)


def _write_html(path: Path, data_corpus: corpus.Corpus, only_acted: bool, extra: Any) -> None:
    from ..replay import html

    data = data_corpus.to_json(only_acted=only_acted)
    if extra is not None:
        data["comparison"] = extra
    try:
        path.write_text(html.render(data, data_corpus), encoding="utf-8")
    except OSError as exc:
        fail(f"--html {path}: cannot write: {exc.strerror or exc}", 2)


def _corpus(
    spec: RuntimeSpec,
    baseline: RuntimeSpec | None,
    options: RunOptions,
    sources: list[Source],
    *,
    jobs: int,
    executor: str,
    scheduler: str | None,
    as_json: bool,
    html: Path | None,
    top: int,
) -> None:
    kw: dict[str, Any] = {"jobs": jobs, "executor": executor, "scheduler": scheduler}
    runs = [("replaying", spec)]
    if baseline is not None:
        runs.insert(0, ("baseline", baseline))
    outcomes: list[Outcome] = []
    for label, which in runs:
        outcome = _run(which, options, sources, label=label, **kw)
        outcomes.append(outcome)
        for error in outcome.errors:
            typer.echo(f"kodelet: error: {error}", err=True)
        if outcome.interrupted:
            break
    result = outcomes[-1]
    interrupted = any(o.interrupted for o in outcomes)
    for d in result.digests:
        _warn(d.warnings)
    merged = corpus.Corpus.of(result.digests)
    data = merged.to_json(only_acted=options.only_acted, top=top)
    comparison = None
    if baseline is not None and not interrupted:
        changes = corpus.compare(outcomes[0].digests, result.digests)
        comparison = corpus.comparison_json(changes)
        data["comparison"] = comparison
    if html is not None:
        _write_html(html, merged, options.only_acted, comparison)
    if as_json:
        print_json(data)
    else:
        data["only_acted"] = options.only_acted
        _print_whole(lambda console: corpus_report.render(data, console))
    if interrupted:
        typer.echo(
            f"kodelet: interrupted: {len(result.digests)} of {len(sources)} sessions replayed",
            err=True,
        )
        raise typer.Exit(130)
    if sources and all(d.error is not None for d in result.digests):
        raise typer.Exit(2)
    if any(o.errors for o in outcomes):
        raise typer.Exit(1)


def replay(
    ctx: typer.Context,
    *,
    paths: list[str] | None,
    as_json: bool,
    model: str | None,
    from_claude: Path | None,
    my_hooks: bool,
    save: Path | None,
    payload_cwd: str | None,
    jobs: int | None,
    only_acted: bool,
    baseline: Path | None,
    compare_without: list[str] | None,
    html: Path | None,
    top: int,
    executor: str,
    scheduler: str | None,
) -> None:
    """The body of ``kodelet replay`` (:mod:`.replay_cmd` holds its options)."""
    st = state(ctx)
    given = list(paths or [])
    if from_claude is not None and given:
        fail("give either SESSION or --from-claude FILE, not both", 2)
    if executor not in EXECUTORS:
        fail(f"--executor {executor}: expected one of {', '.join(EXECUTORS)}", 2)
    if executor == "dask" and not scheduler:
        fail("--executor dask needs --scheduler ADDRESS", 2)
    if scheduler and executor != "dask":
        fail("--scheduler is for --executor dask", 2)
    if payload_cwd is not None:
        if not Path(payload_cwd).is_dir():
            fail(f"--payload-cwd {payload_cwd}: not a directory", 2)
        payload_cwd = str(Path(payload_cwd).absolute())
    if baseline is not None and not baseline.is_file():
        fail(f"--baseline {baseline}: no such file", 2)
    fmt: Format = "claude" if from_claude is not None else "auto"
    options = RunOptions(
        fmt=fmt,
        payload_cwd=payload_cwd,
        model=_check_model(model),
        calls=baseline is not None or bool(compare_without),
        timeline=html is not None,
        only_acted=only_acted,
    )
    spec = RuntimeSpec(cwd=str(st.cwd), no_hooks=st.no_hooks)
    base = None
    if baseline is not None or compare_without:
        extra = (str(baseline.absolute()),) if baseline is not None else ()
        base = RuntimeSpec(
            cwd=str(st.cwd),
            no_hooks=st.no_hooks,
            extra_config=extra,
            without=tuple(compare_without or ()),
        )
    try:
        if from_claude is not None:
            sources, many = [Source(name=str(from_claude), path=str(from_claude))], False
        elif given:
            sources, many = expand(given)
        else:
            sources, many = [], False
        if not many and base is None and executor == "processes":
            if sources:
                name, recorded = sources[0].name, load(sources[0], fmt)
            else:
                name, recorded = DEMO_NAME, load_demo()
            if save is not None:
                _save(save, recorded)
            demo = not sources and not my_hooks
            _one(spec, name, recorded, options=options, as_json=as_json, html=html, demo=demo)
            return
    except SessionFormatError as exc:
        fail(str(exc), 2)
    if save is not None:
        fail("--save writes one session; give one file", 2)
    if executor == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            fail("--executor dask needs Dask: pip install 'kodelet[dask]'", 2)
    if not sources:
        sources = [Source(name=DEMO_NAME, text=dumps(load_demo()))]
    _corpus(
        spec,
        base,
        options,
        sources,
        jobs=jobs or os.cpu_count() or 1,
        executor=executor,
        scheduler=scheduler,
        as_json=as_json,
        html=html,
        top=top,
    )


def _save(path: Path, recorded: RecordedSession) -> None:
    try:
        path.write_text(dumps(recorded), encoding="utf-8")
    except OSError as exc:
        fail(f"--save {path}: cannot write: {exc.strerror or exc}", 2)
    print(f"kodelet: saved {path}", file=sys.stderr)
