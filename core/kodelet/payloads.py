"""What a host tells the hooks: one attrs class per event, field names as on the wire.

Payloads are frozen so the chaining policy can hand each hook its own
evolved copy without one hook seeing another's in-place edits.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from .events import Event

InvokedBy = Literal["main", "subagent"]


@attrs.frozen
class Message:
    role: str
    content: str


@attrs.frozen(kw_only=True)
class UsageInfo:
    input_tokens: int = 0
    output_tokens: int = 0
    current_context_window: int = 0
    max_context_window: int = 0


@attrs.frozen(kw_only=True)
class StructuredToolResult:
    """A tool's recorded result; ``tool_name`` is ``toolName`` on the wire."""

    tool_name: str = attrs.field(metadata={"wire": "toolName"})
    success: bool
    error: str | None = None
    metadata: dict[str, Any] | None = None
    timestamp: str = ""


@attrs.frozen(kw_only=True)
class BasePayload:
    EVENT: ClassVar[Event]

    conv_id: str = ""
    cwd: str = ""
    invoked_by: InvokedBy = "main"
    recipe_name: str = ""

    @property
    def event(self) -> Event:
        return self.EVENT


@attrs.frozen(kw_only=True)
class BeforeToolCallPayload(BasePayload):
    EVENT: ClassVar[Event] = Event.BEFORE_TOOL_CALL

    tool_name: str
    tool_input: dict[str, Any] = attrs.field(factory=dict)
    tool_user_id: str = ""
    metadata: dict[str, Any] | None = None
    """Where the call comes from, when it is not a tool call the model made (a skill's
    shell line: ``{"origin": "skill_shell_line", ...}``); None (left out) otherwise."""


@attrs.frozen(kw_only=True)
class AfterToolCallPayload(BasePayload):
    EVENT: ClassVar[Event] = Event.AFTER_TOOL_CALL

    tool_name: str
    tool_input: dict[str, Any] = attrs.field(factory=dict)
    tool_output: StructuredToolResult
    tool_user_id: str = ""


@attrs.frozen(kw_only=True)
class UserMessageSendPayload(BasePayload):
    EVENT: ClassVar[Event] = Event.USER_MESSAGE_SEND

    message: str


@attrs.frozen(kw_only=True)
class AfterTurnPayload(BasePayload):
    EVENT: ClassVar[Event] = Event.AFTER_TURN

    turn_number: int
    tools_used: bool = False
    usage: UsageInfo = attrs.field(factory=UsageInfo)
    auto_compact_enabled: bool = False
    auto_compact_threshold: float | None = None
    messages: list[Message] | None = None
    response: str | None = None


@attrs.frozen(kw_only=True)
class AgentStopPayload(BasePayload):
    EVENT: ClassVar[Event] = Event.AGENT_STOP

    messages: list[Message] = attrs.field(factory=list)
    usage: UsageInfo = attrs.field(factory=UsageInfo)
    invoked_recipe: str = ""
    auto_compact_enabled: bool = False
    auto_compact_threshold: float | None = None


PAYLOAD_TYPES: dict[Event, type[BasePayload]] = {
    Event.BEFORE_TOOL_CALL: BeforeToolCallPayload,
    Event.AFTER_TOOL_CALL: AfterToolCallPayload,
    Event.USER_MESSAGE_SEND: UserMessageSendPayload,
    Event.AFTER_TURN: AfterTurnPayload,
    Event.AGENT_STOP: AgentStopPayload,
}


def field_names(event: Event) -> tuple[str, ...]:
    """The payload's wire field names, ``event`` first: also the hookspec's arguments."""
    return ("event", *(a.name for a in attrs.fields(PAYLOAD_TYPES[event])))
