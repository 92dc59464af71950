"""The one converter between attrs models and the JSON wire format.

Strict on purpose: hooks are untrusted input, and a hook that prints
``{"blocked": "yes"}`` must count as that hook's failure rather than be
coerced into something the user never meant.
"""

from __future__ import annotations

import json
import logging
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import IterableValidationError, IterableValidationNote
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.v import format_exception

from .bounds import MAX_DEPTH, MAX_SIZE, BoundsError, check_bounds
from .errors import KodeletError
from .events import Event
from .payloads import PAYLOAD_TYPES, BasePayload, StructuredToolResult
from .results import RESULT_TYPES

T = TypeVar("T")
log = logging.getLogger("kodelet.wire")

__all__ = [
    "MAX_DEPTH",
    "MAX_SIZE",
    "BoundsError",
    "WireError",
    "check_bounds",
    "converter",
    "payload_from_wire",
    "payload_to_wire",
    "result_from_wire",
    "result_to_wire",
    "structure",
]


def wire_name(field: attrs.Attribute[Any]) -> str:
    """A field's name on the wire: its ``wire`` metadata where it differs from the
    Python name (the seeds' ``toolName``, Claude Code's camelCase outputs), else the
    name itself. The one rename table: the converter, the error paths and the JSON
    Schemas (kodelet.schema) all read it."""
    name = field.metadata.get("wire")
    return name if isinstance(name, str) else field.name


def _renamed(cls: type) -> dict[str, str]:
    return {a.name: wire_name(a) for a in attrs.fields(cls) if wire_name(a) != a.name}


class WireError(KodeletError, ValueError):
    """A JSON document did not match the model; the message names the field."""


def _strict(kind: type, name: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if kind is float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"expected a number, got {type(value).__name__}")
            return float(value)
        if kind is int and isinstance(value, bool):
            raise TypeError("expected an integer, got bool")
        if not isinstance(value, kind):
            raise TypeError(f"expected {name}, got {type(value).__name__}")
        return value

    return hook


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(bool, _strict(bool, "a boolean"))
    conv.register_structure_hook(int, _strict(int, "an integer"))
    conv.register_structure_hook(float, _strict(float, "a number"))

    def is_list(t: Any) -> bool:
        return get_origin(t) is list

    def structure_list(value: Any, t: Any) -> list[Any]:
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {type(value).__name__}")
        (item,) = get_args(t) or (Any,)
        out: list[Any] = []
        errors: list[Exception] = []
        for i, v in enumerate(value):
            try:
                out.append(conv.structure(v, item))
            except Exception as exc:  # noted with its index so the error names messages[2]
                exc.add_note(IterableValidationNote(f"Structuring {t} @ index {i}", i, item))
                errors.append(exc)
        if errors:
            raise IterableValidationError(f"While structuring {t!r}", errors, t)
        return out

    def is_dict(t: Any) -> bool:
        return get_origin(t) is dict

    def structure_dict(value: Any, t: Any) -> dict[Any, Any]:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        _, item = get_args(t) or (str, Any)
        if item is Any:
            return dict(value)
        return {conv.structure(k, str): conv.structure(v, item) for k, v in value.items()}

    conv.register_structure_hook_func(is_list, structure_list)
    conv.register_structure_hook_func(is_dict, structure_dict)

    def structure_model_fn(cls: type) -> Any:
        # cattrs alone would read a list or a string as a model with every field
        # defaulted (``"usage": []``): a model must be a JSON object. A field marked
        # ``read_apart`` is never structured here: its reader fills it in itself.
        renames: dict[str, Any] = {k: override(rename=v) for k, v in _renamed(cls).items()}
        renames |= {
            a.name: override(omit=True) for a in attrs.fields(cls) if a.metadata.get("read_apart")
        }
        inner: Any = make_dict_structure_fn(cls, conv, **renames)

        def structure_model(value: Any, _: Any) -> Any:
            if type(value) is not dict and not isinstance(value, Mapping):
                raise TypeError(f"expected an object, got {type(value).__name__}")
            return inner(value, cls)

        return structure_model

    conv.register_structure_hook_factory(attrs.has, structure_model_fn)

    renames: dict[str, Any] = {
        k: override(rename=v) for k, v in _renamed(StructuredToolResult).items()
    }
    tool_result_unstructure = make_dict_unstructure_fn(StructuredToolResult, conv, **renames)

    def unstructure_tool_result(obj: StructuredToolResult) -> dict[str, Any]:
        data = tool_result_unstructure(obj)
        return {k: v for k, v in data.items() if v is not None}

    conv.register_unstructure_hook(StructuredToolResult, unstructure_tool_result)
    return conv


converter = _make_converter()


def _drop_nones(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def payload_to_wire(payload: BasePayload) -> dict[str, Any]:
    """The seeds' payload JSON: ``event`` first, optional fields left out when unset."""
    data: dict[str, Any] = {"event": payload.EVENT.value}
    data.update(_drop_nones(converter.unstructure(payload)))
    if not data.get("recipe_name"):
        data.pop("recipe_name", None)
    return data


def _format(exc: BaseException, type_: Any) -> str:
    """cattrs' messages, minus Python internals a hook author cannot act on."""
    args = [a for a in get_args(type_) if a is not type(None)]
    if get_origin(type_) in (Union, types.UnionType) and len(args) == 1:
        type_ = args[0]  # an optional field: say what its value may be
    if get_origin(type_) is Literal:
        allowed = ", ".join(json.dumps(a) for a in get_args(type_))
        return f"expected one of {allowed}"
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    return format_exception(exc, type_)


def _wire_path(cls: Any, what: str, path: str) -> str:
    """``output.stopReason``, not ``output.stop_reason``: a path below ``what`` as the
    JSON spells it, read field by field down the models it runs through."""
    if not path.startswith(what):
        return path
    out = [what]
    for part in filter(None, path[len(what) :].split(".")):
        name, bracket, index = part.partition("[")
        field = attrs.fields_dict(cls).get(name) if attrs.has(cls) else None
        if field is None:
            out.append(part)
            cls = None
            continue
        out.append(wire_name(field) + bracket + index)
        cls = _model_in(typing.get_type_hints(cls).get(name), bool(bracket))
    return ".".join(out)


def _model_in(hint: Any, item: bool) -> Any:
    """The attrs class a field's value (or, with ``item``, an item of it) is read as."""
    for t in (hint, *get_args(hint)):
        if item and get_origin(t) is list:
            return _model_in(next(iter(get_args(t)), None), False)
        if isinstance(t, type) and attrs.has(t):
            return t
    return None


def _describe(exc: BaseException, what: str, cls: type) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        problems = cattrs.transform_error(exc, path=what, format_exception=_format)
        out = []
        for problem in problems:
            message, sep, path = problem.rpartition(" @ ")
            out.append(f"{message}{sep}{_wire_path(cls, what, path)}" if sep else problem)
        return "; ".join(out)
    return f"{what}: {exc}"


def structure(data: Any, cls: type[T], what: str = "$", *, error: type[WireError] = WireError) -> T:
    """Structure JSON-ish data into ``cls``, raising ``error`` (a :class:`WireError`)
    whose message names the field as the JSON spells it."""
    if type(data) is not dict and not isinstance(data, Mapping):
        raise error(f"{what}: expected a JSON object, got {type(data).__name__}")
    try:
        return converter.structure(data if type(data) is dict else dict(data), cls)
    except Exception as exc:  # cattrs raises several exception types
        raise error(_describe(exc, what, cls)) from None


def payload_from_wire(
    event: Event, data: Mapping[str, Any], *, strict: bool = False
) -> BasePayload:
    """Build a payload from wire JSON; an ``event`` key, if present, must match.

    A field the event's payload does not have is dropped with a warning naming it,
    so a host newer than this kodelet keeps working; ``strict=True`` makes it an
    error instead, for payloads a person wrote (``hooks run --payload``), where a
    misspelt ``tool_inptu`` would test a guardrail against an empty input and pass
    (docs/DECISIONS.md)."""
    if not isinstance(data, Mapping):
        raise WireError(f"payload: expected a JSON object, got {type(data).__name__}")
    if "event" in data and data["event"] != event.value:
        raise WireError(f"payload is for event {data['event']!r}, not {event.value!r}")
    fields = {k: v for k, v in data.items() if k != "event"}
    cls = PAYLOAD_TYPES[event]
    _known_keys(fields, [a.name for a in attrs.fields(cls)], "payload", strict)
    output = fields.get("tool_output")
    if isinstance(output, Mapping):
        names = [wire_name(a) for a in attrs.fields(StructuredToolResult)]
        _known_keys(output, names, "payload.tool_output", strict)
    return structure(fields, cls, what="payload")


def _known_keys(data: Mapping[str, Any], known: list[str], what: str, strict: bool) -> None:
    unknown = [k for k in data if k not in known]
    if not unknown:
        return
    shown = ", ".join(ascii(k)[:60] for k in unknown[:3])
    if strict:
        raise WireError(f"{what}: unknown field {shown} (known: {', '.join(known)})")
    log.warning("%s: unknown field %s ignored", what, shown)


MISSING: Any = object()  # a required field the caller left out (Session, testing)


def build_payload(event: Event, fields: Mapping[str, Any]) -> BasePayload:
    """A validated payload from fields given as model objects or in wire form.

    ``None`` means "use the model's default"; :data:`MISSING` names a required field
    the caller left out. A ``tool_output`` given as a dict may leave its optional
    keys null. The one builder behind ``Session`` and ``kodelet.testing``."""
    # Model objects and plain data alike, walked without recursion before the converter
    # (which recurses) sees them: a model-written tool_input is a one-line error.
    check_bounds(
        {k: v for k, v in fields.items() if v is not MISSING}, event.value, json_only=False
    )
    data: dict[str, Any] = {}
    for key, value in fields.items():
        if value is MISSING:
            raise WireError(f"{event.value}: missing required field {key!r}")
        if value is not None and key != "event":
            data[key] = converter.unstructure(value)
    if isinstance(data.get("tool_output"), dict):
        data["tool_output"] = _drop_nones(data["tool_output"])
    return structure(data, PAYLOAD_TYPES[event], what=event.value)


def result_from_wire(event: Event, data: Any) -> Any:
    return structure(data, RESULT_TYPES[event], what="result")


def result_to_wire(event: Event, result: Any) -> dict[str, Any]:
    """Merged-result JSON: null and empty fields left out, but ``blocked`` always present
    for blocking events; ``ask`` only when true; a rewritten ``input``/``output`` is kept
    even if it is empty."""
    data = converter.unstructure(result)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("input", "output"):
            if value is not None:
                out[key] = value
        elif key == "blocked":
            if event.blocking:
                out[key] = value
        elif key == "ask":
            if value:
                out[key] = value
        elif value not in (None, "", [], {}):
            out[key] = value
    return out
