"""The Spec 07 hook runner: matchers, callbacks and command hooks, one result per hook.

``Runner.afire`` is the one implementation. ``Runner.fire`` runs it on the
runner's own event loop, in a thread the runner starts on first use, so async
hooks left running by one ``fire`` keep running until the next (or until
``drain`` or ``close``) instead of freezing with a loop that is no longer turning.

Within a matcher, hooks run one after another in the order given, and a
``continue: false`` stops the rest of that matcher's hooks. Matchers run in order
too. Claude Code runs the matching hooks of an event in parallel; kodelet runs them
in sequence so that the merged answer never depends on which hook finished first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import os
import shutil
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from ..config import check_timeout
from ..places import find_project
from ..process import STDERR_TAIL, STDOUT_CAP
from .command import ENV_FILE_EVENTS, CommandHook
from .emission import Emitter, HookProgress, HookResponse, HookStarted, Sink, sdk_outcome
from .events import EVENTS, HookEvent, parse_hook_event
from .matchers import Matcher
from .results import HookKind, HookResult, Outcome, failed_result, result_from_output
from .types import (
    AsyncOutput,
    HookDataError,
    HookInput,
    HookOutput,
    SyncOutput,
    input_from_wire,
    input_to_wire,
    output_from_wire,
)

DEFAULT_TIMEOUT = 60.0
PROGRESS_RECORDS = 1000
"""Progress records one hook run emits at most. Past them a line is only kept in the
response's stdout (up to 1 MiB) and stderr (a 4 KiB tail), and one last record says
how many lines were not sent: a hook printing millions of lines costs the host a
bounded number of records and bounded memory, whatever the sink does with them."""


ENV_FILE_CAP = 64 * 1024
"""Bytes of a ``CLAUDE_ENV_FILE`` read back into :attr:`HookResult.session_env`."""

MAX_ASYNC = 16
"""Async command hooks (configured ``async`` or gone async) one runner lets run at
once; a host that runs several runners (the Claude Code adapter: one per hook) hands
them one ``async_slots``. One more is not started (or, gone async, is killed) and
fails with a reason: a model that fires a hundred tool calls does not get a hundred
background processes."""


class _DaemonThreads(concurrent.futures.Executor):
    """One daemon thread per synchronous callback, so none holds the host's exit.

    A plain callback cannot be interrupted: past its timeout it is abandoned and runs
    on. ``ThreadPoolExecutor`` joins its threads when the interpreter exits, so one
    such callback held the host for as long as it ran."""

    def __init__(self) -> None:
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if self._shut:
            raise RuntimeError("this runner is closed")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def work() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # the caller's future carries it
                    future.set_exception(exc)

        threading.Thread(target=work, name="claude-hook", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shut = True


class _Kept:
    """The lines of one stream as one string: its first ``cap`` characters, or with
    ``tail`` its last. Lines are joined in batches, so a million one-byte lines never
    sit in a list of a million strings."""

    def __init__(self, cap: int, *, tail: bool) -> None:
        self.cap, self.tail = cap, tail
        self.text: str | None = None
        self.parts: list[str] = []
        self.size = 0

    def add(self, line: str) -> None:
        if not self.tail and self.size >= self.cap:
            return
        self.parts.append(line)
        self.size += len(line) + 1
        if len(self.parts) >= 512 or self.size > 2 * self.cap:
            self._join()

    def _join(self) -> None:
        if not self.parts:
            return
        text = "\n".join(self.parts if self.text is None else [self.text, *self.parts])
        self.text = text[-self.cap :] if self.tail else text[: self.cap]
        self.parts.clear()
        self.size = len(self.text)

    def value(self) -> str:
        self._join()
        return self.text or ""


HookCallback: TypeAlias = Callable[[dict[str, Any], str | None, dict[str, Any]], Any]
"""``(input, tool_use_id, context)`` like the Agent SDK's; returns a dict shaped like
its ``HookJSONOutput`` (or None), directly, as an awaitable, or as the first item of
a generator whose last item is the late result of an async answer."""

Hook: TypeAlias = HookCallback | CommandHook


def _check_hooks(_: Any, __: Any, hooks: Sequence[Any]) -> None:
    for i, hook in enumerate(hooks):
        if not isinstance(hook, CommandHook) and not callable(hook):
            raise TypeError(f"hooks[{i}]: expected a callable or a CommandHook, got {hook!r}")


def _check_timeout(_: Any, __: Any, value: float | None) -> None:
    if value is not None:
        check_timeout(value, "matcher timeout")


@attrs.frozen
class HookMatcher:
    """Hooks that run when ``matcher`` matches; ``timeout`` seconds each (default 60)."""

    matcher: str | None = None
    hooks: Sequence[Hook] = attrs.field(factory=list, converter=tuple, validator=_check_hooks)
    timeout: float | None = attrs.field(default=None, validator=_check_timeout)
    compiled: Matcher = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "compiled", Matcher(self.matcher))

    def applies(self, event: HookEvent, hook_input: Mapping[str, Any]) -> bool:
        field = EVENTS[event].matcher_field
        if field is None:
            return True  # Claude Code ignores matchers on these events
        value = hook_input.get(field)
        return self.compiled(value if isinstance(value, str) else "")


def _read_env_file(path: str) -> str | None:
    """What a hook wrote to its ``CLAUDE_ENV_FILE`` (a regular file only, bounded)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        text = f.read(ENV_FILE_CAP).decode("utf-8", "replace")
    return text or None


def _too_many(event: HookEvent, name: str) -> HookResult:
    why = f"not run: {MAX_ASYNC} async command hooks already running"
    return failed_result(event, why, hook=name, kind="command", duration=0.0)


def _name(hook: Hook) -> str:
    if isinstance(hook, CommandHook):
        return hook.label
    name = getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None)
    return name if isinstance(name, str) else repr(hook)


def _read(event: HookEvent, raw: Any) -> tuple[HookOutput | None, tuple[str, ...]]:
    """A callback's return value as an output; HookDataError names what is wrong."""
    if raw is None:
        return None, ()
    if isinstance(raw, SyncOutput | AsyncOutput):
        return raw, ()
    output, ignored = output_from_wire(event, raw)
    return output, tuple(ignored)


async def _to_async_iter(
    gen: Iterator[Any], pool: concurrent.futures.Executor
) -> AsyncIterator[Any]:
    """A sync generator stepped in the runner's threads, so a slow one cannot stall the loop."""
    loop = asyncio.get_running_loop()
    done = object()
    while True:
        item = await loop.run_in_executor(pool, next, gen, done)
        if item is done:
            return
        yield item


@attrs.frozen
class _Running:
    """A late result in the making, and the loop whose task computes it."""

    future: concurrent.futures.Future[HookResult]
    task: asyncio.Task[HookResult]
    loop: asyncio.AbstractEventLoop


class Runner:
    """Fires Claude-style hooks; see the module docstring for the order they run in."""

    def __init__(
        self,
        hooks: Mapping[str, Sequence[HookMatcher]],
        *,
        cwd: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        emit: Sink | None = None,
        async_slots: threading.BoundedSemaphore | None = None,
        env_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        table: dict[HookEvent, tuple[HookMatcher, ...]] = {}
        for key, matchers in hooks.items():
            event = parse_hook_event(str(key))
            for i, m in enumerate(matchers):
                if not isinstance(m, HookMatcher):
                    raise TypeError(f"hooks[{event.value}][{i}]: expected a HookMatcher")
            table[event] = (*table.get(event, ()), *matchers)
        self.hooks = table
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.session_id = session_id
        self.env_dir = os.fspath(env_dir) if env_dir is not None else None
        self._own_env_dir: str | None = None
        self._emit = Emitter(emit)
        self._pool = _DaemonThreads()
        self._slots = async_slots or threading.BoundedSemaphore(MAX_ASYNC)
        self._lock = threading.Lock()
        self._running: list[_Running] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    # --- inputs -----------------------------------------------------------

    def build_input(self, event: str | HookEvent, data: HookInput | Mapping[str, Any]) -> HookInput:
        """The event's typed input, with the runner's session id and cwd where data has none.

        Bad input raises :class:`HookDataError` (a ValueError) naming the field.
        """
        hook_event = parse_hook_event(str(event))
        if isinstance(data, HookInput):
            if data.event != hook_event:
                raise HookDataError(f"input is for {data.event.value!r}, not {hook_event.value!r}")
            return data
        if not isinstance(data, Mapping):
            raise HookDataError(f"input: expected a JSON object, got {type(data).__name__}")
        filled = dict(data)
        if not filled.get("session_id") and self.session_id:
            filled["session_id"] = self.session_id
        if not filled.get("cwd"):
            filled["cwd"] = self.cwd or os.getcwd()
        return input_from_wire(hook_event, filled)

    # --- firing -----------------------------------------------------------

    def fire(
        self,
        event: str | HookEvent,
        hook_input: HookInput | Mapping[str, Any],
        tool_use_id: str | None = None,
    ) -> list[HookResult]:
        """:meth:`afire` from synchronous code (not from inside a running event loop)."""
        loop = self._own_loop()
        coro = self.afire(event, hook_input, tool_use_id)
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    async def afire(
        self,
        event: str | HookEvent,
        hook_input: HookInput | Mapping[str, Any],
        tool_use_id: str | None = None,
    ) -> list[HookResult]:
        """Run the hooks of ``event`` that match; one result per hook that ran.

        Late results of async hooks that finished since the last call come first,
        marked ``late``.
        """
        if self._closed:
            raise RuntimeError("this runner is closed")
        typed = self.build_input(event, hook_input)
        wire = input_to_wire(typed)
        if tool_use_id is None:
            given = wire.get("tool_use_id")
            tool_use_id = given if isinstance(given, str) and given else None
        results = self._take_finished()
        index = 0
        for matcher in self.hooks.get(typed.event, ()):
            if not matcher.applies(typed.event, wire):
                continue
            timeout = matcher.timeout or DEFAULT_TIMEOUT
            for hook in matcher.hooks:
                result = await self._run(typed.event, hook, wire, tool_use_id, timeout, index)
                index += 1
                results.append(result)
                if result.continue_ is False:
                    break
        return results

    async def drain(self) -> list[HookResult]:
        """Wait for every async hook still running; their late results, in start order."""
        with self._lock:
            running, self._running = self._running, []
        return [await asyncio.wrap_future(r.future) for r in running]

    def drain_sync(self) -> list[HookResult]:
        """:meth:`drain` from synchronous code."""
        with self._lock:
            running, self._running = self._running, []
        return [r.future.result() for r in running]

    # --- one hook ---------------------------------------------------------

    async def _run(
        self,
        event: HookEvent,
        hook: Hook,
        wire: dict[str, Any],
        tool_use_id: str | None,
        timeout: float,
        index: int = 0,
    ) -> HookResult:
        name = _name(hook)
        # Progress records are built only for a host that takes them: every tool call
        # through the Claude Code adapter comes here without a sink.
        emitting = self._emit.sink is not None
        ids: dict[str, Any] = {}
        if emitting:
            ids.update(
                hook_id=str(uuid.uuid4()),
                hook_name=name,
                hook_event=event,
                session_id=str(wire.get("session_id", "")),
            )
            self._emit(HookStarted(**ids))
        kept = {"stdout": _Kept(STDOUT_CAP, tail=False), "stderr": _Kept(STDERR_TAIL, tail=True)}
        lines = 0

        def on_line(stream: str, line: str) -> None:
            nonlocal lines
            kept[stream].add(line)
            lines += 1
            if lines <= PROGRESS_RECORDS:
                std: dict[str, Any] = {"stdout": line} if stream == "stdout" else {"stderr": line}
                self._emit(HookProgress(**ids, **std, output=line))

        def unsent() -> None:
            if lines > PROGRESS_RECORDS:
                note = f"kodelet: {lines - PROGRESS_RECORDS} more lines not sent as progress"
                self._emit(HookProgress(**ids, output=note))

        def respond(result: HookResult) -> HookResult:
            if not emitting:
                return result
            unsent()
            stdout = kept["stdout"].value()
            self._emit(
                HookResponse(
                    **ids,
                    output=stdout,
                    stdout=stdout,
                    stderr=kept["stderr"].value(),
                    exit_code=result.exit_code,
                    outcome=sdk_outcome(result.outcome),
                    duration_ms=round(result.duration * 1000),
                    result=result,
                )
            )
            return result

        late: Awaitable[HookResult] | None
        if isinstance(hook, CommandHook):
            sink = on_line if emitting else None
            env_file = self._env_file(event, wire, index)
            result, late = await self._command(event, hook, name, wire, timeout, sink, env_file)
            if env_file is not None and late is None:
                result = attrs.evolve(result, session_env=_read_env_file(env_file))
        else:
            result, late = await self._call(event, hook, name, wire, tool_use_id, timeout)
        if late is not None:
            self._track(late, respond)
        return respond(result)

    async def _command(
        self,
        event: HookEvent,
        hook: CommandHook,
        name: str,
        wire: dict[str, Any],
        timeout: float,
        on_line: Callable[[str, str], None] | None,
        env_file: str | None = None,
    ) -> tuple[HookResult, asyncio.Task[HookResult] | None]:
        """Start a command hook; an async one (configured, or gone async on its own)
        holds one of the runner's async slots until its late result is in."""
        held = hook.async_ and self._slots.acquire(False)
        if hook.async_ and not held:
            return _too_many(event, name), None
        try:
            result, late = await hook.start(
                event,
                wire,
                timeout=timeout,
                project_dir=self.cwd or str(find_project(str(wire.get("cwd") or "") or None)),
                on_line=on_line,
                env_file=env_file,
            )
        except Exception as exc:  # a hook never takes the runner down
            result = hook.failed(event, str(exc), duration=0.0)
            late = None
        except BaseException:  # cancelled: the slot is not kept
            if held:
                self._slots.release()
            raise
        if late is not None and not held:  # it went async on its own
            held = self._slots.acquire(False)
            if not held:
                late.cancel()  # kills its process group
                with contextlib.suppress(BaseException):
                    await late
                return _too_many(event, name), None
        if late is not None:
            late.add_done_callback(lambda _: self._slots.release())
        elif held:
            self._slots.release()
        return result, late

    async def _call(
        self,
        event: HookEvent,
        hook: HookCallback,
        name: str,
        wire: dict[str, Any],
        tool_use_id: str | None,
        timeout: float,
    ) -> tuple[HookResult, Awaitable[HookResult] | None]:
        """Call a Python hook; a generator's first item is its answer, its last the late one."""
        started = time.monotonic()
        signal = threading.Event()
        context: dict[str, Any] = {"signal": signal}
        kind: HookKind = "callback"
        loop = asyncio.get_running_loop()

        def failed(error: str, outcome: Outcome = Outcome.ERROR, late: bool = False) -> HookResult:
            duration = time.monotonic() - started
            return failed_result(
                event, error, hook=name, kind=kind, duration=duration, outcome=outcome, late=late
            )

        def answered(raw: Any, late: bool = False) -> HookResult:
            try:
                output, ignored = _read(event, raw)
            except HookDataError as exc:
                return failed(str(exc), late=late)
            duration = time.monotonic() - started
            return result_from_output(
                event, output, hook=name, kind=kind, duration=duration, ignored=ignored, late=late
            )

        async def call() -> Any:
            if inspect.iscoroutinefunction(hook) or inspect.isasyncgenfunction(hook):
                value = hook(dict(wire), tool_use_id, context)
            else:
                value = await loop.run_in_executor(
                    self._pool, hook, dict(wire), tool_use_id, context
                )
            if inspect.isawaitable(value):
                value = await value
            return value

        gen: AsyncIterator[Any] | None = None
        try:
            value = await asyncio.wait_for(call(), timeout)
            if inspect.isasyncgen(value):
                gen = value
            elif inspect.isgenerator(value):
                gen = _to_async_iter(value, self._pool)
            if gen is not None:
                value = await asyncio.wait_for(anext(gen, None), timeout)
        except TimeoutError:
            signal.set()
            return failed(f"timed out after {timeout:g}s", Outcome.TIMEOUT), None
        except asyncio.CancelledError:
            signal.set()
            raise
        except Exception as exc:  # one hook's error never stops another's
            return failed(f"{type(exc).__name__}: {exc}"), None
        result = answered(value)
        if gen is None or not result.is_async:
            if gen is not None:
                with contextlib.suppress(Exception):
                    await gen.aclose()  # type: ignore[attr-defined]
            return result, None
        marker = value.get("asyncTimeout") if isinstance(value, Mapping) else None
        if isinstance(value, AsyncOutput):
            marker = value.async_timeout
        limit = marker / 1000 if isinstance(marker, int | float) and marker > 0 else timeout
        steps = gen

        async def finish() -> HookResult:
            last: Any = None
            try:
                async with asyncio.timeout(limit):
                    async for item in steps:
                        last = item
            except TimeoutError:
                signal.set()
                return failed(f"async hook timed out after {limit:g}s", Outcome.TIMEOUT, True)
            except asyncio.CancelledError:
                signal.set()
                raise
            except Exception as exc:
                return failed(f"{type(exc).__name__}: {exc}", late=True)
            return answered(last, late=True)

        return result, finish()

    # --- CLAUDE_ENV_FILE ---------------------------------------------------

    def _env_file(self, event: HookEvent, wire: Mapping[str, Any], index: int) -> str | None:
        """Where a SessionStart or Setup hook may write ``export`` lines, named as Claude
        Code names it (``<session>/sessionstart-hook-<n>.sh``), in ``env_dir`` or a
        directory of the runner's own that ``close`` removes."""
        if event not in ENV_FILE_EVENTS:
            return None
        base = self.env_dir
        if base is None:
            with self._lock:
                if self._own_env_dir is None:
                    self._own_env_dir = tempfile.mkdtemp(prefix="kodelet-session-env-")
                base = self._own_env_dir
        session = str(wire.get("session_id") or "session").replace(os.sep, "_")
        directory = os.path.join(base, session if session not in (".", "..") else "session")
        os.makedirs(directory, mode=0o700, exist_ok=True)
        path = os.path.join(directory, f"{event.value.lower()}-hook-{index}.sh")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # what an earlier run wrote is not this run's answer
        return path

    # --- late results -----------------------------------------------------

    def _track(
        self, late: Awaitable[HookResult], respond: Callable[[HookResult], HookResult]
    ) -> None:
        loop = asyncio.get_running_loop()
        future: concurrent.futures.Future[HookResult] = concurrent.futures.Future()

        async def collect() -> HookResult:
            return respond(await late)

        task = loop.create_task(collect())

        def done(t: asyncio.Task[HookResult]) -> None:
            if t.cancelled():
                future.cancel()
            elif t.exception() is not None:
                future.set_exception(t.exception())
            else:
                future.set_result(t.result())

        task.add_done_callback(done)
        with self._lock:
            self._running.append(_Running(future, task, loop))

    def _take_finished(self) -> list[HookResult]:
        with self._lock:
            done = [r for r in self._running if r.future.done()]
            self._running = [r for r in self._running if not r.future.done()]
        return [r.future.result() for r in done if not r.future.cancelled()]

    # --- the runner's own loop -------------------------------------------

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("this runner is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="claude-hooks", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def close(self) -> None:
        """Cancel async hooks still running (killing their processes) and stop the loop."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            running, self._running = self._running, []
        for r in running:
            with contextlib.suppress(RuntimeError):  # that loop is already closed
                r.loop.call_soon_threadsafe(r.task.cancel)
        for r in running:
            if r.loop is self._loop:
                with contextlib.suppress(BaseException):
                    r.future.exception(timeout=5)
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._own_env_dir is not None:
            shutil.rmtree(self._own_env_dir, ignore_errors=True)

    async def aclose(self) -> None:
        """:meth:`close` from async code: waits for this loop's cancelled hooks to finish."""
        with self._lock:
            mine = [r for r in self._running if r.loop is asyncio.get_running_loop()]
        for r in mine:
            r.task.cancel()
        for r in mine:
            with contextlib.suppress(BaseException):
                await r.task
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def __aenter__(self) -> Runner:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
