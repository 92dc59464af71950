"""What hooks answer: one attrs class per event, shared by single hooks and merged results.

``additional_context`` (all events but after_turn) is text for the model's next call
(Spec 07's context injection); the policy gathers it from every hook in call order.

``ask`` (before_tool_call) is Claude Code's "ask the user": a hook answers
``{"ask": true, "reason": ...}``, and the merged result that carries it is also
``blocked``, so a host that knows nothing of approvals blocks instead of running the
call; a host with an approver (:class:`kodelet.host.session.Session`) asks."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from .events import Event
from .payloads import Message, StructuredToolResult

# "" and "continue" both mean: no replacement of the conversation.
HookAction = Literal["", "continue", "mutate", "callback"]


@attrs.frozen(kw_only=True)
class BeforeToolCallResult:
    blocked: bool = False
    ask: bool = False
    reason: str = ""
    input: dict[str, Any] | None = None
    additional_context: list[str] | None = None


@attrs.frozen(kw_only=True)
class AfterToolCallResult:
    output: StructuredToolResult | None = None
    additional_context: list[str] | None = None


@attrs.frozen(kw_only=True)
class UserMessageSendResult:
    blocked: bool = False
    reason: str = ""
    additional_context: list[str] | None = None


@attrs.frozen(kw_only=True)
class AfterTurnResult:
    result: HookAction = ""
    messages: list[Message] | None = None
    callback: str = ""
    callback_args: dict[str, str] | None = None


@attrs.frozen(kw_only=True)
class AgentStopResult:
    result: HookAction = ""
    follow_up_messages: list[str] | None = None
    messages: list[Message] | None = None
    callback: str = ""
    callback_args: dict[str, str] | None = None
    additional_context: list[str] | None = None


RESULT_TYPES: dict[Event, type[Any]] = {
    Event.BEFORE_TOOL_CALL: BeforeToolCallResult,
    Event.AFTER_TOOL_CALL: AfterToolCallResult,
    Event.USER_MESSAGE_SEND: UserMessageSendResult,
    Event.AFTER_TURN: AfterTurnResult,
    Event.AGENT_STOP: AgentStopResult,
}
