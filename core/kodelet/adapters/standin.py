"""A fail-closed hook that could not be loaded still guards.

If a guardrail marked ``fail_closed = true`` loses its executable bit, becomes
untrusted, or stops answering ``hook``, skipping it would quietly remove the
guard. Instead a stand-in takes its place on the blocking events and fails
there, so the runtime blocks with ``hook <name> failed (fail-closed): ...``.
"""

from __future__ import annotations

from typing import Any

from ..errors import HookFailure
from ..events import Event
from ..kinds import Source, Status
from ..payloads import BasePayload
from ..seam import AdapterHook, Rank
from .discovery import DiscoveredHook


def needs_stand_in(hook: DiscoveredHook) -> bool:
    """Skipped for a reason other than a higher hook of the same name taking its place."""
    return hook.status is Status.SKIPPED and hook.shadowed_by is None


def blocking_stand_in(name: str, source: Source, rank: Rank, path: str, reason: str) -> AdapterHook:
    """An entry that fails with ``reason`` wherever it is called, so a fail-closed hook
    that cannot run blocks in its place; any kind of hook that cannot run gets one."""

    def run(payload: BasePayload, timeout: float) -> Any:
        raise HookFailure(f"not run: {reason}")

    async def arun(payload: BasePayload, timeout: float) -> Any:
        run(payload, timeout)

    return AdapterHook(
        name=name,
        source=source,
        rank=rank,
        run=run,
        arun=arun,
        path=path,
        note=f"cannot run ({reason}); fail_closed: blocks in its place",
    )


def stand_in_events(event: Event | None) -> list[Event]:
    """The blocking events a hook that cannot run may have handled: its own, or all of
    them when it never said which."""
    return [e for e in Event if e.blocking and event in (None, e)]


def stand_in(hook: DiscoveredHook, event: Event) -> AdapterHook | None:
    """The entry that blocks in ``hook``'s place on ``event``, if it is a blocking event
    the hook may have handled (all of them when it never said which)."""
    if event not in stand_in_events(hook.event):
        return None
    return blocking_stand_in(
        hook.name, Source.EXECUTABLE, Rank.EXTERNAL, str(hook.path), hook.reason
    )
