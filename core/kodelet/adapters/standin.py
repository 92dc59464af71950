"""A hook that cannot start still guards.

If a hook cannot start (untrusted, a dangling link, a missing interpreter, a
``hook`` query that fails, so its event is unknown), skipping it would quietly
remove what may have been a guard. Unless it fails open (``fail_closed = false``),
a stand-in takes its place on the blocking events and fails there, so the runtime
blocks with ``hook <name> failed (fail-closed): ...`` and the fix. A file that is
no hook (not executable) gets none unless config.toml marks its name
``fail_closed = true``: a README beside the hooks must not stop the agent.
"""

from __future__ import annotations

from typing import Any

from ..config import Config
from ..errors import HookFailure
from ..events import Event
from ..kinds import Source, Status
from ..payloads import BasePayload
from ..seam import AdapterHook, Rank
from .discovery import DiscoveredHook


def needs_stand_in(hook: DiscoveredHook, config: Config) -> bool:
    """A hook skipped for a reason other than a higher hook of the same name taking
    its place or being switched off, that does not fail open. What is no hook (a
    file without ``x``) gets one only when config.toml names it a guard
    (``fail_closed = true``): the user said a guard lives there."""
    if hook.status is not Status.SKIPPED or hook.shadowed_by is not None:
        return False
    if not config.hook_enabled(hook.name):
        return False
    return config.fails_closed(hook.name, by_default=hook.hook)


def blocking_stand_in(
    name: str, source: Source, rank: Rank, path: str, reason: str, fix: str | None = None
) -> AdapterHook:
    """An entry that fails with ``reason`` (and ``fix``) wherever it is called, so a
    fail-closed hook that cannot run blocks in its place; any kind of hook that cannot
    run gets one."""

    def run(payload: BasePayload, timeout: float) -> Any:
        raise HookFailure(f"not run: {reason}", fix=fix)

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
        hook.name, Source.EXECUTABLE, Rank.EXTERNAL, str(hook.path), hook.reason, hook.fix
    )
