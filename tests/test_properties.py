"""Properties: whatever JSON a hook answers with, no dispatch ever raises; every
payload (and result) model survives a trip through the wire format unchanged."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kodelet import load_runtime
from kodelet.events import Event
from kodelet.kinds import Source
from kodelet.markers import hookimpl
from kodelet.payloads import (
    PAYLOAD_TYPES,
    AfterToolCallPayload,
    AfterTurnPayload,
    AgentStopPayload,
    BasePayload,
    BeforeToolCallPayload,
    Message,
    StructuredToolResult,
    UsageInfo,
    UserMessageSendPayload,
)
from kodelet.policy import coerce_result, reducer_for
from kodelet.results import (
    RESULT_TYPES,
    AfterToolCallResult,
    AfterTurnResult,
    AgentStopResult,
    BeforeToolCallResult,
    UserMessageSendResult,
)
from kodelet.runtime import Runtime
from kodelet.testing import discovered, write_hook
from kodelet.trace import Outcome
from kodelet.wire import converter, payload_from_wire, payload_to_wire, result_from_wire
from kodelet.wire import result_to_wire as merged_to_wire

# Keys a hook might plausibly print, so generated objects often get past the first field.
KEYS = st.sampled_from(
    [
        "blocked",
        "reason",
        "input",
        "output",
        "result",
        "messages",
        "callback",
        "callback_args",
        "follow_up_messages",
        "toolName",
        "success",
        "error",
        "metadata",
        "timestamp",
        "role",
        "content",
    ]
)
ACTIONS = st.sampled_from(["", "continue", "mutate", "callback", "compact", "MUTATE"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | ACTIONS
)
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=24,
)
ANSWERS = st.dictionaries(KEYS, JSON, max_size=6) | JSON


def payload_for(event: Event) -> BasePayload:
    output = StructuredToolResult(tool_name="bash", success=True)
    return {
        Event.BEFORE_TOOL_CALL: BeforeToolCallPayload(tool_name="bash", tool_input={"a": 1}),
        Event.AFTER_TOOL_CALL: AfterToolCallPayload(tool_name="bash", tool_output=output),
        Event.USER_MESSAGE_SEND: UserMessageSendPayload(message="hi"),
        Event.AFTER_TURN: AfterTurnPayload(turn_number=1),
        Event.AGENT_STOP: AgentStopPayload(),
    }[event]


class Answer:
    """A native hook on every event that answers with whatever the test last set."""

    def __init__(self) -> None:
        self.value: Any = None

    def _answer(self) -> Any:
        return self.value

    @hookimpl
    def before_tool_call(self) -> Any:
        return self._answer()

    @hookimpl
    def after_tool_call(self) -> Any:
        return self._answer()

    @hookimpl
    def user_message_send(self) -> Any:
        return self._answer()

    @hookimpl
    def after_turn(self) -> Any:
        return self._answer()

    @hookimpl
    def agent_stop(self) -> Any:
        return self._answer()


@attrs.frozen
class StandIn:
    """A hook as the reducer's step reads it (kodelet.policy.Hook)."""

    name: str
    source: Source = Source.PYTHON
    fail_closed: bool = True
    native: bool = True


@given(event=st.sampled_from(list(Event)), answers=st.lists(ANSWERS, min_size=1, max_size=3))
@settings(max_examples=200, deadline=None)
def test_any_json_through_coerce_and_policy_never_raises(event: Event, answers: list[Any]) -> None:
    red = reducer_for(payload_for(event))
    for i, raw in enumerate(answers):
        raw = json.loads(json.dumps(raw))
        try:
            result = coerce_result(event, raw)
        except ValueError:
            refused = True  # the hook's failure: the step records it and moves on
        else:
            refused = False
            assert result is None or isinstance(result, RESULT_TYPES[event])
        stop = red.step(StandIn(f"h{i}"), raw, 0.0)
        (record,) = red.records[i:]
        assert record[0] == f"h{i}"
        assert record[2] is Outcome.ERROR or not refused
        assert stop is red.stopped
        if stop:
            break
    merged = red.merged()
    assert isinstance(merged, RESULT_TYPES[event])
    json.dumps(merged_to_wire(event, merged))


@pytest.fixture(scope="module")
def answer_runtime(tmp_path_factory: pytest.TempPathFactory) -> Any:
    answer = Answer()
    cwd = tmp_path_factory.mktemp("props")
    with load_runtime(
        cwd=cwd,
        home=cwd / "home",
        entry_points=False,
        builtins=False,
        executables=False,
        plugins=[("answer", answer)],
    ) as rt:
        yield rt, answer


@given(event=st.sampled_from(list(Event)), raw=ANSWERS)
@settings(max_examples=200, deadline=None)
def test_any_json_from_a_native_never_raises_out_of_dispatch(
    answer_runtime: Any, event: Event, raw: Any
) -> None:
    rt, answer = answer_runtime
    answer.value = json.loads(json.dumps(raw))
    d = rt.dispatch(payload_for(event))
    (rec,) = d.trace
    assert isinstance(d.result, RESULT_TYPES[event])
    assert rec.outcome in Outcome
    if rec.outcome is Outcome.ERROR:
        assert rec.error
    json.dumps(merged_to_wire(event, d.result))


@pytest.fixture(scope="module")
def printing_hooks(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One executable per event that prints the bytes in ``answer``: real processes."""
    cwd = tmp_path_factory.mktemp("printing")
    answer = cwd / "answer"
    answer.write_bytes(b"")
    for event in Event:
        body = f"cat >/dev/null\ncat '{answer}'\n"
        text = f'#!/bin/sh\nif [ "$1" = hook ]; then echo {event.value}; exit 0; fi\n{body}'
        write_hook(cwd / ".kodelet" / "hooks", event.value, text)
    with load_runtime(cwd=cwd, home=cwd / "home", entry_points=False, builtins=False) as rt:
        assert [h.status for h in discovered(rt)] == ["active"] * 5
        yield rt, answer


def _check_dispatch(rt: Runtime, event: Event) -> None:
    d = rt.dispatch(payload_for(event))
    (rec,) = d.trace
    assert isinstance(d.result, RESULT_TYPES[event])
    assert rec.name == event.value
    json.dumps(merged_to_wire(event, d.result))


@given(event=st.sampled_from(list(Event)), raw=ANSWERS)
@settings(max_examples=60, deadline=None)
def test_any_json_printed_by_an_executable_never_raises(
    printing_hooks: Any, event: Event, raw: Any
) -> None:
    rt, answer = printing_hooks
    answer.write_text(json.dumps(raw, ensure_ascii=False) + "\n")
    _check_dispatch(rt, event)


@given(event=st.sampled_from(list(Event)), raw=st.binary(max_size=200))
@settings(max_examples=40, deadline=None)
def test_any_bytes_printed_by_an_executable_never_raise(
    printing_hooks: Any, event: Event, raw: bytes
) -> None:
    rt, answer = printing_hooks
    answer.write_bytes(raw)
    _check_dispatch(rt, event)


# -- wire round-trips -------------------------------------------------------------------

TEXT = st.text(max_size=30)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
OBJECTS = st.dictionaries(st.text(max_size=8), JSON, max_size=5)
BASE: dict[str, st.SearchStrategy[Any]] = {
    "conv_id": TEXT,
    "cwd": TEXT,
    "invoked_by": st.sampled_from(["main", "subagent"]),
    "recipe_name": TEXT,
}
MESSAGES = st.lists(st.builds(Message, role=TEXT, content=TEXT), max_size=4)
USAGE = st.builds(
    UsageInfo,
    input_tokens=st.integers(),
    output_tokens=st.integers(),
    current_context_window=st.integers(),
    max_context_window=st.integers(),
)
TOOL_RESULT = st.builds(
    StructuredToolResult,
    tool_name=TEXT,
    success=st.booleans(),
    error=st.none() | TEXT,
    metadata=st.none() | OBJECTS,
    timestamp=TEXT,
)
PAYLOADS: dict[Event, st.SearchStrategy[Any]] = {
    Event.BEFORE_TOOL_CALL: st.builds(
        BeforeToolCallPayload, tool_name=TEXT, tool_input=OBJECTS, tool_user_id=TEXT, **BASE
    ),
    Event.AFTER_TOOL_CALL: st.builds(
        AfterToolCallPayload,
        tool_name=TEXT,
        tool_input=OBJECTS,
        tool_output=TOOL_RESULT,
        tool_user_id=TEXT,
        **BASE,
    ),
    Event.USER_MESSAGE_SEND: st.builds(UserMessageSendPayload, message=TEXT, **BASE),
    Event.AFTER_TURN: st.builds(
        AfterTurnPayload,
        turn_number=st.integers(),
        tools_used=st.booleans(),
        usage=USAGE,
        auto_compact_enabled=st.booleans(),
        auto_compact_threshold=st.none() | FLOATS,
        messages=st.none() | MESSAGES,
        response=st.none() | TEXT,
        **BASE,
    ),
    Event.AGENT_STOP: st.builds(
        AgentStopPayload,
        messages=MESSAGES,
        usage=USAGE,
        invoked_recipe=TEXT,
        auto_compact_enabled=st.booleans(),
        auto_compact_threshold=st.none() | FLOATS,
        **BASE,
    ),
}


def test_every_payload_model_has_a_strategy() -> None:
    assert set(PAYLOADS) == set(PAYLOAD_TYPES)


@given(payload=st.one_of(*PAYLOADS.values()))
@settings(max_examples=300, deadline=None)
def test_every_payload_round_trips_through_the_wire(payload: BasePayload) -> None:
    wire = json.loads(json.dumps(payload_to_wire(payload), ensure_ascii=False))
    assert wire["event"] == payload.EVENT.value
    assert payload_from_wire(payload.EVENT, wire) == payload


RESULTS: dict[Event, st.SearchStrategy[Any]] = {
    Event.BEFORE_TOOL_CALL: st.builds(
        BeforeToolCallResult,
        blocked=st.booleans(),
        reason=TEXT,
        input=st.none() | OBJECTS,
    ),
    Event.AFTER_TOOL_CALL: st.builds(AfterToolCallResult, output=st.none() | TOOL_RESULT),
    Event.USER_MESSAGE_SEND: st.builds(UserMessageSendResult, blocked=st.booleans(), reason=TEXT),
    Event.AFTER_TURN: st.builds(
        AfterTurnResult,
        result=st.sampled_from(["", "continue", "mutate", "callback"]),
        messages=st.none() | MESSAGES,
        callback=TEXT,
        callback_args=st.none() | st.dictionaries(TEXT, TEXT, max_size=3),
    ),
    Event.AGENT_STOP: st.builds(
        AgentStopResult,
        result=st.sampled_from(["", "continue", "mutate", "callback"]),
        follow_up_messages=st.none() | st.lists(TEXT, max_size=3),
        messages=st.none() | MESSAGES,
        callback=TEXT,
        callback_args=st.none() | st.dictionaries(TEXT, TEXT, max_size=3),
    ),
}


@given(data=st.data(), event=st.sampled_from(list(Event)))
@settings(max_examples=300, deadline=None)
def test_every_result_model_round_trips_through_the_wire(data: Any, event: Event) -> None:
    result = data.draw(RESULTS[event])
    wire = json.loads(json.dumps(converter.unstructure(result), ensure_ascii=False))
    assert result_from_wire(event, wire) == result
    assert coerce_result(event, wire) == result


# -- hostile generators: nesting past the bounds, strings that are not Unicode ---------

# Text that includes lone surrogates, control characters and escapes: what a model can
# put in a tool call's JSON arguments ("\ud800" is a legal JSON escape).
HOSTILE_TEXT = st.text(max_size=12) | st.text(
    alphabet=st.characters(blacklist_categories=()), min_size=1, max_size=6
)
HOSTILE_SCALARS = SCALARS | HOSTILE_TEXT


@st.composite
def hostile_depth(draw: st.DrawFn) -> Any:
    """Objects and arrays nested 0 to 150 levels (the bound is 64), a hostile leaf inside."""
    levels = draw(st.integers(0, 150))
    value: Any = draw(HOSTILE_SCALARS)
    for kind in draw(st.lists(st.booleans(), min_size=levels, max_size=levels)):
        value = {draw(HOSTILE_TEXT): value} if kind else [value]
    return value


HOSTILE = hostile_depth() | st.recursive(
    HOSTILE_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(HOSTILE_TEXT, inner, max_size=3),
    max_leaves=12,
)


def reference(value: Any, depth: int = 0) -> tuple[int, bool]:
    """(deepest level, every string encodable), the obvious recursive way."""
    if isinstance(value, str):
        return depth, not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        inner = [reference(k, depth + 1) for k in value] + [
            reference(v, depth + 1) for v in value.values()
        ]
    elif isinstance(value, list):
        inner = [reference(v, depth + 1) for v in value]
    else:
        return depth, True
    return max([depth + 1] + [d for d, _ in inner]), all(ok for _, ok in inner)


def strict_json(data: Any) -> None:
    json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")


@given(tool_input=HOSTILE)
@settings(max_examples=300, deadline=None)
def test_the_bounds_check_agrees_with_a_reference(tool_input: Any) -> None:
    from kodelet.bounds import MAX_DEPTH, BoundsError, check_bounds

    payload = {"tool_input": tool_input}
    deepest, encodable = reference(payload)
    try:
        check_bounds(payload)
    except BoundsError:
        assert deepest > MAX_DEPTH or not encodable
    else:
        assert deepest <= MAX_DEPTH and encodable
        strict_json(payload)


@given(tool_input=HOSTILE)
@settings(max_examples=200, deadline=None)
def test_a_hostile_tool_input_is_refused_or_dispatched_never_crashes(
    answer_runtime: Any, tool_input: Any
) -> None:
    from kodelet.bounds import BoundsError

    rt, answer = answer_runtime
    answer.value = None
    payload = BeforeToolCallPayload(tool_name="bash", tool_input={"x": tool_input})
    try:
        d = rt.dispatch(payload)
    except BoundsError:
        deepest, encodable = reference({"tool_input": {"x": tool_input}})
        assert deepest > 64 or not encodable
        return
    strict_json(merged_to_wire(d.event, d.result))


@given(event=st.sampled_from(list(Event)), raw=st.dictionaries(KEYS, HOSTILE, max_size=4))
@settings(max_examples=300, deadline=None)
def test_a_hostile_native_answer_never_raises_and_merges_to_strict_json(
    answer_runtime: Any, event: Event, raw: Any
) -> None:
    rt, answer = answer_runtime
    answer.value = raw
    d = rt.dispatch(payload_for(event))
    (rec,) = d.trace
    assert rec.outcome is not Outcome.ERROR or rec.error
    assert isinstance(d.result, RESULT_TYPES[event])
    strict_json(merged_to_wire(event, d.result))


@given(event=st.sampled_from(list(Event)), raw=st.dictionaries(KEYS, HOSTILE, max_size=4))
@settings(max_examples=60, deadline=None)
def test_a_hostile_executable_answer_never_raises_and_merges_to_strict_json(
    printing_hooks: Any, event: Event, raw: Any
) -> None:
    rt, answer = printing_hooks
    answer.write_text(json.dumps(raw, ensure_ascii=True) + "\n")  # surrogates as \\udXXX
    d = rt.dispatch(payload_for(event))
    assert isinstance(d.result, RESULT_TYPES[event])
    strict_json(merged_to_wire(event, d.result))
