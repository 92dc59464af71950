"""Running many replays: in this process, in worker processes, or on a Dask cluster.

Every worker builds its own runtime once (:meth:`RuntimeSpec.build`, the one
place replay builds one) and replays session after session through it, so
persistent hooks start once per worker, not once per session. What comes back
is a :class:`~kodelet.replay.corpus.Digest` per session.

Stopping: Ctrl-C sets a stop flag that every worker checks between two
events; each closes its runtime (and with it the hooks it started) and exits,
and the sessions that finished are what the report shows. Workers that do not
exit in time are terminated, then killed: nothing is left running.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from ..assembly import load_runtime
from ..config import load_config
from ..places import Places
from ..recipes.callbacks import CallbackRegistry
from ..runtime import Runtime
from . import corpus
from .format import SessionFormatError
from .player import Player, Step
from .sources import Format, Source, load

STOP_GRACE = 10.0
POLL = 0.2


REPLAY = "replay"
"""The agent a replay's decisions name in the decision log (``kodelet audit --agent``)."""


@attrs.frozen
class RuntimeSpec:
    """What a worker needs to build the same runtime as every other worker: plain data,
    so it pickles to another process or machine."""

    cwd: str
    no_hooks: bool = False
    extra_config: tuple[str, ...] = ()
    without: tuple[str, ...] = ()

    def build(self) -> Runtime:
        """The runtime for one worker; :class:`~kodelet.config.ConfigError` if the config
        files are bad. ``extra_config`` files are read after the project's (a baseline
        config); ``without`` names hooks and plugins switched off (a comparison)."""
        no_hooks = self.no_hooks or None
        if not self.extra_config and not self.without:
            return load_runtime(cwd=self.cwd, no_hooks=no_hooks, agent=REPLAY)
        places = Places.resolve(self.cwd)
        extra = [Path(p) for p in self.extra_config]
        config = load_config(places, no_hooks=no_hooks, extra=extra)
        if self.without:
            config = attrs.evolve(
                config,
                disabled_hooks=(*config.disabled_hooks, *self.without),
                disabled_plugins=(*config.disabled_plugins, *self.without),
            )
        return load_runtime(cwd=self.cwd, config=config, no_hooks=no_hooks, agent=REPLAY)


@attrs.frozen
class RunOptions:
    fmt: Format = "auto"
    payload_cwd: str | None = None
    model: str | None = None
    calls: bool = False
    timeline: bool = False
    only_acted: bool = False


class _Stopped(Exception):
    """Raised between two events when the run is asked to stop."""


class StopFlag(Protocol):
    def is_set(self) -> bool: ...


def registry_for(runtime: Runtime, model: str | None) -> CallbackRegistry:
    return CallbackRegistry.default(runtime.places, model=model, env=runtime.env)


def play_source(
    runtime: Runtime,
    registry: CallbackRegistry,
    source: Source,
    options: RunOptions,
    stop: StopFlag | None = None,
) -> corpus.Digest:
    """One session, loaded and replayed; a file that does not load is a digest with an error.

    :class:`_Stopped` propagates (the session did not finish).
    """
    try:
        recorded = load(source, options.fmt)
    except SessionFormatError as exc:
        return corpus.failed(source.name, str(exc))

    def check(_: Step) -> None:
        if stop is not None and stop.is_set():
            raise _Stopped

    player = Player(
        runtime,
        recorded,
        name=source.name,
        registry=registry,
        on_step=check,
        cwd=options.payload_cwd,
    )
    try:
        replay = player.play()
    except _Stopped:
        raise
    except Exception as exc:  # a recording the host code cannot take (bad tool output...)
        return corpus.failed(source.name, f"{source.name}: replay failed: {exc}")
    return corpus.digest(
        replay, calls=options.calls, timeline=options.timeline, only_acted=options.only_acted
    )


def replay_chunk(
    spec: RuntimeSpec, options: RunOptions, sources: Sequence[Source]
) -> list[corpus.Digest]:
    """Replay ``sources`` through one runtime: the unit of work shipped to a Dask worker."""
    runtime = spec.build()
    try:
        registry = registry_for(runtime, options.model)
        return [play_source(runtime, registry, s, options) for s in sources]
    finally:
        runtime.close()


OnDone = Callable[[corpus.Digest], None]


@attrs.define
class Outcome:
    digests: list[corpus.Digest]
    interrupted: bool = False
    errors: list[str] = attrs.field(factory=list)


# -- in this process ------------------------------------------------------------


def run_inline(
    spec: RuntimeSpec, options: RunOptions, sources: Sequence[Source], on_done: OnDone
) -> Outcome:
    out = Outcome(digests=[])
    stop = threading.Event()
    runtime = spec.build()
    try:
        registry = registry_for(runtime, options.model)
        for source in sources:
            try:
                d = play_source(runtime, registry, source, options, stop)
            except (KeyboardInterrupt, _Stopped):
                out.interrupted = True
                break
            out.digests.append(d)
            on_done(d)
    finally:
        runtime.close()
    return out


# -- worker processes -------------------------------------------------------------


def _worker(
    spec: RuntimeSpec,
    options: RunOptions,
    tasks: Any,
    results: Any,
    stop: Any,
) -> None:
    """A worker process: one runtime, then sessions from ``tasks`` until a None or a stop.

    Ctrl-C reaches every process of the terminal's group; here it only sets the
    stop flag, so the worker winds down between two events and closes its hooks.
    """
    interrupted = threading.Event()  # set from the handler: no lock the main thread may hold
    signal.signal(signal.SIGINT, lambda *_: interrupted.set())
    stop = _Either(interrupted, stop)
    try:
        runtime = spec.build()
    except Exception as exc:
        results.put(("fatal", str(exc)))
        results.put(("exit", os.getpid()))
        return
    try:
        registry = registry_for(runtime, options.model)
        while True:
            task = tasks.get() if not stop.is_set() else None
            if task is None:
                break
            index, source = task
            try:
                d = play_source(runtime, registry, source, options, stop)
            except _Stopped:
                break
            results.put(("done", index, d))
        if stop.is_set():
            results.put(("stopped", os.getpid()))
    finally:
        runtime.close()
        results.put(("exit", os.getpid()))


@attrs.frozen
class _Either:
    first: StopFlag
    second: StopFlag

    def is_set(self) -> bool:
        return self.first.is_set() or self.second.is_set()


def run_processes(
    spec: RuntimeSpec,
    options: RunOptions,
    sources: Sequence[Source],
    jobs: int,
    on_done: OnDone,
) -> Outcome:
    ctx = multiprocessing.get_context("spawn")
    tasks = ctx.Queue()
    results = ctx.Queue()
    stop = ctx.Event()
    for item in enumerate(sources):
        tasks.put(item)
    jobs = max(1, min(jobs, len(sources)))
    for _ in range(jobs):
        tasks.put(None)
    procs = [
        ctx.Process(target=_worker, args=(spec, options, tasks, results, stop), daemon=True)
        for _ in range(jobs)
    ]
    done: dict[int, corpus.Digest] = {}
    out = Outcome(digests=[])
    exited: set[int] = set()
    try:
        for p in procs:
            p.start()
        try:
            _collect(procs, results, done, exited, out, on_done, deadline=None)
        except KeyboardInterrupt:
            out.interrupted = True
            stop.set()
            with contextlib.suppress(KeyboardInterrupt):
                _collect(procs, results, done, exited, out, on_done, deadline=STOP_GRACE)
    finally:
        stop.set()
        _reap(procs)
        for q in (tasks, results):
            q.cancel_join_thread()
            q.close()
    if not out.interrupted and len(done) < len(sources) and not out.errors:
        out.errors.append("a worker process exited before its sessions were replayed")
    out.digests = [done[i] for i in sorted(done)]
    return out


def _collect(
    procs: list[Any],
    results: Any,
    done: dict[int, corpus.Digest],
    exited: set[int],
    out: Outcome,
    on_done: OnDone,
    deadline: float | None,
) -> None:
    """Read results until every worker has said it exited (or died, or time ran out)."""
    import time

    until = None if deadline is None else time.monotonic() + deadline
    while len(exited) < len(procs):
        if until is not None and time.monotonic() > until:
            return
        try:
            msg = results.get(timeout=POLL)
        except queue.Empty:
            dead = [p for p in procs if p.exitcode is not None and p.pid not in exited]
            for p in dead:
                # A worker that died without saying so (killed, crashed).
                exited.add(p.pid)
                if p.exitcode != 0:
                    out.errors.append(f"a worker process died (exit status {p.exitcode})")
            continue
        if msg[0] == "done":
            done[msg[1]] = msg[2]
            on_done(msg[2])
        elif msg[0] == "fatal":
            if msg[1] not in out.errors:
                out.errors.append(msg[1])
        elif msg[0] == "stopped":
            out.interrupted = True  # Ctrl-C reached the workers, maybe not this process
        elif msg[0] == "exit":
            exited.add(msg[1])


def _reap(procs: list[Any]) -> None:
    for p in procs:
        if p.pid is not None:
            p.join(timeout=STOP_GRACE)
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(timeout=2)
        if p.is_alive():
            p.kill()
            p.join()


# -- Dask ---------------------------------------------------------------------------


def _chunks(sources: Sequence[Source], size: int) -> Iterator[list[Source]]:
    for start in range(0, len(sources), size):
        yield list(sources[start : start + size])


def _shipped(chunk: list[Source]) -> tuple[list[Source], list[corpus.Digest]]:
    """The chunk with each file's text in it (a worker may not see this machine's files)."""
    shipped: list[Source] = []
    failed: list[corpus.Digest] = []
    for s in chunk:
        try:
            shipped.append(Source(name=s.name, text=s.read()))
        except SessionFormatError as exc:
            failed.append(corpus.failed(s.name, str(exc)))
    return shipped, failed


def run_dask(
    spec: RuntimeSpec,
    options: RunOptions,
    sources: Sequence[Source],
    scheduler: str | Any,
    on_done: OnDone,
) -> Outcome:
    """Ship sessions to a Dask cluster in chunks, a few chunks per worker thread in flight.

    ``scheduler`` is an address (``tcp://host:8786``) or a cluster object.
    """
    import distributed

    client_type: Any = distributed.Client
    completed: Any = distributed.as_completed
    out = Outcome(digests=[])
    with client_type(scheduler, set_as_default=False) as client:
        threads = sum(client.nthreads().values()) or 1
        size = max(1, min(64, -(-len(sources) // (threads * 4))))
        pending = _chunks(sources, size)
        running = completed(loop=client.loop)
        futures: list[Any] = []

        def submit() -> bool:
            """Ship the next chunk that has anything to replay; False when none is left."""
            for batch in pending:
                shipped, failed = _shipped(batch)
                for d in failed:
                    out.digests.append(d)
                    on_done(d)
                if shipped:
                    fut = client.submit(replay_chunk, spec, options, shipped, pure=False)
                    futures.append(fut)
                    running.add(fut)
                    return True
            return False

        for _ in range(threads * 2):
            if not submit():
                break
        try:
            for fut in running:
                try:
                    digests = fut.result()
                except Exception as exc:  # the worker could not build a runtime, or died
                    out.errors.append(f"a Dask task failed: {type(exc).__name__}: {exc}")
                    digests = []
                for d in digests:
                    out.digests.append(d)
                    on_done(d)
                submit()
        except KeyboardInterrupt:
            out.interrupted = True
            client.cancel(futures)
    order = {s.name: i for i, s in enumerate(sources)}
    out.digests.sort(key=lambda d: order.get(d.name, len(order)))
    return out
