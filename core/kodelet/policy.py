"""How the answers of several hooks merge, per event (DESIGN.md's merge table).

Each event has a reducer: plain, IO-free code that the sync and the async
drivers both run. A driver asks the reducer for the payload the next hook
should see, calls the hook however it must (function, coroutine, process),
and hands its raw answer to :meth:`Reducer.step` (or its exception to
:meth:`Reducer.raised`): one step converts the answer, holds it to the bounds,
folds it into the merge, records it for the trace and says whether later hooks
still run. The answer never leaves this module until the merged result does.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Protocol

import attrs

from .bounds import BoundsError, bounded_copy, check_model
from .errors import describe
from .events import Event
from .fixes import failure_fix, fix_of
from .kinds import Source
from .payloads import (
    AfterToolCallPayload,
    AgentStopPayload,
    BasePayload,
    BeforeToolCallPayload,
    Message,
)
from .results import (
    RESULT_TYPES,
    AfterToolCallResult,
    AfterTurnResult,
    AgentStopResult,
    BeforeToolCallResult,
    UserMessageSendResult,
)
from .trace import Outcome, RawRecord
from .wire import WireError, converter, result_from_wire

log = logging.getLogger("kodelet.policy")


def _plain(value: Any) -> Any:
    """Nested attrs objects as wire dicts; anything else left for the converter to judge."""
    if attrs.has(type(value)):
        return converter.unstructure(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def coerce_result(event: Event, raw: Any) -> Any:
    """Turn whatever a hook returned into the event's result type (or None).

    Raises ``WireError`` for anything that does not convert: that is the hook's
    failure, never the host's. That includes an answer over the payload bounds
    (a rewritten ``input`` 400 levels deep) or one that cannot be written as JSON
    (a lone surrogate in ``reason``, NaN): charged to this hook, not the next."""
    if raw is None:
        return None
    cls = RESULT_TYPES[event]
    if isinstance(raw, cls):
        # attrs does not check field types: an object goes through the converter too,
        # so BeforeToolCallResult(blocked="yes") fails here, not later in the host.
        try:
            data = {a.name: _plain(getattr(raw, a.name)) for a in attrs.fields(cls)}
        except Exception as exc:
            raise WireError(f"returned a malformed {cls.__name__}: {exc}") from None
        result = result_from_wire(event, data)
    elif isinstance(raw, dict):
        result = result_from_wire(event, raw)
    else:
        raise WireError(f"returned {type(raw).__name__}, expected None, a dict or {cls.__name__}")
    try:
        check_model(result, "result")
    except BoundsError as exc:
        raise WireError(str(exc)) from None
    return result


def valid_messages(messages: list[Message] | None) -> str | None:
    """Why a mutate's messages cannot replace a conversation, or None if they can."""
    if not messages:
        return "mutate without messages"
    for i, m in enumerate(messages):
        if m.role not in ("user", "assistant"):
            return f"messages[{i}].role is {m.role!r}, not 'user' or 'assistant'"
        if not isinstance(m.content, str):
            return f"messages[{i}].content is not a string"
    return None


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


class Hook(Protocol):
    """What a reducer reads of the hook that answered (:class:`kodelet.seam.HookEntry`)."""

    @property
    def name(self) -> str: ...

    @property
    def source(self) -> Source: ...

    @property
    def fail_closed(self) -> bool:
        """Its failure blocks a blocking event."""

    @property
    def native(self) -> bool:
        """A native impl, reported when slow; an adapter's hook keeps its own time limit."""


_NO_ACTION = Outcome.NO_ACTION


class Reducer:
    """Base reducer: holds the current payload, whether the chain has stopped and
    the trace so far (one raw record per hook, in call order).

    ``payload`` is what the next hook must be handed: from the first hook on,
    not the host's own object (after_tool_call hands out a copy). A native hook
    that took longer than ``slow_after`` seconds is logged and traced as slow."""

    event: Event

    stopped = False
    context: tuple[str, ...] = ()
    watches_in_place = False
    """True when a hook's ``None`` must still be folded in: it may have edited the
    payload it was handed in place (after_tool_call's metadata)."""

    def __init__(self, payload: BasePayload, slow_after: float = math.inf) -> None:
        # The host's error, raised before any hook runs, so no hook can be made to fail
        # by the model's input. ``plain``: every string ASCII and every dict a flat map
        # of strings, so a shallow copy of the payload's dicts is a deep one.
        self.plain = check_model(payload, "payload")
        self.payload: BasePayload = payload
        self.slow_after = slow_after
        self.records: list[RawRecord] = []

    def step(self, hook: Hook, raw: Any, took: float) -> bool:
        """One hook's raw answer (``None``, a result object or a wire dict) into the
        merge: converted by the wire's converter, held to the bounds, folded in by the
        event's rule and recorded with ``took``, its duration. Returns True when later
        hooks must not run. Whatever the answer does here is its hook's failure,
        never the host's."""
        slow = took > self.slow_after and hook.native
        if raw is None and not slow and not self.watches_in_place:
            # None is "no action" for every reducer: the common answer skips merging.
            self.records.append((hook.name, hook.source, _NO_ACTION, took))
            return False
        try:
            outcome, detail = self.add(hook.name, coerce_result(self.event, raw))
        except Exception as exc:
            return self.raised(hook, exc, took)
        if type(raw) is dict and not RESULT_FIELDS[self.event].issuperset(raw):
            ignored = foreign_fields(self.event, raw)
            if ignored:
                log.warning("hook %s: %s", hook.name, ignored)
                detail = ignored + (f"; {detail}" if detail else "")
        if outcome is Outcome.ERROR:  # the policy refused the answer: the hook's error
            self.records.append((hook.name, hook.source, outcome, took, detail, None))
            return self.stopped
        if slow:
            log.warning("hook %s is slow: %.2fs on %s", hook.name, took, self.event)
            detail = f"slow: {took:.2f}s" + (f"; {detail}" if detail else "")
        self.records.append((hook.name, hook.source, outcome, took, None, detail))
        return self.stopped

    def raised(self, hook: Hook, exc: BaseException, took: float) -> bool:
        """A hook's failure: logged, recorded, and under ``fail_closed`` (the default)
        a block on the blocking events whose reason names the hook, what failed and
        the fix. Returns True when later hooks must not run."""
        why = describe(exc)
        log.warning("hook %s failed on %s: %s", hook.name, self.event.value, why)
        detail = None
        if hook.fail_closed and self.event.blocking:
            self.fail_closed(hook.name, f"{why}; {failure_fix(hook.name, why, fix_of(exc))}")
            detail = "fail-closed: blocked"
        self.records.append((hook.name, hook.source, Outcome.ERROR, took, why, detail))
        return self.stopped

    def _gather(self, result: Any) -> None:
        """Keep a hook's ``additional_context``, in call order, whatever else it did."""
        more = getattr(result, "additional_context", None)
        if more:
            self.context += tuple(more)

    def _context(self) -> list[str] | None:
        return list(self.context) or None

    def add(self, name: str, result: Any) -> tuple[Outcome, str | None]:
        """Fold one hook's converted answer in; returns its outcome and a detail.
        Its ``additional_context`` is kept whatever else the answer did; an answer
        that did nothing else is a ``context`` outcome, not ``no-action``."""
        self._gather(result)
        outcome, detail = self._fold(name, result)
        if outcome is Outcome.NO_ACTION:
            more = getattr(result, "additional_context", None)
            if more:
                return Outcome.CONTEXT, _context_detail(more)
        return outcome, detail

    def _fold(self, name: str, result: Any) -> tuple[Outcome, str | None]:
        """The event's own merge rule for one answer (``_gather`` already ran)."""
        raise NotImplementedError

    def fail_closed(self, name: str, why: str) -> None:
        """Block because a fail-closed hook failed (blocking events only)."""

    def merged(self) -> Any:
        raise NotImplementedError


def _context_detail(texts: list[str]) -> str:
    """What a ``context`` outcome shows: the start of the first text, and how many more."""
    first = next(iter(str(texts[0]).strip().splitlines()), "")
    if len(first) > 80:
        first = first[:79] + "…"
    return first + (f" (+{len(texts) - 1} more)" if len(texts) > 1 else "")


class _Blocking(Reducer):
    blocked = False
    reason = ""

    def _block(self, reason: str) -> None:
        self.blocked, self.reason, self.stopped = True, reason, True

    def fail_closed(self, name: str, why: str) -> None:
        self._block(f"hook {name} failed (fail-closed): {why}")


_ALLOW = BeforeToolCallResult()  # frozen, so the common answer can be shared


class BeforeToolCallReducer(_Blocking):
    event = Event.BEFORE_TOOL_CALL

    def __init__(self, payload: BeforeToolCallPayload, slow_after: float = math.inf) -> None:
        super().__init__(payload, slow_after)
        # A snapshot, so an impl that edits tool_input in place counts as a rewrite.
        tool_input = payload.tool_input
        self.original = (
            dict(tool_input)
            if self.plain
            else bounded_copy(tool_input, "payload.tool_input", depth=1)
        )

    asked = ""
    """The first asking hook's reason: an ask does not stop the chain, since a later
    guard may still block (a block wins) and the user approves the call as the last
    hook leaves it."""

    def _fold(self, name: str, result: BeforeToolCallResult | None) -> tuple[Outcome, str | None]:
        if result is None:
            return Outcome.NO_ACTION, None
        if result.blocked:
            self._block(result.reason or f"blocked by {name}")
            return Outcome.BLOCKED, self.reason
        current: BeforeToolCallPayload = self.payload  # type: ignore[assignment]
        new = result.input
        rewrote = new is not None and new != current.tool_input
        if new is not None and rewrote:
            self.payload = attrs.evolve(current, tool_input=new)
        if result.ask:
            why = result.reason or f"{name} asks for approval"
            self.asked = self.asked or why
            return Outcome.ACTION, f"ask: {why}" + ("; input rewritten" if rewrote else "")
        if rewrote:
            return Outcome.MODIFIED, None
        # A reason with no block, ask or rewrite changes nothing, but says why the call may
        # go (the rules guard's explicit allow): kept in the trace, for the decision log.
        return Outcome.NO_ACTION, result.reason or None

    def merged(self) -> BeforeToolCallResult:
        if self.blocked:
            return BeforeToolCallResult(
                blocked=True, reason=self.reason, additional_context=self._context()
            )
        final: BeforeToolCallPayload = self.payload  # type: ignore[assignment]
        changed = final.tool_input != self.original
        if self.asked:
            # Blocked too: a host that knows no approver must not run the call.
            return BeforeToolCallResult(
                blocked=True,
                ask=True,
                reason=self.asked,
                input=final.tool_input if changed else None,
                additional_context=self._context(),
            )
        if not changed and not self.context:
            return _ALLOW
        return BeforeToolCallResult(
            input=final.tool_input if changed else None, additional_context=self._context()
        )


class AfterToolCallReducer(Reducer):
    event = Event.AFTER_TOOL_CALL

    def __init__(self, payload: AfterToolCallPayload, slow_after: float = math.inf) -> None:
        # Hooks get their own copy of tool_output: an impl that edits its metadata in
        # place never edits the host's object, and the edit counts as a rewrite (as
        # for tool_input), compared against the host's untouched original.
        # ``seen`` is the metadata as the last hook was handed it, so that hook's
        # in-place edit is traced as its action, not as no-action; to begin with it is
        # the host's own object, which no hook is handed (no second copy).
        super().__init__(payload, slow_after)
        output = payload.tool_output
        self.seen: Any = output.metadata
        if output.metadata is not None:
            metadata = bounded_copy(output.metadata, "payload.tool_output.metadata", depth=2)
            self.payload = attrs.evolve(
                payload, tool_output=attrs.evolve(output, metadata=metadata)
            )
            self.watches_in_place = True
        self.original = output

    def _edited_in_place(self, current: AfterToolCallPayload) -> bool:
        metadata = current.tool_output.metadata
        if metadata == self.seen:
            return False
        self.seen = bounded_copy(metadata, "payload.tool_output.metadata", depth=2)
        return True

    def _fold(self, name: str, result: AfterToolCallResult | None) -> tuple[Outcome, str | None]:
        current: AfterToolCallPayload = self.payload  # type: ignore[assignment]
        if result is None or result.output is None or result.output == current.tool_output:
            if self._edited_in_place(current):
                return Outcome.MODIFIED, "edited tool_output.metadata in place"
            return Outcome.NO_ACTION, None
        self.payload = attrs.evolve(current, tool_output=result.output)
        self.seen = bounded_copy(result.output.metadata, "payload.tool_output.metadata", depth=2)
        self.watches_in_place = self.seen is not None
        return Outcome.MODIFIED, None

    def merged(self) -> AfterToolCallResult:
        final: AfterToolCallPayload = self.payload  # type: ignore[assignment]
        changed = final.tool_output != self.original
        return AfterToolCallResult(
            output=final.tool_output if changed else None, additional_context=self._context()
        )


class UserMessageSendReducer(_Blocking):
    event = Event.USER_MESSAGE_SEND

    def _fold(self, name: str, result: UserMessageSendResult | None) -> tuple[Outcome, str | None]:
        if result is not None and result.blocked:
            self._block(result.reason or f"blocked by {name}")
            return Outcome.BLOCKED, self.reason
        return Outcome.NO_ACTION, None

    def merged(self) -> UserMessageSendResult:
        return UserMessageSendResult(
            blocked=self.blocked, reason=self.reason, additional_context=self._context()
        )


class _FirstActionWins(Reducer):
    """after_turn and agent_stop: every hook runs, the first mutate/callback wins."""

    def __init__(self, payload: BasePayload, slow_after: float = math.inf) -> None:
        super().__init__(payload, slow_after)
        self.winner: AfterTurnResult | AgentStopResult | None = None
        self.winner_name = ""

    def _action(
        self, name: str, result: AfterTurnResult | AgentStopResult
    ) -> tuple[Outcome, str | None] | None:
        if result.result not in ("mutate", "callback"):
            return None
        if result.result == "mutate":
            problem = valid_messages(result.messages)
            if problem:
                log.warning("hook %s: mutate dropped: %s", name, problem)
                return Outcome.ERROR, f"mutate dropped: {problem}"
        elif not result.callback:
            log.warning("hook %s: callback dropped: no callback name", name)
            return Outcome.ERROR, "callback dropped: no callback name"
        if self.winner is not None:
            msg = (
                f"conflict: {result.result} from {name} ignored, "
                f"{self.winner.result} from {self.winner_name} already won"
            )
            log.warning(msg)
            return Outcome.ACTION, msg
        self.winner, self.winner_name = result, name
        return (
            Outcome.ACTION,
            result.result if result.result == "mutate" else f"callback {result.callback}",
        )


class AfterTurnReducer(_FirstActionWins):
    event = Event.AFTER_TURN

    def _fold(self, name: str, result: AfterTurnResult | None) -> tuple[Outcome, str | None]:
        if result is None:
            return Outcome.NO_ACTION, None
        return self._action(name, result) or (Outcome.NO_ACTION, None)

    def merged(self) -> AfterTurnResult:
        w = self.winner
        if w is None:
            return AfterTurnResult()
        return AfterTurnResult(
            result=w.result, messages=w.messages, callback=w.callback, callback_args=w.callback_args
        )


class AgentStopReducer(_FirstActionWins):
    event = Event.AGENT_STOP

    def __init__(self, payload: AgentStopPayload, slow_after: float = math.inf) -> None:
        super().__init__(payload, slow_after)
        self.follow_ups: list[str] = []

    def _fold(self, name: str, result: AgentStopResult | None) -> tuple[Outcome, str | None]:
        if result is None:
            return Outcome.NO_ACTION, None
        outcome = self._action(name, result)
        if result.follow_up_messages:
            self.follow_ups.extend(result.follow_up_messages)
            n = len(result.follow_up_messages)
            detail = f"{n} follow-up message{'s' if n != 1 else ''}"
            if outcome is None or outcome[0] is not Outcome.ERROR:
                return Outcome.ACTION, detail if outcome is None else f"{outcome[1]}; {detail}"
        return outcome or (Outcome.NO_ACTION, None)

    def merged(self) -> AgentStopResult:
        w = self.winner
        follow = list(self.follow_ups) or None
        if w is None:
            return AgentStopResult(follow_up_messages=follow, additional_context=self._context())
        return AgentStopResult(
            result=w.result,
            follow_up_messages=follow,
            messages=w.messages,
            callback=w.callback,
            callback_args=w.callback_args,
            additional_context=self._context(),
        )


REDUCERS: dict[Event, type[Reducer]] = {
    Event.BEFORE_TOOL_CALL: BeforeToolCallReducer,
    Event.AFTER_TOOL_CALL: AfterToolCallReducer,
    Event.USER_MESSAGE_SEND: UserMessageSendReducer,
    Event.AFTER_TURN: AfterTurnReducer,
    Event.AGENT_STOP: AgentStopReducer,
}


def reducer_for(payload: BasePayload, slow_after: float = math.inf) -> Reducer:
    """The event's reducer, once the payload is known to be within the bounds.

    Raises :class:`~kodelet.bounds.BoundsError` (a ``ValueError``) naming the limit
    and the path (``payload.tool_input.a.a.…: nested deeper than 64 levels``) for a
    payload nested too deep, too big or not writable as JSON: the host's error,
    raised before any hook runs, so no hook can be made to fail by the model's input."""
    return REDUCERS[payload.EVENT](payload, slow_after)
