"""A session: the host's handle on the runtime, bound to one conversation.

The host passes only each event's own fields; the session fills the base
fields (``conv_id``, ``cwd``, ``invoked_by``, ``recipe_name``) and validates
everything before any hook runs, so a host bug is a ``ValueError`` naming the
field, not a confusing answer from some hook.

A hook's ``ask`` is answered here: the session's ``approver`` (sync or async) is
asked, and the call runs only on a plain ``True``; without an approver it is
blocked (:mod:`kodelet.host.approval`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from ..events import Event
from ..payloads import BasePayload, BeforeToolCallPayload, Message, StructuredToolResult, UsageInfo
from ..results import (
    AfterToolCallResult,
    AfterTurnResult,
    AgentStopResult,
    BeforeToolCallResult,
    UserMessageSendResult,
)
from ..runtime import Runtime
from ..trace import Dispatch
from ..wire import MISSING as _MISSING
from ..wire import build_payload
from .approval import Approver, asettle, settle


class Session:
    def __init__(
        self,
        runtime: Runtime,
        *,
        conv_id: str = "",
        cwd: str | None = None,
        invoked_by: str = "main",
        recipe_name: str = "",
        on_dispatch: Callable[[Dispatch], None] | None = None,
        approver: Approver | None = None,
    ) -> None:
        """``approver`` answers a hook's ``ask`` (True runs the call); without one, a call
        a hook wants approved is blocked."""
        self.runtime = runtime
        self.conv_id = conv_id
        self.cwd = cwd if cwd is not None else str(runtime.cwd)
        self.invoked_by = invoked_by
        self.recipe_name = recipe_name
        self.on_dispatch = on_dispatch
        self.approver = approver
        self.last: Dispatch | None = None

    def payload(self, event: Event, **fields: Any) -> BasePayload:
        """Build and validate the payload for ``event`` from its own fields."""
        base = {
            "conv_id": self.conv_id,
            "cwd": self.cwd,
            "invoked_by": self.invoked_by,
            "recipe_name": self.recipe_name,
        }
        if event is Event.AGENT_STOP and fields.get("invoked_recipe") is None:
            fields["invoked_recipe"] = self.recipe_name
        return build_payload(event, {**base, **fields})

    def _done(self, dispatch: Dispatch) -> Any:
        self.last = dispatch
        if self.on_dispatch is not None:
            self.on_dispatch(dispatch)
        return dispatch.result

    def dispatch(self, event: Event, **fields: Any) -> Any:
        return self._done(self.runtime.dispatch(self.payload(event, **fields)))

    async def adispatch(self, event: Event, **fields: Any) -> Any:
        return self._done(await self.runtime.adispatch(self.payload(event, **fields)))

    # -- sync API ------------------------------------------------------------

    def before_tool_call(
        self,
        tool_name: str = _MISSING,
        tool_input: Mapping[str, Any] | None = None,
        tool_user_id: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> BeforeToolCallResult:
        payload = cast(
            BeforeToolCallPayload, self.payload(Event.BEFORE_TOOL_CALL, **_own(locals()))
        )
        result = self._done(self.runtime.dispatch(payload))
        return settle(payload, result, self.approver)

    def after_tool_call(
        self,
        tool_name: str = _MISSING,
        tool_input: Mapping[str, Any] | None = None,
        tool_output: StructuredToolResult | Mapping[str, Any] = _MISSING,
        tool_user_id: str = "",
    ) -> AfterToolCallResult:
        fields = _own(locals())
        return cast(AfterToolCallResult, self.dispatch(Event.AFTER_TOOL_CALL, **fields))

    def user_message_send(self, message: str = _MISSING) -> UserMessageSendResult:
        result = self.dispatch(Event.USER_MESSAGE_SEND, **_own(locals()))
        return cast(UserMessageSendResult, result)

    def after_turn(
        self,
        turn_number: int = _MISSING,
        *,
        tools_used: bool = False,
        usage: UsageInfo | Mapping[str, int] | None = None,
        auto_compact_enabled: bool = False,
        auto_compact_threshold: float | None = None,
        messages: list[Message] | None = None,
        response: str | None = None,
    ) -> AfterTurnResult:
        fields = _own(locals())
        return cast(AfterTurnResult, self.dispatch(Event.AFTER_TURN, **fields))

    def agent_stop(
        self,
        messages: list[Message] | None = None,
        *,
        usage: UsageInfo | Mapping[str, int] | None = None,
        invoked_recipe: str | None = None,
        auto_compact_enabled: bool = False,
        auto_compact_threshold: float | None = None,
    ) -> AgentStopResult:
        fields = _own(locals())
        return cast(AgentStopResult, self.dispatch(Event.AGENT_STOP, **fields))

    # -- async API -----------------------------------------------------------

    async def abefore_tool_call(
        self,
        tool_name: str = _MISSING,
        tool_input: Mapping[str, Any] | None = None,
        tool_user_id: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> BeforeToolCallResult:
        payload = cast(
            BeforeToolCallPayload, self.payload(Event.BEFORE_TOOL_CALL, **_own(locals()))
        )
        result = self._done(await self.runtime.adispatch(payload))
        return await asettle(payload, result, self.approver)

    async def aafter_tool_call(
        self,
        tool_name: str = _MISSING,
        tool_input: Mapping[str, Any] | None = None,
        tool_output: StructuredToolResult | Mapping[str, Any] = _MISSING,
        tool_user_id: str = "",
    ) -> AfterToolCallResult:
        fields = _own(locals())
        return cast(AfterToolCallResult, await self.adispatch(Event.AFTER_TOOL_CALL, **fields))

    async def auser_message_send(self, message: str = _MISSING) -> UserMessageSendResult:
        result = await self.adispatch(Event.USER_MESSAGE_SEND, **_own(locals()))
        return cast(UserMessageSendResult, result)

    async def aafter_turn(
        self,
        turn_number: int = _MISSING,
        *,
        tools_used: bool = False,
        usage: UsageInfo | Mapping[str, int] | None = None,
        auto_compact_enabled: bool = False,
        auto_compact_threshold: float | None = None,
        messages: list[Message] | None = None,
        response: str | None = None,
    ) -> AfterTurnResult:
        fields = _own(locals())
        return cast(AfterTurnResult, await self.adispatch(Event.AFTER_TURN, **fields))

    async def aagent_stop(
        self,
        messages: list[Message] | None = None,
        *,
        usage: UsageInfo | Mapping[str, int] | None = None,
        invoked_recipe: str | None = None,
        auto_compact_enabled: bool = False,
        auto_compact_threshold: float | None = None,
    ) -> AgentStopResult:
        fields = _own(locals())
        return cast(AgentStopResult, await self.adispatch(Event.AGENT_STOP, **fields))


def _own(args: dict[str, Any]) -> dict[str, Any]:
    """An event method's own arguments (``locals()`` at its start), without ``self``."""
    return {k: v for k, v in args.items() if k != "self"}
