"""docs/EVENTS.md, written from the models, the hookspecs and one example pair per event.

``python -m kodelet.eventdocs > docs/EVENTS.md`` rewrites the page; a test
checks the committed page is exactly what this module writes, and that every
example validates against its JSON Schema and survives the converter.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin

import attrs

from . import hookspecs
from .events import Event
from .payloads import PAYLOAD_TYPES, Message, StructuredToolResult, UsageInfo
from .results import RESULT_TYPES
from .schema import FieldDoc, fields_of, meaning, unwrap_optional

__all__ = ["EXAMPLES", "render"]

_CWD = "/home/me/src/app"

# One realistic pair per event: what kodelet sends, and what a hook answers.
EXAMPLES: Mapping[Event, tuple[dict[str, Any], dict[str, Any]]] = {
    Event.BEFORE_TOOL_CALL: (
        {
            "event": "before_tool_call",
            "conv_id": "c-7f3c2a",
            "cwd": _CWD,
            "invoked_by": "main",
            "tool_name": "bash",
            "tool_input": {"command": "pytest"},
            "tool_user_id": "toolu_01",
        },
        {"blocked": False, "input": {"command": "pytest -q --maxfail=1"}},
    ),
    Event.AFTER_TOOL_CALL: (
        {
            "event": "after_tool_call",
            "conv_id": "c-7f3c2a",
            "cwd": _CWD,
            "invoked_by": "main",
            "tool_name": "bash",
            "tool_input": {"command": "cat .env"},
            "tool_output": {
                "toolName": "bash",
                "success": True,
                "metadata": {
                    "output": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n",
                    "tool_response": {
                        "stdout": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n",
                        "stderr": "",
                        "interrupted": False,
                    },
                },
                "timestamp": "2025-05-14T09:12:20Z",
            },
            "tool_user_id": "toolu_02",
        },
        {
            "output": {
                "toolName": "bash",
                "success": True,
                "metadata": {"output": "AWS_SECRET_ACCESS_KEY=[redacted]\n"},
                "timestamp": "2025-05-14T09:12:20Z",
            }
        },
    ),
    Event.USER_MESSAGE_SEND: (
        {
            "event": "user_message_send",
            "conv_id": "c-7f3c2a",
            "cwd": _CWD,
            "invoked_by": "main",
            "message": "Deploy with key AKIAIOSFODNN7EXAMPLE",
        },
        {"blocked": True, "reason": "the message holds an AWS access key"},
    ),
    Event.AFTER_TURN: (
        {
            "event": "after_turn",
            "conv_id": "c-7f3c2a",
            "cwd": _CWD,
            "invoked_by": "main",
            "turn_number": 15,
            "tools_used": True,
            "usage": {
                "input_tokens": 104000,
                "output_tokens": 900,
                "current_context_window": 104900,
                "max_context_window": 128000,
            },
            "auto_compact_enabled": True,
            "auto_compact_threshold": 0.8,
            "messages": [
                {"role": "user", "content": "The tests fail; fix them."},
                {"role": "assistant", "content": "I'll run the tests first."},
            ],
            "response": "I'll run the tests first.",
        },
        {"result": "callback", "callback": "compact", "callback_args": {"focus": "the tests"}},
    ),
    Event.AGENT_STOP: (
        {
            "event": "agent_stop",
            "conv_id": "c-7f3c2a",
            "cwd": _CWD,
            "invoked_by": "main",
            "messages": [
                {"role": "user", "content": "Add a --utc option."},
                {"role": "assistant", "content": "Added --utc to cli.py."},
            ],
            "usage": {
                "input_tokens": 21000,
                "output_tokens": 300,
                "current_context_window": 21300,
                "max_context_window": 128000,
            },
            "invoked_recipe": "",
            "auto_compact_enabled": True,
            "auto_compact_threshold": 0.8,
        },
        {"follow_up_messages": ["Run ruff on the files you changed."]},
    ),
}

_HEAD = """\
# Events: payloads and results

<!-- Written by `python -m kodelet.eventdocs > docs/EVENTS.md`; edit the models, not this page. -->

kodelet fires five events. For each, a hook gets one JSON object, the **payload**,
and may answer with one JSON object, the **result**; an empty answer (or `{}`)
means "no action". Native plugins get the payload's fields as arguments, by name,
and return the result as an object or a dict. This page lists every field; it is
written from kodelet's own models, as are the JSON Schemas (draft 2020-12) that
`kodelet hooks schema EVENT` (payload) and `kodelet hooks schema EVENT --result`
print, for editors and for validating a hook in any language.

- **Payloads.** A hook receives every field listed, except those whose meaning says
  when they are left out. Hosts and `kodelet hooks run` may leave out any field
  with a default.
- **Results.** Every field may be left out; its default then applies. Types are
  strict: `{"blocked": "yes"}` is the hook's failure, not a block. Keys kodelet
  does not know are ignored.
- **Several hooks.** Each event's merge rule (below) says how the answers of
  several hooks combine. Order: the call order of [HOSTS.md](HOSTS.md#call-order), as
  `kodelet hooks list` shows it.
- **Failures.** A hook that fails (timeout, crash, signal, an answer that is not a
  valid result, an exception, or it cannot start) **blocks** `before_tool_call` and
  `user_message_send` by default, with a reason naming the hook, what failed and the
  fix; `fail_closed = false` in `[hooks."<name>"]` (or `[hooks]` for all) lets the
  call through instead ([SECURITY.md](SECURITY.md#failing-hooks-block-fail-closed)).
  On the other events a failure is recorded in the trace and the other hooks still run.
"""


def _type_text(tp: Any) -> str:
    optional, inner = unwrap_optional(tp)
    if optional:
        return f"{_type_text(inner)} or null"
    origin = get_origin(tp)
    if origin is Literal:
        return " \\| ".join(f"`{json.dumps(a)}`" for a in get_args(tp))
    if origin is list:
        (item,) = get_args(tp)
        return f"list of {_type_text(item)}"
    if origin is dict:
        _, value = get_args(tp)
        return "object" if value is Any else f"object of {_type_text(value)}"
    if attrs.has(tp):
        return f"[{tp.__name__}](#{tp.__name__.lower()})"
    names = {str: "string", bool: "boolean", int: "integer", float: "number"}
    return names[tp] if tp in names else str(tp)


def _default_text(field: FieldDoc) -> str:
    if field.required:
        return "**required**"
    return f"`{json.dumps(field.default, ensure_ascii=False)}`"


def _table(fields: list[FieldDoc], head: list[str] | None = None) -> str:
    rows = head or []
    rows += [
        f"| `{f.name}` | {_type_text(f.type)} | {_default_text(f)} | {f.doc} |" for f in fields
    ]
    return "| field | type | default | meaning |\n|---|---|---|---|\n" + "\n".join(rows)


def _spec_text(event: Event) -> str:
    """The hookspec's docstring, in Markdown: the event's purpose and merge rule."""
    text = inspect.cleandoc(getattr(hookspecs, event.value).__doc__ or "")
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


def _json_block(data: Any) -> str:
    return "```json\n" + json.dumps(data, indent=2, ensure_ascii=False) + "\n```"


def _event_section(event: Event) -> str:
    payload, result = EXAMPLES[event]
    event_row = [f'| `event` | `"{event.value}"` | | {meaning(PAYLOAD_TYPES[event], "event")} |']
    parts = [
        f"## {event.value}",
        _spec_text(event),
        "### Payload",
        _table(fields_of(PAYLOAD_TYPES[event]), event_row),
        "### Result",
        _table(fields_of(RESULT_TYPES[event])),
        "### Example",
        "Payload:",
        _json_block(payload),
        "Result:",
        _json_block(result),
    ]
    return "\n\n".join(parts)


def _type_section(cls: type) -> str:
    return "\n\n".join([f"### {cls.__name__}", meaning(cls), _table(fields_of(cls))])


def render() -> str:
    """The whole of docs/EVENTS.md."""
    parts = [_HEAD.rstrip()]
    parts += [_event_section(event) for event in Event]
    parts.append("## Types used above")
    parts += [_type_section(cls) for cls in (Message, UsageInfo, StructuredToolResult)]
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
