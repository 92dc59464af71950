"""Asking the user about a tool call a hook wants approved (``ask``).

A ``before_tool_call`` hook may answer ``{"ask": true, "reason": ...}``; the merged
result then asks and is ``blocked`` as well, so a host that knows nothing of
approvals blocks. A host that can ask gives its :class:`~kodelet.host.session.Session`
an approver; the session turns the ask into a run (approved) or a block (anything
else). Only a plain ``True`` approves: an approver that fails, answers ``None`` or
``"yes"``, or is missing blocks the call, because a guard that asked must never be
read as allowing.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from ..payloads import BeforeToolCallPayload
from ..results import BeforeToolCallResult

__all__ = [
    "ApprovalRequest",
    "Approver",
    "approval_request",
    "approved",
    "asettle",
    "not_approved",
    "settle",
]

log = logging.getLogger("kodelet.approval")

NO_APPROVER = "approval needed, and this host has no one to ask"


@attrs.frozen(kw_only=True)
class ApprovalRequest:
    """What the user is asked: the call as it would run, and why a hook asks."""

    tool_name: str
    tool_input: dict[str, Any]
    reason: str
    tool_user_id: str = ""
    conv_id: str = ""
    invoked_by: str = "main"


Approver = Callable[[ApprovalRequest], "bool | Awaitable[bool]"]
"""``True`` runs the call; anything else blocks it. The async session API awaits an
awaitable answer; the sync API refuses one (its caller cannot wait for it)."""


def approval_request(
    payload: BeforeToolCallPayload, result: BeforeToolCallResult
) -> ApprovalRequest:
    """The request for a merged result that asks: the input the call would run with."""
    tool_input = result.input if result.input is not None else payload.tool_input
    return ApprovalRequest(
        tool_name=payload.tool_name,
        tool_input=dict(tool_input),
        reason=result.reason,
        tool_user_id=payload.tool_user_id,
        conv_id=payload.conv_id,
        invoked_by=payload.invoked_by,
    )


def approved(result: BeforeToolCallResult) -> BeforeToolCallResult:
    """The call runs (with any rewritten input): nothing is left to ask or block."""
    return attrs.evolve(result, blocked=False, ask=False, reason="")


def not_approved(result: BeforeToolCallResult, why: str) -> BeforeToolCallResult:
    """The call is blocked; the model sees the hook's question and why it was not run."""
    return attrs.evolve(result, blocked=True, ask=False, reason=f"{result.reason} ({why})")


def _judge(result: BeforeToolCallResult, answer: object) -> BeforeToolCallResult:
    if answer is True:
        return approved(result)
    if answer is False:
        return not_approved(result, "not approved")
    log.warning("approver answered %r, not True or False: the call is blocked", answer)
    return not_approved(result, f"the approver answered {type(answer).__name__}, not a boolean")


def _failed(result: BeforeToolCallResult, exc: Exception) -> BeforeToolCallResult:
    log.warning("approver failed: %s: %s; the call is blocked", type(exc).__name__, exc)
    return not_approved(result, f"the approver failed: {type(exc).__name__}: {exc}")


def settle(
    payload: BeforeToolCallPayload, result: BeforeToolCallResult, approver: Approver | None
) -> BeforeToolCallResult:
    """``result`` with its ask answered by ``approver`` (sync): approved or blocked.

    Raises ``TypeError`` for an approver that answers with an awaitable: a host bug
    (an async approver on the sync API), and the call does not run either way."""
    if not result.ask or not result.blocked:
        return result
    if approver is None:
        return not_approved(result, NO_APPROVER)
    try:
        answer = approver(approval_request(payload, result))
    except Exception as exc:
        return _failed(result, exc)
    if inspect.isawaitable(answer):
        if inspect.iscoroutine(answer):
            answer.close()
        raise TypeError(
            "the session's approver is async: call abefore_tool_call, or give a sync approver"
        )
    return _judge(result, answer)


async def asettle(
    payload: BeforeToolCallPayload, result: BeforeToolCallResult, approver: Approver | None
) -> BeforeToolCallResult:
    """:func:`settle` for the async API: the approver may be sync or async."""
    if not result.ask or not result.blocked:
        return result
    if approver is None:
        return not_approved(result, NO_APPROVER)
    try:
        answer: Any = approver(approval_request(payload, result))
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        return _failed(result, exc)
    return _judge(result, answer)
