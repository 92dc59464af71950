"""JSON Schemas (draft 2020-12) of every payload and result, built from the attrs models.

Hook authors in any language validate against these, and docs/EVENTS.md is
written from the same walk over the models, so neither can drift from what
the converter in :mod:`kodelet.wire` actually accepts. A schema accepts what
the converter accepts: unknown keys are allowed (kodelet ignores them), and
types are as strict as the converter's (``"yes"`` is not a boolean).

Every field needs a meaning in :data:`FIELD_DOCS`; a field added to a model
without one fails the documentation test, not silently the docs.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import attrs

from .events import Event
from .payloads import PAYLOAD_TYPES
from .results import RESULT_TYPES
from .wire import converter, wire_name

__all__ = [
    "DIALECT",
    "FIELD_DOCS",
    "FieldDoc",
    "fields_of",
    "meaning",
    "payload_schema",
    "result_schema",
    "schema",
    "unwrap_optional",
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"

_ACTION = (
    '`"mutate"` replaces the conversation with `messages`; `"callback"` runs the recipe '
    'named in `callback`; `""` and `"continue"` replace nothing.'
)
_MUTATE = 'The new conversation, with `result: "mutate"`.'
_CALLBACK = (
    'The recipe to run, with `result: "callback"` (e.g. `compact`); its output replaces '
    "the conversation."
)
_CALLBACK_ARGS = "Values for the recipe's template variables (`{{ name }}`)."
_THRESHOLD = (
    "The context ratio, in (0, 1], at which to compact. Left out when the host sets "
    "none; the built-in trigger then uses 0.8."
)

# "Class.field" -> what the field means. A class's own name -> what the class is.
_CONTEXT = (
    "Text for the model's next call, added to its context (Claude Code's "
    "`additionalContext`). Every hook's lines are kept, in call order. Left out when empty."
)

FIELD_DOCS: Mapping[str, str] = {
    "BeforeToolCallResult.additional_context": _CONTEXT,
    "AfterToolCallResult.additional_context": _CONTEXT,
    "UserMessageSendResult.additional_context": _CONTEXT,
    "AgentStopResult.additional_context": _CONTEXT,
    "BasePayload.event": "The event's name; the first field of every payload.",
    "BasePayload.conv_id": "The conversation's id, the same for every event of a session.",
    "BasePayload.cwd": (
        "The agent's working directory: the project whose hooks run. A per-call "
        "executable runs in it."
    ),
    "BasePayload.invoked_by": "`main` for the main agent, `subagent` for an agent it started.",
    "BasePayload.recipe_name": (
        "The recipe this session runs (e.g. `compact`). Left out when the session runs none."
    ),
    "BeforeToolCallPayload.tool_name": (
        "The tool about to run, by the agent's name for it (`bash`, `file_write`, ...)."
    ),
    "BeforeToolCallPayload.tool_input": (
        "The tool's arguments as the model wrote them, or as an earlier hook rewrote them. "
        "The model wrote it: treat it as untrusted."
    ),
    "BeforeToolCallPayload.tool_user_id": (
        "This call's id; `after_tool_call` for the same call carries the same one."
    ),
    "BeforeToolCallPayload.metadata": (
        "Left out for a tool call the model made. A skill's or slash command's shell line"
        " (Claude Code's `` !`cmd` `` lines, run as the skill loads, before the model sees"
        ' it) comes as `bash` with `{"origin": "skill_shell_line", "skill": NAME,'
        ' "skill_source": WHERE, "started_by": WHO, "shell": "Bash"}` (WHO: `user`,'
        " `claude` or `other`; a `PowerShell` line is `bash` too): a block or ask keeps the"
        " line from running; Claude Code never runs a rewritten line, so a rewrite blocks."
    ),
    "AfterToolCallPayload.tool_name": "The tool that ran.",
    "AfterToolCallPayload.tool_input": "The arguments it ran with (after any rewrite).",
    "AfterToolCallPayload.tool_output": (
        "What the tool returned, as rewritten by earlier hooks: `metadata.output` is the "
        "text the model is shown, in every agent and for every tool, and "
        "`metadata.tool_response` the agent's own result. For a blocked call: "
        "`success: false` and the blocking reason as `error`."
    ),
    "AfterToolCallPayload.tool_user_id": "This call's id, as in its `before_tool_call`.",
    "UserMessageSendPayload.message": "The text the user is sending, before the model sees it.",
    "AfterTurnPayload.turn_number": "This turn's number, counted from 1.",
    "AfterTurnPayload.tools_used": "Whether the model asked for tools in this turn.",
    "AfterTurnPayload.usage": "Token counts after this turn.",
    "AfterTurnPayload.auto_compact_enabled": "Whether the host compacts the conversation itself.",
    "AfterTurnPayload.auto_compact_threshold": _THRESHOLD,
    "AfterTurnPayload.messages": "The conversation so far. Left out when the host shares none.",
    "AfterTurnPayload.response": (
        "The model's text in this turn. Left out when the host shares none."
    ),
    "AgentStopPayload.messages": "The whole conversation.",
    "AgentStopPayload.usage": "Token counts at the end of the last turn.",
    "AgentStopPayload.invoked_recipe": (
        'The recipe that started this session; `""` when none (always present).'
    ),
    "AgentStopPayload.auto_compact_enabled": "Whether the host compacts the conversation itself.",
    "AgentStopPayload.auto_compact_threshold": _THRESHOLD,
    "Message": "One message of the conversation.",
    "Message.role": "`user` or `assistant`.",
    "Message.content": "The message's text.",
    "UsageInfo": "Token counts, as the model reported them.",
    "UsageInfo.input_tokens": "Tokens of the prompt the model was sent.",
    "UsageInfo.output_tokens": "Tokens the model wrote.",
    "UsageInfo.current_context_window": "Tokens in the context now.",
    "UsageInfo.max_context_window": "The model's context window, in tokens.",
    "StructuredToolResult": "A tool's result, as the model sees it.",
    "StructuredToolResult.tool_name": "The tool's name (camelCase on the wire).",
    "StructuredToolResult.success": "Whether the tool succeeded.",
    "StructuredToolResult.error": "What went wrong. Left out when null.",
    "StructuredToolResult.metadata": (
        "`output`: the text the model is shown (a shell's stdout, then its stderr; a "
        "file's content; an MCP tool's text; a failed call's error), whichever agent ran "
        "the tool; "
        "`tool_response`: the agent's own result, in its shape. Left out when null."
    ),
    "StructuredToolResult.timestamp": "When the tool finished, ISO 8601.",
    "BeforeToolCallResult.blocked": (
        "`true` stops the call: the tool does not run, the model gets a failed result whose "
        "`error` is `reason`, and no later hook runs."
    ),
    "BeforeToolCallResult.ask": (
        "`true` asks the user to approve the call (Claude Code's `ask`), with `reason` as "
        "the question. Later hooks still run and a block wins. A host with an approver "
        "asks and runs the call only if the user approves; a host without one blocks it. "
        "The merged result of an ask is also `blocked`, so a host that ignores `ask` "
        "blocks."
    ),
    "BeforeToolCallResult.reason": (
        "Why the call is blocked, or why approval is asked; the model and the user see it."
    ),
    "BeforeToolCallResult.input": (
        "New arguments for the tool, replacing `tool_input`; later hooks see them. "
        "Omit (or null) to keep the arguments."
    ),
    "AfterToolCallResult.output": (
        "A new result for the tool, which the model sees instead; later hooks see it. "
        "A new `metadata.output` becomes the agent's own replacement of the result "
        "(the rest of `metadata` may be left out); where an agent cannot replace it, "
        "`kodelet AGENT status` says so. Omit (or null) to keep the result."
    ),
    "UserMessageSendResult.blocked": (
        "`true` refuses the message: it never reaches the model, and no later hook runs."
    ),
    "UserMessageSendResult.reason": "Why the message is refused; the user sees it.",
    "AfterTurnResult.result": _ACTION,
    "AfterTurnResult.messages": _MUTATE,
    "AfterTurnResult.callback": _CALLBACK,
    "AfterTurnResult.callback_args": _CALLBACK_ARGS,
    "AgentStopResult.result": _ACTION,
    "AgentStopResult.follow_up_messages": (
        "Messages sent as the user's, so the agent keeps going. Every hook's follow-ups "
        "are kept, in call order, whatever `result` says."
    ),
    "AgentStopResult.messages": _MUTATE,
    "AgentStopResult.callback": _CALLBACK,
    "AgentStopResult.callback_args": _CALLBACK_ARGS,
}

_NO_DEFAULT = object()


@attrs.frozen(kw_only=True)
class FieldDoc:
    """One wire field of a model, as the schemas and docs/EVENTS.md describe it."""

    name: str
    type: Any
    doc: str
    default: Any = _NO_DEFAULT

    @property
    def required(self) -> bool:
        return self.default is _NO_DEFAULT


def meaning(cls: type, name: str | None = None) -> str:
    """The meaning of ``cls.name`` (or of ``cls``), looked up along the class's bases."""
    for klass in cls.__mro__:
        key = klass.__name__ if name is None else f"{klass.__name__}.{name}"
        if key in FIELD_DOCS:
            return FIELD_DOCS[key]
    what = cls.__name__ if name is None else f"{cls.__name__}.{name}"
    raise LookupError(f"{what} has no meaning in kodelet.schema.FIELD_DOCS")


def _default(field: attrs.Attribute[Any]) -> Any:
    default = field.default
    if default is attrs.NOTHING:
        return _NO_DEFAULT
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()  # type: ignore[union-attr]
    return converter.unstructure(default)


def fields_of(cls: type) -> list[FieldDoc]:
    """The wire fields of an attrs model, in declaration order, with wire names."""
    hints = get_type_hints(cls)
    return [
        FieldDoc(
            name=wire_name(f),
            type=hints[f.name],
            doc=meaning(cls, f.name),
            default=_default(f),
        )
        for f in attrs.fields(cls)
    ]


def unwrap_optional(tp: Any) -> tuple[bool, Any]:
    """``X | None`` -> ``(True, X)``; the models use no other unions."""
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"no JSON Schema for {tp!r}")
        return True, args[0]
    return False, tp


_SCALARS: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    optional, inner = unwrap_optional(tp)
    if optional:
        return {"anyOf": [_type_schema(inner, defs), {"type": "null"}]}
    origin = get_origin(tp)
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if tp is Any:
        return {}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin is list:
        (item,) = get_args(tp)
        return {"type": "array", "items": _type_schema(item, defs)}
    if origin is dict:
        _, value = get_args(tp)
        if value is Any:
            return {"type": "object"}
        return {"type": "object", "additionalProperties": _type_schema(value, defs)}
    if attrs.has(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # placeholder: a model may refer to itself
            defs[tp.__name__] = _object_schema(tp, defs, description=meaning(tp))
        return {"$ref": f"#/$defs/{tp.__name__}"}
    raise TypeError(f"no JSON Schema for {tp!r}")


def _object_schema(cls: type, defs: dict[str, Any], *, description: str) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for field in fields_of(cls):
        prop = {"description": field.doc, **_type_schema(field.type, defs)}
        if not field.required:
            prop["default"] = field.default
        properties[field.name] = prop
    out: dict[str, Any] = {"type": "object", "description": description, "properties": properties}
    required = [f.name for f in fields_of(cls) if f.required]
    if required:
        out["required"] = required
    return out


def _document(title: str, cls: type, description: str, event: Event | None) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    body = _object_schema(cls, defs, description=description)
    if event is not None:
        event_prop = {"description": meaning(cls, "event"), "const": event.value}
        body["properties"] = {"event": event_prop, **body["properties"]}
    doc: dict[str, Any] = {"$schema": DIALECT, "title": title, **body}
    if defs:
        doc["$defs"] = dict(sorted(defs.items()))
    return doc


def payload_schema(event: Event) -> dict[str, Any]:
    """What a hook receives for ``event``: the payload document."""
    return _document(
        f"kodelet {event.value} payload",
        PAYLOAD_TYPES[event],
        f"What kodelet sends the {event.value} hooks.",
        event,
    )


def result_schema(event: Event) -> dict[str, Any]:
    """What a hook may answer for ``event``; every field may be left out."""
    return _document(
        f"kodelet {event.value} result",
        RESULT_TYPES[event],
        f"What a hook of {event.value} may answer; an empty answer or {{}} means no action.",
        None,
    )


def schema(event: Event, *, result: bool = False) -> dict[str, Any]:
    return result_schema(event) if result else payload_schema(event)
