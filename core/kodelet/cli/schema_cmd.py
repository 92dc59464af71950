"""`kodelet hooks schema EVENT [--result]`: one JSON Schema, for editors and hook authors."""

from __future__ import annotations

import typer

from ..events import Event, parse_event
from ..schema import schema as build_schema
from .common import fail, print_json

EVENT_NAMES = ", ".join(e.value for e in Event)


def schema(
    event: str = typer.Argument(..., metavar="EVENT", help=f"The event ({EVENT_NAMES})."),
    result: bool = typer.Option(
        False, "--result", help="The schema of a hook's answer instead of its payload."
    ),
) -> None:
    """Print the JSON Schema (draft 2020-12) of an event's payload, or of its result.

    docs/EVENTS.md describes the same fields, with examples."""
    try:
        ev = parse_event(event)
    except ValueError as exc:
        fail(str(exc), 2)
    print_json(build_schema(ev, result=result))


def register(hooks_app: typer.Typer) -> None:
    """Add ``schema`` to the ``kodelet hooks`` group."""
    hooks_app.command("schema")(schema)
