"""Progress records of hook runs, named like the Agent SDK's hook messages.

``hook_started`` when a hook begins, ``hook_progress`` for each line a command
hook writes to stdout or stderr as it arrives, ``hook_response`` when it is done.
:meth:`to_message` gives the SDK's ``{"type": "system", "subtype": ...}`` form, so a
bridge can forward them as they are.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import attrs

from .events import HookEvent
from .results import HookResult, Outcome

log = logging.getLogger(__name__)


def _uuid() -> str:
    return str(uuid.uuid4())


@attrs.frozen(kw_only=True)
class HookStarted:
    SUBTYPE: ClassVar[str] = "hook_started"

    hook_id: str
    hook_name: str
    hook_event: HookEvent
    session_id: str = ""
    uuid: str = attrs.field(factory=_uuid)

    def to_message(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data["hook_event"] = self.hook_event.value
        return {"type": "system", "subtype": self.SUBTYPE, **data}


@attrs.frozen(kw_only=True)
class HookProgress(HookStarted):
    SUBTYPE: ClassVar[str] = "hook_progress"

    stdout: str = ""
    stderr: str = ""
    output: str = ""
    """The line itself, whichever stream it came from."""


@attrs.frozen(kw_only=True)
class HookResponse(HookStarted):
    SUBTYPE: ClassVar[str] = "hook_response"

    output: str = ""
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    outcome: str = "success"
    """The SDK's three: success, error, cancelled."""
    duration_ms: int = 0
    result: HookResult | None = attrs.field(default=None, eq=False)
    """The full result; not part of the SDK message."""

    def to_message(self) -> dict[str, Any]:
        data = super().to_message()
        del data["result"]
        if self.exit_code is None:
            del data["exit_code"]
        return data


HookMessage = HookStarted | HookProgress | HookResponse
Sink = Callable[[HookMessage], object] | asyncio.Queue[HookMessage]

_SDK_OUTCOME = {
    Outcome.SUCCESS: "success",
    Outcome.BLOCKING: "error",
    Outcome.ERROR: "error",
    Outcome.TIMEOUT: "error",
    Outcome.CANCELLED: "cancelled",
}


def sdk_outcome(outcome: Outcome) -> str:
    return _SDK_OUTCOME[outcome]


@attrs.frozen
class Emitter:
    """Hands records to the sink; a failing sink is logged, never the hooks' problem."""

    sink: Sink | None = None

    def __call__(self, record: HookMessage) -> None:
        if self.sink is None:
            return
        try:
            if isinstance(self.sink, asyncio.Queue):
                self.sink.put_nowait(record)
            else:
                self.sink(record)
        except Exception as exc:  # the sink is the host's code
            log.warning("hook emission sink failed: %s", exc)
