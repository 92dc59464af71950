"""The one dispatch loop (:func:`run`) and how it calls one hook: time limits for
coroutines, and what lets the sync and the async driver share the loop. What a hook
answers is the reducer's business (:meth:`kodelet.policy.Reducer.step`), not this
module's: the loop only hands the raw answer on."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .errors import HookFailure
from .policy import Reducer
from .seam import WHOLE_PAYLOAD, HookEntry

Call = tuple[HookEntry, Callable[..., Any], Callable[..., Any], Any, int, float]
"""One hook as the loop calls it: its entry, its sync and async call, the getter of the
payload fields it names, how many it takes (or ``WHOLE_PAYLOAD``) and its time limit."""


def run(
    red: Reducer, hooks: Sequence[Call], coroutines: CoroutineRunner | None
) -> Generator[Any, Any, None]:
    """The one dispatch loop, for both drivers (pluggy's ``_multicall``, plus asyncio).

    It calls each hook with what it asks for and hands its raw answer, or its
    exception, to the event's reducer, which merges it, records it for the trace and
    says whether the chain stops; each hook is handed ``red.payload`` as the hooks
    before it left it, never the host's own objects. It yields only the awaitables a
    hook returned: the async driver (``coroutines`` None) awaits them; the sync one
    runs them to completion on ``coroutines`` and so never sees a yield. Per hook it
    does what pluggy's own loop does plus one clock read; each hook's duration runs
    from the end of the previous hook's call."""
    current = red.payload  # the reducer's own copy: hooks never touch the host's objects
    clock = time.perf_counter
    suspended = False
    started = clock()
    for entry, call, acall, get, nargs, timeout in hooks:
        try:
            if nargs == 1:
                raw = call(get(current))
            elif nargs > 1:
                raw = call(*get(current))
            elif nargs == 0:
                raw = call()
            else:
                raw = (acall if coroutines is None else call)(current, timeout)
            if raw is not None and inspect.isawaitable(raw):
                pending = raw if nargs == WHOLE_PAYLOAD else bounded(raw, timeout)
                if coroutines is not None:
                    raw = coroutines.run(pending)
                else:
                    suspended = True
                    raw = yield pending
                    suspended = False
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            if suspended:  # the async driver delivers a hook's exception wrapped
                if not isinstance(exc, _Raised):
                    raise  # GeneratorExit: the dispatch itself is going away
                suspended, exc = False, exc.error
                if isinstance(exc, asyncio.CancelledError) and cancelling():
                    raise exc from None
            now = clock()
            stop = red.raised(entry, exc, now - started)
        else:
            now = clock()
            stop = red.step(entry, raw, now - started)
        if stop:
            break
        started = now
        current = red.payload


class CoroutineRunner:
    """Runs an ``async def`` hookimpl to completion from the sync API: on a loop of
    its own, or in a worker thread when the caller is already inside a running loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, awaitable: Awaitable[Any]) -> Any:
        coro = _awaiting(awaitable)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(coro)
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coro).result()

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()


async def _awaiting(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def bounded(coro: Awaitable[Any], timeout: float) -> Any:
    """An ``async def`` impl gets the same time limit as an executable.

    ``asyncio.timeout`` rather than ``wait_for``: no extra task, so a Ctrl-C inside a
    hook propagates cleanly (through ``wait_for``'s inner task CPython 3.11 can
    corrupt its recursion bookkeeping). A hook that swallows its cancellation and
    runs on past the limit is still that hook's timeout, not an answer."""
    limit = asyncio.timeout(timeout)
    try:
        async with limit:
            result = await coro
    except TimeoutError:
        if limit.expired():
            raise HookFailure(f"timed out after {timeout:g}s") from None
        raise
    if limit.expired():
        raise HookFailure(f"timed out after {timeout:g}s (and ignored its cancellation)")
    return result


class _Raised(Exception):
    """A hook's exception on its way back into the dispatch loop, so that the loop can
    tell it from its own ``GeneratorExit`` or cancellation."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def feed(steps: Generator[Any, Any, Any], ok: bool, value: Any) -> tuple[bool, Any]:
    """Resume the dispatch loop with a hook's awaited answer (or its exception):
    (False, the next awaitable) or (True, None) once it has finished."""
    try:
        return False, (steps.send(value) if ok else steps.throw(_Raised(value)))
    except StopIteration as stop:
        return True, stop.value


async def caught(awaitable: Any) -> tuple[bool, Any]:
    try:
        return True, await awaitable
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        return False, exc


def cancelling() -> bool:
    """True when the dispatching task itself was cancelled, not just a hook raising
    ``CancelledError`` of its own accord (which is that hook's failure)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
