"""The session driver: an agent loop's side of the five events, in the seeds' order.

ADR 021 §8 and ADR 025 §6-7 spread the host's duties over a provider's
``SendMessage``: fire ``user_message_send`` before the message joins the
history, wrap every tool run in ``before_tool_call`` / ``after_tool_call``,
fire ``after_turn`` after each model response and apply its
``mutate`` / ``callback``, and, when a response used no tools, fire
``agent_stop`` and continue with its follow-ups. Every host must do exactly
this, so it lives here once: a real loop calls :meth:`Driver.run` (or the
step methods, when the model call is its own), and ``kodelet replay`` calls
the step methods with a recorded session standing in for the model.

The driver keeps the history a host keeps, as the seeds' ``Message`` list
(role + text): one user message per message sent or follow-up, one assistant
message per turn holding the response, each tool use and each tool result (see
:func:`assistant_text` and :func:`tool_result_text`), so hooks that read
``messages`` see which tools ran, as ADR 025's ``lint_reminder`` expects.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeAlias, TypeVar, cast

import attrs

from ..payloads import Message, StructuredToolResult, UsageInfo
from ..recipes.callbacks import CallbackRegistry
from ..recipes.runners import ToolCall as ToolRecord
from ..results import AfterToolCallResult, BeforeToolCallResult, UserMessageSendResult
from ..wire import converter, structure
from .apply import Applied, apply_after_turn, apply_agent_stop
from .session import Session

T = TypeVar("T")
MaybeAwaitable: TypeAlias = T | Awaitable[T]
ToolReturn: TypeAlias = StructuredToolResult | Mapping[str, Any]
ToolRunner = Callable[[str, dict[str, Any]], ToolReturn]


def now_timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def blocked_tool_result(
    tool_name: str, reason: str, timestamp: str | None = None
) -> StructuredToolResult:
    """What the model gets back for a blocked call, in place of the tool's output.

    The seeds' ``NewBlockedToolResult(reason)``: a failed result whose ``error``
    is the blocking hook's reason, verbatim, with no metadata.
    """
    return StructuredToolResult(
        tool_name=tool_name,
        success=False,
        error=reason,
        timestamp=timestamp if timestamp is not None else now_timestamp(),
    )


def usage_info(value: UsageInfo | Mapping[str, Any] | None) -> UsageInfo | None:
    """A model client's usage as the payloads carry it: hosts often hold it as a plain dict,
    and Session takes one, so the driver does too."""
    if value is None or isinstance(value, UsageInfo):
        return value
    if isinstance(value, Mapping):
        return structure(value, UsageInfo, "usage")
    raise TypeError(f"usage must be a UsageInfo or a mapping, got {type(value).__name__}")


def tool_output(value: object, runner: str) -> StructuredToolResult:
    """What a tool runner returned, as a ``StructuredToolResult``.

    A wire dict (``toolName``, ``success``, ...) is structured; anything else is
    the host's mistake, reported against the runner here rather than as a
    payload error from deep inside the next hook dispatch.
    """
    if isinstance(value, StructuredToolResult):
        return value
    if isinstance(value, Mapping):
        return structure(value, StructuredToolResult, f"{runner} result")
    raise TypeError(
        f"{runner} must return a StructuredToolResult or its wire dict, "
        f"got {type(value).__name__}: {value!r:.80}"
    )


@attrs.frozen(kw_only=True)
class ToolCall:
    """One tool call the model asked for."""

    id: str
    name: str
    input: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Reply:
    """One model response, as :meth:`Driver.run`'s ``step`` returns it."""

    content: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: UsageInfo | None = attrs.field(default=None, converter=usage_info)


@attrs.frozen(kw_only=True)
class MessageOutcome:
    sent: bool
    reason: str = ""


@attrs.frozen(kw_only=True)
class ToolOutcome:
    """What happened to one tool call: the input it ran with and the output the model sees."""

    tool_name: str
    tool_user_id: str
    input: dict[str, Any]
    output: StructuredToolResult
    blocked: bool = False
    reason: str = ""
    input_rewritten: bool = False
    output_rewritten: bool = False


@attrs.frozen(kw_only=True)
class TurnOutcome:
    turn_number: int
    tools_used: bool
    applied: Applied


@attrs.frozen(kw_only=True)
class StopOutcome:
    follow_ups: tuple[str, ...]
    applied: Applied
    dropped: tuple[str, ...] = ()
    """Follow-ups the hooks asked for that the host did not continue with."""


@attrs.frozen(kw_only=True)
class RunOutcome:
    """What :meth:`Driver.run` did with one user message."""

    sent: MessageOutcome
    turns: int = 0
    stopped: bool = False


def assistant_text(response: str, tool_calls: Iterable[ToolCall] = ()) -> str:
    """An assistant message: the response, then one ``[tool_use NAME ID] INPUT`` line per call."""
    lines = [response] if response else []
    for call in tool_calls:
        lines.append(
            f"[tool_use {call.name} {call.id}] {json.dumps(call.input, ensure_ascii=False)}"
        )
    return "\n".join(lines)


def tool_result_text(tool_user_id: str, output: StructuredToolResult) -> str:
    """A tool result line, ``[tool_result NAME ID ok|error] RESULT-JSON``.

    It joins the turn's assistant message rather than standing as a user
    message of its own (where the Anthropic API puts it): in a role-and-text
    history, a user message reads as something the user said, and a
    summarizer would take tool output for the user's instructions."""
    status = "ok" if output.success else "error"
    body = json.dumps(converter.unstructure(output), ensure_ascii=False)
    return f"[tool_result {output.tool_name} {tool_user_id} {status}] {body}"


class Driver:
    """Fires the five events for one conversation and keeps its message history.

    ``registry`` resolves ``callback`` results (``CallbackRegistry.default(places)``
    gives the compact recipe); ``save_conversation`` is called after every
    replacement of the history, as ADR 025 §6 asks; ``on_replace`` sees the
    new history (hosts that keep their own richer history sync it there).
    """

    def __init__(
        self,
        session: Session,
        *,
        messages: Iterable[Message] = (),
        max_context_window: int = 0,
        auto_compact_enabled: bool = False,
        auto_compact_threshold: float | None = None,
        invoked_recipe: str | None = None,
        registry: CallbackRegistry | None = None,
        save_conversation: Callable[[], None] | None = None,
        on_replace: Callable[[list[Message]], None] | None = None,
        clock: Callable[[], str] = now_timestamp,
    ) -> None:
        self.session = session
        self.messages: list[Message] = list(messages)
        self.max_context_window = max_context_window
        self.auto_compact_enabled = auto_compact_enabled
        self.auto_compact_threshold = auto_compact_threshold
        self.invoked_recipe = session.recipe_name if invoked_recipe is None else invoked_recipe
        self.registry = registry
        self.save_conversation = save_conversation
        self.on_replace = on_replace
        self.clock = clock
        self.turn_number = 0
        self.usage = UsageInfo(max_context_window=max_context_window)
        self.response = ""
        self.tools_used = False
        self.tool_records: list[ToolRecord] = []

    @property
    def auto_compact(self) -> bool:
        """Reported as off while a callback runs, so a compaction cannot trigger itself."""
        in_callback = self.registry is not None and self.registry.in_callback
        return self.auto_compact_enabled and not in_callback

    # -- history ---------------------------------------------------------------

    def add_user_message(self, text: str) -> None:
        """Append without hooks: what follow-ups use (the seeds' ``AddUserMessage``)."""
        self.messages.append(Message(role="user", content=text))

    def _add_to_turn(self, line: str) -> None:
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "assistant":
            text = f"{last.content}\n{line}" if last.content else line
            self.messages[-1] = Message(role="assistant", content=text)
        else:
            self.messages.append(Message(role="assistant", content=line))

    def replace_messages(self, messages: Sequence[Message]) -> None:
        """Swap the history (what mutate and callback do); the tool records it described go too,
        their gist now lives in the new messages."""
        self.messages = list(messages)
        self.tool_records.clear()
        if self.on_replace is not None:
            self.on_replace(list(self.messages))

    def _save(self) -> None:
        if self.save_conversation is not None:
            self.save_conversation()

    # -- the steps -------------------------------------------------------------
    #
    # Each step is: fields for the event -> dispatch -> what the host does with
    # the merged answer. The sync and async methods share everything but the
    # dispatch, so the two can never drift apart.

    def send_user_message(self, text: str) -> MessageOutcome:
        """``user_message_send``; a blocked message never joins the history."""
        return self._sent(text, self.session.user_message_send(text))

    def _sent(self, text: str, result: UserMessageSendResult) -> MessageOutcome:
        if result.blocked:
            return MessageOutcome(sent=False, reason=result.reason)
        self.add_user_message(text)
        return MessageOutcome(sent=True)

    def begin_turn(self, response: str, tool_calls: Sequence[ToolCall] = ()) -> int:
        """Record a model response (and the calls it asks for); returns its turn number."""
        self.turn_number += 1
        self.response = response
        self.tools_used = bool(tool_calls)
        self.messages.append(
            Message(role="assistant", content=assistant_text(response, tool_calls))
        )
        return self.turn_number

    def call_tool(
        self,
        name: str,
        tool_input: Mapping[str, Any],
        tool_user_id: str = "",
        *,
        run: Callable[[dict[str, Any]], ToolReturn],
        timestamp: str | None = None,
    ) -> ToolOutcome:
        """``before_tool_call`` → the tool (unless blocked) → ``after_tool_call``.

        A blocked call does not run; its output is :func:`blocked_tool_result`
        (stamped with ``timestamp``, default the driver's ``clock``), and ``after_tool_call`` still
        fires with it, as in the seeds. ``run`` gets the possibly rewritten input.
        """
        original = dict(tool_input)
        before = self.session.before_tool_call(name, original, tool_user_id)
        used, output = self._planned(name, original, before, timestamp)
        if output is None:
            output = tool_output(run(used), "run")
        after = self.session.after_tool_call(name, used, output, tool_user_id)
        return self._called(name, tool_user_id, used, output, before, after)

    def _planned(
        self,
        name: str,
        original: dict[str, Any],
        before: BeforeToolCallResult,
        timestamp: str | None,
    ) -> tuple[dict[str, Any], StructuredToolResult | None]:
        """The input to run with, and the output already decided (a block) or None."""
        if before.blocked:
            stamp = timestamp if timestamp is not None else self.clock()
            return original, blocked_tool_result(name, before.reason, stamp)
        return (dict(before.input) if before.input is not None else original), None

    def _called(
        self,
        name: str,
        tool_user_id: str,
        used: dict[str, Any],
        output: StructuredToolResult,
        before: BeforeToolCallResult,
        after: AfterToolCallResult,
    ) -> ToolOutcome:
        final = after.output if after.output is not None else output
        self.tools_used = True
        self._add_to_turn(tool_result_text(tool_user_id, final))
        self.tool_records.append(
            ToolRecord(tool_name=name, tool_input=used, success=final.success, error=final.error)
        )
        return ToolOutcome(
            tool_name=name,
            tool_user_id=tool_user_id,
            input=used,
            output=final,
            blocked=before.blocked,
            reason=before.reason,
            input_rewritten=before.input is not None and not before.blocked,
            output_rewritten=after.output is not None,
        )

    def end_turn(self, usage: UsageInfo | Mapping[str, Any] | None = None) -> TurnOutcome:
        """``after_turn`` with this turn's usage; a ``mutate``/``callback`` applies at once."""
        result = self.session.after_turn(**self._turn_fields(usage))
        return self._turned(apply_after_turn(result, **self._apply_args()))

    def _turn_fields(self, given: UsageInfo | Mapping[str, Any] | None) -> dict[str, Any]:
        usage = usage_info(given)
        if usage is not None:
            if usage.max_context_window == 0 and self.max_context_window:
                usage = attrs.evolve(usage, max_context_window=self.max_context_window)
            self.usage = usage
        return {
            "turn_number": self.turn_number,
            "tools_used": self.tools_used,
            "usage": self.usage,
            "auto_compact_enabled": self.auto_compact,
            "auto_compact_threshold": self.auto_compact_threshold,
            "messages": list(self.messages),
            "response": self.response,
        }

    def _apply_args(self) -> dict[str, Any]:
        return {
            "messages": list(self.messages),
            "replace_messages": self.replace_messages,
            "save_conversation": self._save if self.save_conversation is not None else None,
            "registry": self.registry,
            "tool_calls": list(self.tool_records),
        }

    def _turned(self, applied: Applied) -> TurnOutcome:
        return TurnOutcome(
            turn_number=self.turn_number, tools_used=self.tools_used, applied=applied
        )

    def stop(self, *, follow_up: bool = True) -> StopOutcome:
        """``agent_stop``: apply its ``mutate``/``callback``, then append its follow-ups.

        When follow-ups come back the agent is not done: a live loop asks the
        model again (``run`` does), a replay only records them. ``follow_up=False``
        drops them (``dropped``): a host that, like Claude Code, continues for a stop's
        follow-ups only once per stop.
        """
        result = self.session.agent_stop(**self._stop_fields())
        return self._stopped(apply_agent_stop(result, **self._apply_args()), follow_up)

    def _stop_fields(self) -> dict[str, Any]:
        return {
            "messages": list(self.messages),
            "usage": self.usage,
            "invoked_recipe": self.invoked_recipe,
            "auto_compact_enabled": self.auto_compact,
            "auto_compact_threshold": self.auto_compact_threshold,
        }

    def _stopped(self, applied: Applied, follow_up: bool = True) -> StopOutcome:
        follow_ups = tuple(applied.follow_ups)
        if not follow_up:
            return StopOutcome(follow_ups=(), applied=applied, dropped=follow_ups)
        for text in follow_ups:
            self.add_user_message(text)
        return StopOutcome(follow_ups=follow_ups, applied=applied)

    # -- the loop --------------------------------------------------------------

    def run(
        self,
        message: str,
        *,
        step: Callable[[list[Message]], Reply],
        run_tool: ToolRunner,
        max_turns: int = 50,
    ) -> RunOutcome:
        """One user message through a whole agent loop.

        ``step`` is the model call (history in, :class:`Reply` out) and
        ``run_tool`` runs one tool (name and input in, a ``StructuredToolResult``
        or its wire dict out); everything between them is the driver's.
        Stops when a response uses no tools and ``agent_stop`` asks for no
        follow-up, or after ``max_turns`` model calls.
        """
        sent = self.send_user_message(message)
        if not sent.sent:
            return RunOutcome(sent=sent)
        turns = 0
        while turns < max_turns:
            reply = step(list(self.messages))
            turns += 1
            self.begin_turn(reply.content, reply.tool_calls)
            for call in reply.tool_calls:
                self.call_tool(
                    call.name,
                    call.input,
                    call.id,
                    run=lambda used, name=call.name: tool_output(  # type: ignore[misc]
                        run_tool(name, used), f"run_tool({name!r}, ...)"
                    ),
                )
            self.end_turn(reply.usage)
            if not reply.tool_calls and not self.stop().follow_ups:
                return RunOutcome(sent=sent, turns=turns, stopped=True)
        return RunOutcome(sent=sent, turns=turns, stopped=False)

    # -- async twins -----------------------------------------------------------
    #
    # Hooks run through the runtime's async dispatch (asyncio subprocesses); a
    # callback recipe runs in a worker thread so a slow summarizer does not
    # stall the event loop. ``run`` callables may be plain or async.

    async def asend_user_message(self, text: str) -> MessageOutcome:
        return self._sent(text, await self.session.auser_message_send(text))

    async def acall_tool(
        self,
        name: str,
        tool_input: Mapping[str, Any],
        tool_user_id: str = "",
        *,
        run: Callable[[dict[str, Any]], MaybeAwaitable[ToolReturn]],
        timestamp: str | None = None,
    ) -> ToolOutcome:
        original = dict(tool_input)
        before = await self.session.abefore_tool_call(name, original, tool_user_id)
        used, output = self._planned(name, original, before, timestamp)
        if output is None:
            output = tool_output(await _resolve(run(used)), "run")
        after = await self.session.aafter_tool_call(name, used, output, tool_user_id)
        return self._called(name, tool_user_id, used, output, before, after)

    async def aend_turn(self, usage: UsageInfo | Mapping[str, Any] | None = None) -> TurnOutcome:
        result = await self.session.aafter_turn(**self._turn_fields(usage))
        applied = await asyncio.to_thread(apply_after_turn, result, **self._apply_args())
        return self._turned(applied)

    async def astop(self, *, follow_up: bool = True) -> StopOutcome:
        result = await self.session.aagent_stop(**self._stop_fields())
        applied = await asyncio.to_thread(apply_agent_stop, result, **self._apply_args())
        return self._stopped(applied, follow_up)

    async def arun(
        self,
        message: str,
        *,
        step: Callable[[list[Message]], MaybeAwaitable[Reply]],
        run_tool: Callable[[str, dict[str, Any]], MaybeAwaitable[ToolReturn]],
        max_turns: int = 50,
    ) -> RunOutcome:
        """The async twin of :meth:`run`."""
        sent = await self.asend_user_message(message)
        if not sent.sent:
            return RunOutcome(sent=sent)
        turns = 0
        while turns < max_turns:
            reply = await _resolve(step(list(self.messages)))
            turns += 1
            self.begin_turn(reply.content, reply.tool_calls)
            for call in reply.tool_calls:
                await self.acall_tool(
                    call.name,
                    call.input,
                    call.id,
                    run=lambda used, name=call.name: _arun_tool(  # type: ignore[misc]
                        run_tool, name, used
                    ),
                )
            await self.aend_turn(reply.usage)
            if not reply.tool_calls and not (await self.astop()).follow_ups:
                return RunOutcome(sent=sent, turns=turns, stopped=True)
        return RunOutcome(sent=sent, turns=turns, stopped=False)


async def _arun_tool(
    run_tool: Callable[[str, dict[str, Any]], MaybeAwaitable[ToolReturn]],
    name: str,
    used: dict[str, Any],
) -> StructuredToolResult:
    return tool_output(await _resolve(run_tool(name, used)), f"run_tool({name!r}, ...)")


async def _resolve(value: MaybeAwaitable[T]) -> T:
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value
