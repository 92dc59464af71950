"""What one hook's run came to: Spec 07's expanded HookResult.

A Python callback's dict and a command hook's stdout both end up here, through
:func:`result_from_output`, so the two kinds of hook mean the same thing by the
same output.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import attrs

from .events import EVENTS, HookEvent
from .types import (
    AdditionalContextOutput,
    AsyncOutput,
    HookOutput,
    PermissionRequestSpecificOutput,
    PostToolUseSpecificOutput,
    PreToolUseSpecificOutput,
    SpecificOutput,
    SyncOutput,
    output_to_wire,
)

HookKind = Literal["callback", "command"]


class Outcome(StrEnum):
    SUCCESS = "success"
    BLOCKING = "blocking"
    """Exit code 2 on an event where it blocks, denies or feeds back."""
    ERROR = "error"
    """A non-blocking error: another exit code, bad output, an exception, exit 2 where
    it cannot block. Recorded; the call goes on."""
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


@attrs.frozen(kw_only=True)
class HookResult:
    hook: str
    event: HookEvent
    kind: HookKind
    outcome: Outcome
    exit_code: int | None = None
    duration: float = 0.0
    decision: str | None = None
    """PreToolUse: allow, deny, ask or defer; PermissionRequest: allow or deny;
    other events: ``block`` (decision block, or a blocking exit 2)."""
    message: str | None = None
    """Text the hook gave besides JSON: exit 2's stderr, or plain stdout."""
    continue_: bool | None = None
    system_message: str | None = None
    suppress_output: bool | None = None
    stop_reason: str | None = None
    reason: str | None = None
    hook_specific_output: SpecificOutput | None = None
    output: dict[str, Any] | None = None
    """The output in Claude Code's wire form, as read (None when there was none)."""
    error: str | None = None
    """Why the run failed, for ERROR, TIMEOUT and CANCELLED."""
    ignored: tuple[str, ...] = ()
    """Output keys Claude Code does not know, by path (a typo shows up here)."""
    is_async: bool = False
    """The hook answered ``{"async": true}``; its late result comes later."""
    late: bool = False
    """This is the late result of an async hook, handed over after its own fire."""
    session_env: str | None = None
    """What a SessionStart or Setup command hook wrote to its ``CLAUDE_ENV_FILE``
    (``export NAME=value`` lines Claude Code runs before each Bash command)."""

    @property
    def additional_context(self) -> str | None:
        specific = self.hook_specific_output
        with_context = (
            PreToolUseSpecificOutput | PostToolUseSpecificOutput | AdditionalContextOutput
        )
        if isinstance(specific, with_context) and specific.additional_context:
            return specific.additional_context
        if self.outcome == Outcome.SUCCESS and EVENTS[self.event].stdout_is_context:
            return self.message or None
        return None

    @property
    def blocking(self) -> bool:
        return self.decision in ("deny", "block")


def _decision(event: HookEvent, output: SyncOutput) -> str | None:
    specific = output.hook_specific_output
    if isinstance(specific, PreToolUseSpecificOutput) and specific.permission_decision:
        return specific.permission_decision
    if isinstance(specific, PermissionRequestSpecificOutput) and specific.decision:
        return specific.decision.behavior
    pre = (HookEvent.PRE_TOOL_USE, HookEvent.PRE_SKILL_SHELL_COMMAND)
    if event in pre and output.decision is not None:
        return {"approve": "allow", "block": "deny"}[output.decision]  # the legacy spelling
    return "block" if output.decision == "block" else None


def result_from_output(
    event: HookEvent,
    output: HookOutput | None,
    *,
    hook: str,
    kind: HookKind,
    duration: float,
    exit_code: int | None = None,
    message: str | None = None,
    ignored: tuple[str, ...] = (),
    late: bool = False,
) -> HookResult:
    """The result of a hook that ran to the end and answered ``output`` (None: nothing)."""
    common: dict[str, Any] = {
        "hook": hook,
        "event": event,
        "kind": kind,
        "outcome": Outcome.SUCCESS,
        "exit_code": exit_code,
        "duration": duration,
        "message": message,
        "ignored": ignored,
        "late": late,
    }
    if output is None:
        return HookResult(**common)
    wire = output_to_wire(output)
    if isinstance(output, AsyncOutput):
        return HookResult(**common, output=wire, is_async=True)
    return HookResult(
        **common,
        output=wire,
        decision=_decision(event, output),
        continue_=output.continue_,
        system_message=output.system_message,
        suppress_output=output.suppress_output,
        stop_reason=output.stop_reason,
        reason=output.reason,
        hook_specific_output=output.hook_specific_output,
    )


def blocking_result(
    event: HookEvent,
    reason: str,
    *,
    hook: str,
    kind: HookKind,
    duration: float,
    exit_code: int | None = 2,
    late: bool = False,
) -> HookResult:
    """Exit code 2: what it means depends on the event (see ``EventInfo.exit_two``)."""
    effect = EVENTS[event].exit_two
    common: dict[str, Any] = {
        "hook": hook,
        "event": event,
        "kind": kind,
        "exit_code": exit_code,
        "duration": duration,
        "message": reason,
        "late": late,
    }
    if effect == "none":
        return HookResult(
            **common, outcome=Outcome.ERROR, error=reason or f"exited with status {exit_code}"
        )
    decision = "deny" if effect == "deny" else "block"
    return HookResult(**common, outcome=Outcome.BLOCKING, decision=decision)


def failed_result(
    event: HookEvent,
    error: str,
    *,
    hook: str,
    kind: HookKind,
    duration: float,
    outcome: Outcome = Outcome.ERROR,
    exit_code: int | None = None,
    late: bool = False,
) -> HookResult:
    return HookResult(
        hook=hook,
        event=event,
        kind=kind,
        outcome=outcome,
        exit_code=exit_code,
        duration=duration,
        error=error,
        late=late,
    )
