"""Each event is defined once, by its payload model; everything else must agree with it."""

from __future__ import annotations

import inspect

import attrs
import pytest
from kodelet import Session, hookspecs
from kodelet.events import Event
from kodelet.payloads import PAYLOAD_TYPES, BasePayload, field_names
from kodelet.testing import make_payload

BASE = {a.name for a in attrs.fields(BasePayload)}


def own_fields(event: Event) -> set[str]:
    return {a.name for a in attrs.fields(PAYLOAD_TYPES[event])} - BASE


@pytest.mark.parametrize("event", list(Event))
def test_hookspec_arguments_are_the_payload_fields(event: Event) -> None:
    spec = getattr(hookspecs, event.value)
    assert tuple(inspect.signature(spec).parameters) == field_names(event)


@pytest.mark.parametrize("event", list(Event))
@pytest.mark.parametrize("prefix", ["", "a"])
def test_session_methods_take_exactly_the_events_own_fields(event: Event, prefix: str) -> None:
    method = getattr(Session, prefix + event.value)
    params = set(inspect.signature(method).parameters) - {"self"}
    assert params == own_fields(event)


@pytest.mark.parametrize("event", list(Event))
def test_testing_defaults_make_a_valid_payload_of_every_event(event: Event) -> None:
    payload = make_payload(event)
    assert type(payload) is PAYLOAD_TYPES[event]
    assert payload.EVENT is event
