"""The wire format: the seeds' JSON examples survive a round trip through the models,
unknown fields are ignored, and bad input is a ``ValueError`` that names the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kodelet import (
    AfterToolCallResult,
    AfterTurnPayload,
    AgentStopPayload,
    BeforeToolCallPayload,
    Event,
    Message,
    StructuredToolResult,
    WireError,
    parse_event,
    payload_from_wire,
    payload_to_wire,
    result_from_wire,
    result_to_wire,
)
from kodelet.payloads import PAYLOAD_TYPES, field_names
from kodelet.results import RESULT_TYPES

EXAMPLES = Path(__file__).parent / "fixtures" / "seed_examples"


def _examples(kind: str) -> list[Any]:
    files = sorted(EXAMPLES.glob(f"*.{kind}.*.json"))
    return [pytest.param(f, id=f.name) for f in files]


def _event_of(path: Path) -> Event:
    return Event(path.name.split(".", 1)[0])


def test_every_event_has_a_seed_payload_example() -> None:
    covered = {_event_of(p) for p in EXAMPLES.glob("*.payload.*.json")}
    assert covered == set(Event)
    with_results = {_event_of(p) for p in EXAMPLES.glob("*.result.*.json")}
    assert with_results == set(Event) - {Event.AFTER_TOOL_CALL}  # the seeds show none valid


@pytest.mark.parametrize("path", _examples("payload"))
def test_seed_payload_round_trips(path: Path) -> None:
    example = json.loads(path.read_text())
    event = _event_of(path)
    payload = payload_from_wire(event, example)
    assert isinstance(payload, PAYLOAD_TYPES[event])
    assert payload.event is event
    assert payload_to_wire(payload) == example
    # and again, from our own output
    assert payload_to_wire(payload_from_wire(event, payload_to_wire(payload))) == example


@pytest.mark.parametrize("path", _examples("result"))
def test_seed_result_round_trips(path: Path) -> None:
    example = json.loads(path.read_text())
    event = _event_of(path)
    result = result_from_wire(event, example)
    assert isinstance(result, RESULT_TYPES[event])
    assert result_to_wire(event, result) == example


def test_after_tool_call_payload_keeps_tool_name_camel_case() -> None:
    example = json.loads((EXAMPLES / "after_tool_call.payload.hooks-md.json").read_text())
    payload = payload_from_wire(Event.AFTER_TOOL_CALL, example)
    assert payload.tool_output == StructuredToolResult(  # type: ignore[attr-defined]
        tool_name="bash", success=True, timestamp="2024-01-15T10:30:00Z"
    )
    wire = payload_to_wire(payload)
    assert wire["tool_output"]["toolName"] == "bash"
    assert "tool_name" not in wire["tool_output"]


def test_after_tool_call_result_round_trips_with_camel_case() -> None:
    data = {
        "output": {
            "toolName": "bash",
            "success": False,
            "error": "exit status 1",
            "metadata": {"exit_code": 1, "lines": ["a", "b"]},
            "timestamp": "2024-01-15T10:30:00Z",
        }
    }
    result = result_from_wire(Event.AFTER_TOOL_CALL, data)
    assert result == AfterToolCallResult(
        output=StructuredToolResult(
            tool_name="bash",
            success=False,
            error="exit status 1",
            metadata={"exit_code": 1, "lines": ["a", "b"]},
            timestamp="2024-01-15T10:30:00Z",
        )
    )
    assert result_to_wire(Event.AFTER_TOOL_CALL, result) == data


def test_snake_case_tool_name_in_tool_output_is_not_accepted_as_the_name() -> None:
    with pytest.raises(WireError, match="toolName"):
        result_from_wire(Event.AFTER_TOOL_CALL, {"output": {"tool_name": "bash", "success": True}})


def test_recipe_name_is_carried_and_omitted_when_empty() -> None:
    data = {
        "event": "user_message_send",
        "conv_id": "c",
        "cwd": "/w",
        "invoked_by": "subagent",
        "recipe_name": "code-review",
        "message": "hi",
    }
    payload = payload_from_wire(Event.USER_MESSAGE_SEND, data)
    assert payload.recipe_name == "code-review"
    assert payload_to_wire(payload) == data
    plain = payload_from_wire(Event.USER_MESSAGE_SEND, {**data, "recipe_name": ""})
    assert "recipe_name" not in payload_to_wire(plain)


def test_after_turn_carries_optional_messages_and_response() -> None:
    data = {
        "event": "after_turn",
        "conv_id": "c",
        "cwd": "/w",
        "invoked_by": "main",
        "turn_number": 2,
        "tools_used": False,
        "usage": {
            "input_tokens": 1,
            "output_tokens": 2,
            "current_context_window": 3,
            "max_context_window": 4,
        },
        "auto_compact_enabled": False,
        "messages": [{"role": "user", "content": "q"}],
        "response": "a",
    }
    payload = payload_from_wire(Event.AFTER_TURN, data)
    assert isinstance(payload, AfterTurnPayload)
    assert payload.messages == [Message("user", "q")]
    assert payload.response == "a"
    assert payload_to_wire(payload) == data


def test_payload_field_names_are_the_seed_names() -> None:
    assert field_names(Event.BEFORE_TOOL_CALL) == (
        "event",
        "conv_id",
        "cwd",
        "invoked_by",
        "recipe_name",
        "tool_name",
        "tool_input",
        "tool_user_id",
        "metadata",
    )
    assert set(field_names(Event.AGENT_STOP)) >= {
        "messages",
        "usage",
        "invoked_recipe",
        "auto_compact_enabled",
        "auto_compact_threshold",
    }


# -- unknown fields -------------------------------------------------------------


def test_unknown_payload_fields_are_ignored() -> None:
    data = json.loads((EXAMPLES / "before_tool_call.payload.hooks-md.json").read_text())
    payload = payload_from_wire(Event.BEFORE_TOOL_CALL, {**data, "future_field": {"x": 1}})
    assert payload_to_wire(payload) == data


def test_unknown_result_fields_are_ignored() -> None:
    # ADR 029's multi-recipe hook answers {"success": true} to turn_end.
    assert (
        result_to_wire(Event.AFTER_TURN, result_from_wire(Event.AFTER_TURN, {"success": True}))
        == {}
    )
    result = result_from_wire(
        Event.BEFORE_TOOL_CALL, {"blocked": True, "reason": "no", "severity": "high"}
    )
    assert result_to_wire(Event.BEFORE_TOOL_CALL, result) == {"blocked": True, "reason": "no"}
    nested = result_from_wire(
        Event.AGENT_STOP,
        {"result": "mutate", "messages": [{"role": "user", "content": "x", "name": "bob"}]},
    )
    assert nested.messages == [Message("user", "x")]


def test_minimal_debug_payload_from_hooks_md_gets_defaults() -> None:
    # HOOKS.md "Debugging Hooks" pipes this to a hook by hand.
    data = {"event": "before_tool_call", "tool_name": "bash", "tool_input": {"command": "ls"}}
    payload = payload_from_wire(Event.BEFORE_TOOL_CALL, data)
    assert payload == BeforeToolCallPayload(tool_name="bash", tool_input={"command": "ls"})
    assert payload_to_wire(payload) == {
        **data,
        "conv_id": "",
        "cwd": "",
        "invoked_by": "main",
        "tool_user_id": "",
    }


# -- bad input ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (Event.BEFORE_TOOL_CALL, "tool_name"),
        (Event.AFTER_TOOL_CALL, "tool_name"),
        (Event.AFTER_TOOL_CALL, "tool_output"),
        (Event.USER_MESSAGE_SEND, "message"),
        (Event.AFTER_TURN, "turn_number"),
    ],
)
def test_missing_required_payload_field_is_a_value_error_naming_it(
    event: Event, field: str
) -> None:
    example = json.loads(next(EXAMPLES.glob(f"{event.value}.payload.*.json")).read_text())
    del example[field]
    with pytest.raises(ValueError, match=field):
        payload_from_wire(event, example)


@pytest.mark.parametrize(
    ("event", "patch", "needle"),
    [
        (Event.BEFORE_TOOL_CALL, {"tool_name": 3}, "tool_name"),
        (Event.BEFORE_TOOL_CALL, {"tool_input": "ls"}, "tool_input"),
        (Event.AFTER_TURN, {"turn_number": "5"}, "turn_number"),
        (Event.AFTER_TURN, {"turn_number": True}, "turn_number"),
        (Event.AFTER_TURN, {"usage": {"input_tokens": "many"}}, "usage.input_tokens"),
        (Event.AGENT_STOP, {"messages": [{"role": "user"}]}, "messages[0].content"),
        (Event.AGENT_STOP, {"auto_compact_threshold": "0.8"}, "auto_compact_threshold"),
        (Event.AFTER_TOOL_CALL, {"tool_output": {"toolName": "bash"}}, "tool_output.success"),
    ],
)
def test_wrongly_typed_payload_field_is_a_value_error_naming_it(
    event: Event, patch: dict[str, Any], needle: str
) -> None:
    example = json.loads(next(EXAMPLES.glob(f"{event.value}.payload.*.json")).read_text())
    with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        payload_from_wire(event, {**example, **patch})


def test_payload_for_another_event_is_refused() -> None:
    example = json.loads((EXAMPLES / "before_tool_call.payload.hooks-md.json").read_text())
    with pytest.raises(WireError, match="before_tool_call"):
        payload_from_wire(Event.AFTER_TOOL_CALL, example)


def test_integer_threshold_is_accepted_as_a_number() -> None:
    example = json.loads((EXAMPLES / "agent_stop.payload.hooks-md.json").read_text())
    payload = payload_from_wire(Event.AGENT_STOP, {**example, "auto_compact_threshold": 1})
    assert isinstance(payload, AgentStopPayload)
    assert payload.auto_compact_threshold == 1.0


@pytest.mark.parametrize(
    ("event", "data", "needle"),
    [
        (Event.BEFORE_TOOL_CALL, {"blocked": "yes"}, "blocked"),
        (Event.BEFORE_TOOL_CALL, {"input": ["ls"]}, "input"),
        (Event.USER_MESSAGE_SEND, {"blocked": True, "reason": 7}, "reason"),
        (Event.AFTER_TURN, {"result": "mutate", "messages": "all of them"}, "messages"),
        (Event.AGENT_STOP, {"follow_up_messages": "run the linter"}, "follow_up_messages"),
        (Event.AGENT_STOP, {"follow_up_messages": [1, 2]}, r"follow_up_messages\[0\]"),
        (Event.AGENT_STOP, {"callback_args": {"a": 1}}, "callback_args"),
        (Event.AFTER_TURN, {"result": "explode"}, "result"),
    ],
)
def test_bad_result_is_a_wire_error_naming_the_field(
    event: Event, data: dict[str, Any], needle: str
) -> None:
    with pytest.raises(WireError, match=needle):
        result_from_wire(event, data)


@pytest.mark.parametrize("data", [None, "blocked", 1, ["blocked"]])
def test_non_object_result_is_a_wire_error(data: Any) -> None:
    with pytest.raises(WireError, match="expected a JSON object"):
        result_from_wire(Event.BEFORE_TOOL_CALL, data)


# -- merged-result JSON ---------------------------------------------------------


def test_merged_json_omits_empty_fields_but_keeps_blocked_for_blocking_events() -> None:
    assert result_to_wire(Event.BEFORE_TOOL_CALL, RESULT_TYPES[Event.BEFORE_TOOL_CALL]()) == {
        "blocked": False
    }
    assert result_to_wire(Event.USER_MESSAGE_SEND, RESULT_TYPES[Event.USER_MESSAGE_SEND]()) == {
        "blocked": False
    }
    for event in (Event.AFTER_TOOL_CALL, Event.AFTER_TURN, Event.AGENT_STOP):
        assert result_to_wire(event, RESULT_TYPES[event]()) == {}


def test_merged_json_keeps_a_rewrite_to_an_empty_input() -> None:
    result = result_from_wire(Event.BEFORE_TOOL_CALL, {"input": {}})
    assert result_to_wire(Event.BEFORE_TOOL_CALL, result) == {"blocked": False, "input": {}}


def test_turn_end_is_an_alias_of_after_turn() -> None:
    assert parse_event("turn_end") is Event.AFTER_TURN
    assert parse_event(" agent_stop\n") is Event.AGENT_STOP
    with pytest.raises(ValueError, match="'turn_start'"):
        parse_event("turn_start")
