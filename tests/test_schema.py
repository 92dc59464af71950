"""docs/EVENTS.md and the JSON Schemas are the models' own: generated, validated, round-tripped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from kodelet import eventdocs
from kodelet.events import Event
from kodelet.payloads import PAYLOAD_TYPES, BasePayload, Message, StructuredToolResult, UsageInfo
from kodelet.results import RESULT_TYPES
from kodelet.schema import FIELD_DOCS, payload_schema, result_schema
from kodelet.wire import (
    WireError,
    payload_from_wire,
    payload_to_wire,
    result_from_wire,
    result_to_wire,
)

EVENTS_MD = Path(__file__).resolve().parents[1] / "docs" / "EVENTS.md"


def test_committed_events_md_is_what_the_models_generate() -> None:
    assert EVENTS_MD.read_text(encoding="utf-8") == eventdocs.render(), (
        "docs/EVENTS.md is stale: python -m kodelet.eventdocs > docs/EVENTS.md"
    )


def test_every_model_field_is_documented_and_no_meaning_is_stale() -> None:
    models = [*PAYLOAD_TYPES.values(), *RESULT_TYPES.values()]
    models += [Message, UsageInfo, StructuredToolResult]
    known = {"BasePayload.event"} | {cls.__name__ for cls in models}
    known |= {
        f"{cls.__name__}.{f.name}" for cls in [*models, BasePayload] for f in attrs.fields(cls)
    }
    assert set(FIELD_DOCS) <= known, set(FIELD_DOCS) - known
    text = EVENTS_MD.read_text(encoding="utf-8")
    for cls in models:
        for field in attrs.fields(cls):
            wire = "toolName" if field.name == "tool_name" and cls is StructuredToolResult else None
            assert f"| `{wire or field.name}` |" in text, f"{cls.__name__}.{field.name}"


@pytest.mark.parametrize("event", list(Event))
def test_schemas_are_valid_draft_2020_12(event: Event) -> None:
    for doc in (payload_schema(event), result_schema(event)):
        Draft202012Validator.check_schema(doc)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("event", list(Event))
def test_example_pairs_validate_and_round_trip_through_the_converter(event: Event) -> None:
    payload, result = eventdocs.EXAMPLES[event]
    Draft202012Validator(payload_schema(event)).validate(payload)
    Draft202012Validator(result_schema(event)).validate(result)
    # Complete: every payload field the converter sends is in the example.
    assert payload_to_wire(payload_from_wire(event, payload)) == payload
    assert result_to_wire(event, result_from_wire(event, result)) == result
    assert set(payload) == {"event", *(f.name for f in attrs.fields(PAYLOAD_TYPES[event]))} - {
        "recipe_name",
        "metadata",  # left out for a tool call the model made, as in the example
    }


def test_schemas_reject_what_the_converter_rejects() -> None:
    bad_payload = {"tool_name": "bash", "tool_output": {"toolName": "bash", "success": "yes"}}
    with pytest.raises(WireError):
        payload_from_wire(Event.AFTER_TOOL_CALL, bad_payload)
    assert not Draft202012Validator(payload_schema(Event.AFTER_TOOL_CALL)).is_valid(bad_payload)
    for bad in ({"blocked": "yes"}, {"ask": "yes"}, {"input": []}, {"reason": 3}):
        with pytest.raises(WireError):
            result_from_wire(Event.BEFORE_TOOL_CALL, bad)
        assert not Draft202012Validator(result_schema(Event.BEFORE_TOOL_CALL)).is_valid(bad)


def test_an_ask_is_in_the_result_schema_and_round_trips() -> None:
    ask = {"ask": True, "reason": "git push publishes the branch"}
    Draft202012Validator(result_schema(Event.BEFORE_TOOL_CALL)).validate(ask)
    result = result_from_wire(Event.BEFORE_TOOL_CALL, ask)
    assert result_to_wire(Event.BEFORE_TOOL_CALL, result) == {"blocked": False, **ask}


# -- schema and converter agree on documents near the examples ----------------------

# JSON Schema counts 1.0 as an integer and kodelet does not (EVENTS.md writes integers
# without a fraction), so generated floats always have one.
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
    | st.text(max_size=8)
    | st.sampled_from(["", "main", "subagent", "mutate", "callback", "continue", "user"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*prefix, i))
    return out


def _mutate(doc: Any, path: tuple[Any, ...], how: str, value: Any, extra: str) -> Any:
    if not path:
        return value if how == "replace" else doc
    head, rest = path[0], path[1:]
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    if rest:
        copy[head] = _mutate(doc[head], rest, how, value, extra)
    elif how == "delete" and isinstance(copy, dict):
        del copy[head]
    elif how == "extra" and isinstance(doc[head], dict):
        copy[head] = {**doc[head], extra: value}
    else:
        copy[head] = value
    return copy


@st.composite
def _near_examples(draw: st.DrawFn) -> tuple[Event, bool, Any]:
    event = draw(st.sampled_from(list(Event)))
    is_result = draw(st.booleans())
    doc = eventdocs.EXAMPLES[event][1 if is_result else 0]
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(_paths(doc)))
        how = draw(st.sampled_from(["replace", "delete", "extra"]))
        doc = _mutate(doc, path, how, draw(_json_values), draw(st.text(max_size=6)))
    return event, is_result, doc


def _converter_accepts(event: Event, is_result: bool, doc: Any) -> bool:
    try:
        if is_result:
            result_from_wire(event, doc)
        else:
            payload_from_wire(event, doc)
    except WireError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(_near_examples())
def test_a_document_is_valid_exactly_when_kodelet_accepts_it(case: tuple[Event, bool, Any]) -> None:
    event, is_result, doc = case
    schema = result_schema(event) if is_result else payload_schema(event)
    valid = Draft202012Validator(schema).is_valid(doc)
    assert valid == _converter_accepts(event, is_result, doc), json.dumps(doc)


# -- the command ---------------------------------------------------------------------


def _kodelet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kodelet", *args], capture_output=True, text=True, timeout=60
    )


def test_hooks_schema_prints_the_payload_or_result_schema() -> None:
    done = _kodelet("hooks", "schema", "after_tool_call")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == payload_schema(Event.AFTER_TOOL_CALL)
    done = _kodelet("hooks", "schema", "agent_stop", "--result")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == result_schema(Event.AGENT_STOP)
    assert "follow_up_messages" in printed["properties"]


def test_hooks_schema_names_a_bad_event_in_one_line() -> None:
    done = _kodelet("hooks", "schema", "before_tool")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("kodelet: error: unknown event 'before_tool'")
    assert len(done.stderr.splitlines()) == 1
