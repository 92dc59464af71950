"""How the runtime calls one hook: time limits for coroutines, and the two drivers'
shared step, so the sync and async APIs run the one dispatch loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

from .errors import HookFailure, describe
from .events import Event
from .policy import Reducer, coerce_result
from .results import RESULT_TYPES
from .seam import WHOLE_PAYLOAD, HookEntry
from .trace import Outcome, RawRecord

log = logging.getLogger("kodelet.runtime")


def settled(
    red: Reducer, entry: HookEntry, raw: Any, duration: float, slow_after: float
) -> RawRecord:
    """A hook's answer into the merge, and its trace record (not yet a TraceRecord)."""
    try:
        result = coerce_result(red.payload.EVENT, raw)
        outcome, detail = red.add(entry.name, result)
    except Exception as exc:  # whatever an answer does while it is merged is its hook's fault
        return failed(red, entry, exc, duration)
    if type(raw) is dict and raw.keys() - RESULT_FIELDS[red.payload.EVENT]:
        ignored = foreign_fields(red.payload.EVENT, raw)
        if ignored:
            log.warning("hook %s: %s", entry.name, ignored)
            detail = ignored + (f"; {detail}" if detail else "")
    if outcome is Outcome.ERROR:  # the policy refused the answer: that is the hook's error
        return (entry.name, entry.source, outcome, duration, detail, None)
    if duration > slow_after and entry.nargs != WHOLE_PAYLOAD:
        log.warning("hook %s is slow: %.2fs on %s", entry.name, duration, red.payload.EVENT)
        detail = f"slow: {duration:.2f}s" + (f"; {detail}" if detail else "")
    return (entry.name, entry.source, outcome, duration, None, detail)


RESULT_FIELDS = {e: frozenset(a.name for a in attrs.fields(t)) for e, t in RESULT_TYPES.items()}


def foreign_fields(event: Event, answer: dict[str, Any]) -> str | None:
    """What an answer says that ``event`` has no field for, which is ignored: a
    ``blocked`` from an after_tool_call hook would otherwise be silently dropped.
    Empty values (``"blocked": false``) say nothing and are let be."""
    extra = sorted(k for k, v in answer.items() if k not in RESULT_FIELDS[event] and v)
    if not extra:
        return None
    cannot = " (it cannot block)" if "blocked" in extra and not event.blocking else ""
    names = ", ".join(repr(k) for k in extra)
    return (
        f"{event.value} has no field{'s' if len(extra) > 1 else ''} {names}{cannot}; ignored "
        f"(see: kodelet hooks schema {event.value} --result)"
    )


def failed(red: Reducer, entry: HookEntry, exc: BaseException, duration: float) -> RawRecord:
    """A hook's failure: logged, traced, and under ``fail_closed`` a block on blocking events."""
    event = red.payload.EVENT
    why = describe(exc)
    log.warning("hook %s failed on %s: %s", entry.name, event.value, why)
    detail = None
    if entry.fail_closed and event.blocking:
        red.fail_closed(entry.name, why)
        detail = "fail-closed: blocked"
    return (entry.name, entry.source, Outcome.ERROR, duration, why, detail)


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


class Raised(Exception):
    """A hook's exception on its way back into the dispatch loop, so that the loop can
    tell it from its own ``GeneratorExit`` or cancellation."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def feed(steps: Generator[Any, Any, Any], ok: bool, value: Any) -> tuple[bool, Any]:
    """Resume the dispatch loop with a hook's awaited answer (or its exception):
    (False, the next awaitable) or (True, None) once it has finished."""
    try:
        return False, (steps.send(value) if ok else steps.throw(Raised(value)))
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
