"""Feeds a recorded session through a :class:`~kodelet.host.driver.Driver`.

The recording stands in for the model and the tools: each assistant item is
a model response, each recorded tool output is what the tool "returns". The
hooks and the host logic are the real ones, so what the timeline shows is
what a live agent with these hooks would have done at each point.

Two places where a replay must differ from the recording, and does as a live
host would: a blocked user message never reaches the model, so the recorded
turns that answered it are skipped; and after the conversation is compacted
the recorded context sizes are too large, so later turns are lowered by the
tokens the compaction freed (estimated at four characters a token) -- until
the recording compacts itself, from where its own counts are right again.

Notes (interrupts, command output, a Stop hook's feedback...) join the
history as the model saw them, without ``user_message_send``. A session recorded
in Claude Code (``host: claude-code``) follows its once-per-stop rule, as the
bridge does: after a stop the agent continued from (the replay's follow-ups, or the
recording's own Stop-hook feedback), the next stop's follow-ups are dropped until
the next prompt, because Claude Code says ``stop_hook_active`` there and the bridge
does not continue again. A subagent runs
while the tool call that started it runs, through its own driver with
``invoked_by: "subagent"``, as a live host would run it; a blocked call never
starts it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import attrs

from ..events import Event
from ..host.apply import Applied
from ..host.driver import Driver, ToolOutcome
from ..host.driver import ToolCall as DriverCall
from ..host.session import Session
from ..payloads import Message, UsageInfo
from ..recipes.callbacks import CallbackRegistry
from ..runtime import Runtime
from ..trace import Dispatch, TraceRecord
from ..wire import converter
from .format import (
    AssistantItem,
    CompactionItem,
    Item,
    NoteItem,
    RecordedSession,
    Subagent,
    ToolCall,
    UserItem,
)

CHARS_PER_TOKEN = 4
ONCE_PER_STOP = "Claude Code continues once per stop: stop_hook_active"


@attrs.frozen(kw_only=True)
class Effect:
    """What the host did because of the hooks' merged answer."""

    kind: str
    detail: str = ""


@attrs.define(kw_only=True)
class Step:
    """One fired event (the hooks that answered it and what the host did about it),
    or, with ``event`` None, a note: something in the recording that fires no event.

    ``ref`` names the recorded thing the step is about (a tool call's id, an
    item's index) so two replays of one session can be matched step by step;
    ``agent`` is the subagent's id for steps a subagent fired.
    """

    turn: int
    event: Event | None
    subject: str
    hooks: tuple[TraceRecord, ...] = ()
    effects: list[Effect] = attrs.field(factory=list)
    note: str = ""
    ref: str = ""
    agent: str = ""

    @property
    def duration(self) -> float:
        return sum(r.duration for r in self.hooks)


@attrs.define(kw_only=True)
class Replay:
    """The outcome of a replay: what the report is made of."""

    name: str
    session: RecordedSession
    steps: list[Step]
    hook_order: dict[str, list[str]]
    turns: int = 0
    turns_skipped: int = 0
    tool_calls: int = 0
    final_messages: int = 0
    wall_time: float = 0.0


def one_line(text: str) -> str:
    """Whole, on one line: the table cuts what the terminal cannot show, JSON keeps it all."""
    return " ".join(text.split())


def call_subject(name: str, tool_input: dict[str, Any]) -> str:
    """A tool call in a few words: the command or the path when it has one."""
    for key in ("command", "file_path", "pattern", "path", "url"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return one_line(f"{name}: {value}")
    return one_line(f"{name} {_json(tool_input)}")


def estimate_tokens(messages: list[Message]) -> int:
    return sum(len(m.content) for m in messages) // CHARS_PER_TOKEN


class Player:
    def __init__(
        self,
        runtime: Runtime,
        session: RecordedSession,
        *,
        name: str = "session",
        registry: CallbackRegistry | None = None,
        on_step: Callable[[Step], None] | None = None,
        cwd: str | None = None,
        agent: str = "",
    ) -> None:
        """``cwd`` is the payloads' ``cwd``, by default the runtime's project. Hooks run in
        the payload's cwd, so the transcript's recorded cwd is never used: it is data
        from someone else's session, and a directory it names is not a place to execute
        (another user's ``guard.sh`` would answer for the project's)."""
        self.runtime = runtime
        self.recorded = session
        self.name = name
        self.on_step = on_step
        self.registry = registry
        self.agent = agent
        self.cwd = cwd
        self._dispatches: list[Dispatch] = []
        self.session = Session(
            runtime,
            conv_id=session.conv_id,
            cwd=self.cwd,
            invoked_by="subagent" if agent else session.invoked_by,
            recipe_name=session.recipe_name,
            on_dispatch=self._dispatches.append,
        )
        self.driver = Driver(
            self.session,
            max_context_window=session.max_context_window,
            auto_compact_enabled=session.auto_compact.enabled,
            auto_compact_threshold=session.auto_compact.threshold,
            registry=registry,
        )
        self.steps: list[Step] = []
        self._freed = 0
        self._ref = ""
        self.once_per_stop = session.host == "claude-code"
        self.stop_hook_active = False

    def _take(self) -> list[Dispatch]:
        """The dispatches the driver made since the last call, oldest first."""
        taken = list(self._dispatches)
        self._dispatches.clear()
        return taken

    def _step(
        self,
        turn: int,
        event: Event,
        subject: str,
        dispatch: Dispatch | None,
        effects: list[Effect],
    ) -> None:
        step = Step(
            turn=turn,
            event=event,
            subject=subject,
            hooks=dispatch.trace if dispatch is not None else (),
            effects=effects,
            ref=self._ref,
            agent=self.agent,
        )
        self._add(step)

    def _add(self, step: Step) -> None:
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def play(self) -> Replay:
        started = time.perf_counter()
        replay = Replay(
            name=self.name, session=self.recorded, steps=self.steps, hook_order=self._hook_order()
        )
        self._play(replay, self.recorded.items, "")
        replay.final_messages = len(self.driver.messages)
        replay.wall_time = time.perf_counter() - started
        return replay

    def _play(self, replay: Replay, items: tuple[Item, ...], prefix: str) -> None:
        skipping = False
        for index, item in enumerate(items):
            self._ref = f"{prefix}{index}"
            if isinstance(item, UserItem):
                skipping = not self._user(item, _answers(items, index))
            elif isinstance(item, NoteItem):
                self._note(item)
            elif isinstance(item, CompactionItem):
                self._recorded_compaction(item)
            elif skipping:
                replay.turns_skipped += 1
            else:
                replay.turns += 1
                replay.tool_calls += len(item.tool_calls)
                self._turn(item, replay)

    def _hook_order(self) -> dict[str, list[str]]:
        return {e.value: [h.name for h in self.runtime.hooks(e)] for e in Event}

    # -- items -----------------------------------------------------------------

    def _note(self, item: NoteItem) -> None:
        if item.kind == "stop-hook-feedback":
            self.stop_hook_active = True
        self.driver.add_user_message(item.content)
        turn = self.driver.turn_number
        self._add(
            Step(
                turn=turn,
                event=None,
                subject=" ".join(item.content.split()),
                note=item.kind,
                ref=self._ref,
                agent=self.agent,
            )
        )

    def _recorded_compaction(self, item: CompactionItem) -> None:
        """The recording compacted itself: its history is now the summary, and its later
        token counts are right as recorded, whatever the replay freed before."""
        self.driver.replace_messages(
            [Message(role="user", content=item.summary)] if item.summary else []
        )
        self._freed = 0
        before = f", {item.pre_tokens} tokens before" if item.pre_tokens is not None else ""
        trigger = item.trigger or "unknown trigger"
        self._add(
            Step(
                turn=self.driver.turn_number,
                event=None,
                subject=f"the recorded agent compacted its context ({trigger}{before})",
                note="recorded-compaction",
                ref=self._ref,
                agent=self.agent,
            )
        )

    def _user(self, item: UserItem, answers: int) -> bool:
        self.stop_hook_active = False
        turn = self.driver.turn_number + 1
        outcome = self.driver.send_user_message(item.content)
        effects = []
        if not outcome.sent:
            skipped = f"{answers} recorded turn{'s' if answers != 1 else ''} skipped"
            detail = f"not sent to the model; {skipped}"
            effects.append(Effect(kind="message-blocked", detail=detail))
        self._step(
            turn, Event.USER_MESSAGE_SEND, one_line(item.content), _only(self._take()), effects
        )
        return outcome.sent

    def _turn(self, item: AssistantItem, replay: Replay) -> None:
        calls = [DriverCall(id=c.id, name=c.name, input=c.input) for c in item.tool_calls]
        turn = self.driver.begin_turn(item.content, calls)
        item_ref = self._ref
        for recorded in item.tool_calls:
            self._ref = f"{item_ref}:{recorded.id}"
            nested: list[Step] = []
            outcome = self.driver.call_tool(
                recorded.name,
                recorded.input,
                recorded.id,
                run=lambda _input, call=recorded, out=nested: self._run(call, out, replay),  # type: ignore[misc]
                timestamp=recorded.output.timestamp,
            )
            self._tool_steps(turn, recorded.input, outcome, nested)
        self._ref = item_ref
        usage = self._usage(item)
        before = len(self.driver.messages)
        result = self.driver.end_turn(usage)
        window = usage.max_context_window
        ratio = f" ({usage.current_context_window / window:.0%})" if window else ""
        subject = f"context {usage.current_context_window}/{window}{ratio}"
        self._step(
            turn,
            Event.AFTER_TURN,
            subject,
            _only(self._take()),
            self._applied(result.applied, before),
        )
        if not item.tool_calls:
            before = len(self.driver.messages)
            stop = self.driver.stop(follow_up=not (self.once_per_stop and self.stop_hook_active))
            effects = self._applied(stop.applied, before)
            effects += [Effect(kind="follow-up", detail=one_line(t)) for t in stop.follow_ups]
            effects += [
                Effect(kind="follow-up-dropped", detail=f"{one_line(t)} ({ONCE_PER_STOP})")
                for t in stop.dropped
            ]
            self.stop_hook_active = self.stop_hook_active or bool(stop.follow_ups)
            self._step(turn, Event.AGENT_STOP, f"{before} messages", _only(self._take()), effects)

    def _run(self, call: ToolCall, nested: list[Step], replay: Replay) -> Any:
        """The recorded output; a subagent the call started plays first, into ``nested``."""
        if call.subagent is not None:
            self._subagent(call.subagent, call.id, nested, replay)
        return call.output

    def _subagent(self, sub: Subagent, call_id: str, nested: list[Step], replay: Replay) -> None:
        recorded = attrs.evolve(self.recorded, items=sub.items, invoked_by="subagent")
        player = Player(
            self.runtime,
            recorded,
            name=self.name,
            registry=self.registry,
            on_step=nested.append,
            cwd=self.cwd,
            agent=sub.agent_id or call_id,
        )
        player._play(replay, sub.items, f"{self._ref}>")

    def _tool_steps(
        self, turn: int, original: dict[str, Any], outcome: ToolOutcome, nested: list[Step]
    ) -> None:
        before, after = self._take()
        effects: list[Effect] = []
        if outcome.blocked:
            detail = "not run; the model gets the blocked result"
            effects.append(Effect(kind="call-blocked", detail=detail))
        elif outcome.input_rewritten:
            effects.append(Effect(kind="input-rewritten", detail=_json(outcome.input)))
        name = outcome.tool_name
        self._step(turn, Event.BEFORE_TOOL_CALL, call_subject(name, original), before, effects)
        for step in nested:
            self._add(step)
        out = outcome.output
        status = "ok" if out.success else f"error: {out.error or ''}"
        effects = []
        if outcome.output_rewritten:
            effects.append(
                Effect(kind="output-rewritten", detail=_json(converter.unstructure(out)))
            )
        self._step(turn, Event.AFTER_TOOL_CALL, one_line(f"{name} {status}"), after, effects)

    def _usage(self, item: AssistantItem) -> UsageInfo:
        usage = item.usage.resolve(self.recorded.max_context_window)
        if not self._freed:
            return usage
        return attrs.evolve(
            usage,
            input_tokens=max(usage.input_tokens - self._freed, 0),
            current_context_window=max(usage.current_context_window - self._freed, 0),
        )

    def _applied(self, applied: Applied, before: int) -> list[Effect]:
        effects: list[Effect] = []
        if applied.messages is not None:
            after = len(applied.messages)
            what = "mutate" if applied.action == "mutate" else "callback"
            effects.append(Effect(kind="compacted", detail=f"{what}: {before} messages → {after}"))
            freed = self.driver.usage.current_context_window - estimate_tokens(applied.messages)
            self._freed += max(freed, 0)
        if applied.warning:
            effects.append(Effect(kind="warning", detail=one_line(applied.warning)))
        return effects


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _answers(items: tuple[Item, ...], index: int) -> int:
    """How many recorded turns answer the user message at ``index``."""
    count = 0
    for item in items[index + 1 :]:
        if isinstance(item, UserItem):
            break
        count += isinstance(item, AssistantItem)
    return count


def _only(dispatches: list[Dispatch]) -> Dispatch | None:
    return dispatches[-1] if dispatches else None
