"""How deep and how big the data handed to hooks may be, checked without recursion.

The model writes ``tool_input``. A payload nested a thousand levels deep must be
refused with one clear error before any hook runs: left alone, it makes each
hook's conversion hit Python's recursion limit inside that hook's own ``try``,
so every executable guardrail "fails" without running and a fail-open one lets
the call through. The walk here is iterative, so the check cannot itself hit
the limit it guards against, and it is the one place that also refuses what
cannot be written as standard JSON: lone surrogates, NaN and infinities,
integers too long to print, keys that are not strings, arbitrary objects.

Size is counted as the JSON text would be, give or take string escapes: UTF-8
bytes of every string and key plus their quotes and separators, a few bytes per
number. It is a bound against memory exhaustion, not an exact byte count.
"""

from __future__ import annotations

import functools
import math
import operator
import types
import typing
from collections.abc import Callable
from typing import Any

import attrs

from .errors import KodeletError

MAX_DEPTH = 64
"""Deepest nesting of objects and arrays in a payload or a hook's answer, the
payload itself counting as level 1 (so ``tool_input`` may nest 63 levels)."""

MAX_SIZE = 16 * 1024 * 1024
"""Largest payload or answer, in bytes of JSON text (about)."""

_INT_BITS = 14_000  # about 4,200 digits: below what Python agrees to print (4,300)
_PATH_PARTS = 8


class BoundsError(KodeletError, ValueError):
    """Data over a limit or not writable as JSON; the message names the limit and the path."""


class _Over(Exception):
    def __init__(self, node: _Node | None, key: Any, why: str) -> None:
        self.node, self.key, self.why = node, key, why


# (value, depth of its container, parent node, key in the parent, where its copy goes):
# the parent chain is followed only to name the path when something is wrong.
_Node = tuple[Any, int, Any, Any, Any]


def _text_size(s: str, node: _Node | None, key: Any) -> int:
    """UTF-8 length of a non-ASCII string; a lone surrogate cannot be encoded at all."""
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError as exc:
        bad = f"\\u{ord(s[exc.start]):04x}"
        why = f"a string that is not valid Unicode (lone surrogate {bad})"
        raise _Over(node, key, why) from None


def _atom_size(value: Any, json_only: bool, node: _Node | None, key: Any) -> int:
    kind = type(value)
    if kind is str:
        return (len(value) if value.isascii() else _text_size(value, node, key)) + 3
    if kind is bool or value is None:
        return 6
    if kind is int:
        if value.bit_length() > _INT_BITS:
            raise _Over(node, key, f"an integer over {_INT_BITS} bits")
        return int(value.bit_length()) // 3 + 2
    if kind is float:
        if json_only and not math.isfinite(value):
            raise _Over(node, key, f"{value!r}, which is not a JSON number")
        return 25
    # Subclasses (str and int enums) print as the plain value.
    if isinstance(value, bool):
        return 6
    if isinstance(value, int):
        return _atom_size(int(value), json_only, node, key)
    if isinstance(value, float):
        return _atom_size(float(value), json_only, node, key)
    if isinstance(value, str):
        return _atom_size(str(value), json_only, node, key)
    if json_only:
        raise _Over(node, key, f"a {kind.__name__}, which is not JSON data")
    return 25


@functools.cache
def _fields_of(kind: type) -> tuple[tuple[str, ...], Callable[[Any], Any]]:
    """An attrs class's field names and one getter returning all their values."""
    names = tuple(a.name for a in attrs.fields(kind))
    get = operator.attrgetter(*names) if names else (lambda _: ())
    if len(names) == 1:
        return names, lambda obj: (get(obj),)
    return names, get


def _children(value: Any) -> tuple[bool, Any] | None:
    """(is a mapping, its items) for a container, None for an atom."""
    kind = type(value)
    if kind is dict:
        return True, value.items()
    if kind is list or kind is tuple:
        return False, value
    if attrs.has(kind):
        names, get = _fields_of(kind)
        return True, zip(names, get(value), strict=True)
    if isinstance(value, dict):
        return True, value.items()
    if isinstance(value, list | tuple):
        return False, value
    return None


def check_bounds(
    data: Any,
    what: str = "payload",
    *,
    depth: int = 0,
    max_depth: int = MAX_DEPTH,
    max_size: int = MAX_SIZE,
    json_only: bool = True,
) -> int:
    """Raise :class:`BoundsError` unless ``data`` is JSON data within the limits.

    ``depth`` is how many levels already enclose ``data`` (1 for a rewritten
    ``input``, which replaces a field of the payload). attrs instances count as
    objects, so a payload model can be checked as it is. ``json_only=False``
    lets other atoms through (TOML dates, NaN), still bounded. Returns the size."""
    if max_depth == MAX_DEPTH and max_size == MAX_SIZE and depth < MAX_DEPTH - 1:
        size = _quick(data, depth)
        if size is not None:
            return size
    try:
        return _walk(data, depth, max_depth, max_size, json_only, None)
    except _Over as over:
        raise BoundsError(f"{_path(what, over)}: {over.why}") from None


def bounded_copy(data: Any, what: str = "payload", *, depth: int = 0) -> Any:
    """A deep copy of JSON data, made in the same single walk that checks it
    (:func:`check_bounds`): what a reducer keeps to notice in-place edits."""
    if type(data) is dict and depth <= MAX_DEPTH - 1 and _flat_size(data) is not None:
        return dict(data)
    holder: dict[Any, Any] = {}
    try:
        _walk(data, depth, MAX_DEPTH, MAX_SIZE, True, holder)
    except _Over as over:
        raise BoundsError(f"{_path(what, over)}: {over.why}") from None
    return holder[None]


def _walk(
    data: Any,
    depth0: int,
    max_depth: int,
    max_size: int,
    json_only: bool,
    into: dict[Any, Any] | None,
) -> int:
    """The one walk: a stack of (value, depth, parent node, key, copy's parent)."""
    size = 0
    tuples: list[tuple[Any, Any, list[Any]]] = []
    stack: list[_Node] = [(data, depth0, None, None, into)]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        value, depth, _, key, dst = node
        kind = type(value)
        if kind is dict:
            mapping, items = True, value.items()
        elif kind is list:
            mapping, items = False, value
        else:
            shape = _children(value)
            if shape is None:
                size += _atom_size(value, json_only, node[2], key)
                if dst is not None:
                    dst[key] = value
                continue
            mapping, items = shape
        depth += 1
        if depth > max_depth:
            raise _Over(node[2], key, f"nested deeper than {max_depth} levels")
        size += 2
        if mapping:
            out: Any = {} if dst is not None else None
            for k, v in items:
                if type(k) is not str:
                    raise _Over(node, None, f"a key that is not a string ({k!r:.40})")
                size += (len(k) if k.isascii() else _text_size(k, node, k)) + 4
                kind = type(v)
                if kind is str:
                    if len(v) > max_size:
                        raise _Over(node, k, f"a string over {max_size} bytes")
                    size += (len(v) if v.isascii() else _text_size(v, node, k)) + 3
                elif kind is bool or v is None:
                    size += 6
                else:
                    push((v, depth, node, k, out))
                    continue
                if out is not None:
                    out[k] = v
        else:
            out = [] if dst is not None else None
            for i, v in enumerate(items):
                kind = type(v)
                if kind is str:
                    if len(v) > max_size:
                        raise _Over(node, i, f"a string over {max_size} bytes")
                    size += (len(v) if v.isascii() else _text_size(v, node, i)) + 3
                elif kind is bool or v is None:
                    size += 6
                else:
                    push((v, depth, node, i, out))
                    v = None
                if out is not None:
                    out.append(v)
            if out is not None and isinstance(value, tuple):
                tuples.append((dst, key, out))
        if out is not None:
            dst[key] = out
        if size > max_size:
            raise _Over(node[2], key, f"larger than {max_size} bytes of JSON")
    for parent, key, items_ in reversed(tuples):
        parent[key] = tuple(items_)
    return size


# The quick path. Almost every payload is a model whose string fields are plain
# ASCII and whose dicts are flat maps of strings (a shell command, a file path):
# that case is settled by C code (str.join), and anything else, including every
# error, takes the full walk. Same answer either way, an order of magnitude apart.


def _flat_size(d: dict[Any, Any]) -> int | None:
    """The size of a dict of ASCII strings to ASCII strings, or None if it is not one."""
    try:
        keys = "".join(d)
        values = "".join(d.values())
    except TypeError:
        return None
    if not (keys.isascii() and values.isascii()):
        return None
    size = len(keys) + len(values) + 7 * len(d) + 2
    return size if size <= MAX_SIZE else None


@functools.cache
def _quick_for(kind: type) -> Callable[[Any], int | None] | None:
    """A function settling an attrs class's instances on the quick path, compiled once
    per class: its string fields and its dicts' keys and values joined in one C call."""
    if not attrs.has(kind):
        return None
    hints = typing.get_type_hints(kind)
    strings: list[str] = []
    dicts: list[tuple[str, bool]] = []  # (name, may be None)
    rest: list[str] = []
    for a in attrs.fields(kind):
        hint = hints.get(a.name)
        literal = typing.get_origin(hint) is typing.Literal
        optional = [t for t in typing.get_args(hint) if t is not type(None)]
        optional_dict = (
            typing.get_origin(hint) in (typing.Union, types.UnionType)
            and len(optional) == 1
            and typing.get_origin(optional[0]) is dict
        )
        if hint is str or (literal and all(isinstance(x, str) for x in typing.get_args(hint))):
            strings.append(a.name)
        elif typing.get_origin(hint) is dict or optional_dict:
            dicts.append((a.name, optional_dict))  # a rewritten ``input``: flat, mostly
        else:
            rest.append(a.name)
    lines = ["def quick(obj):"]
    for i, (name, optional_dict) in enumerate(dicts):
        lines.append(f"    d{i} = obj.{name}")
        if optional_dict:
            lines.append(f"    if d{i} is None: d{i} = {{}}")
        lines.append(f"    if type(d{i}) is not dict: return None")
    joined = [f"obj.{n}" for n in strings]
    joined += [f"*d{i}, *d{i}.values()" for i in range(len(dicts))]
    count = " + ".join([f"len(d{i})" for i in range(len(dicts))] or ["0"])
    lines += [
        "    try:",
        f"        text = ''.join([{', '.join(joined)}])",
        "    except TypeError:",
        "        return None",
        "    if not text.isascii():",
        "        return None",
        f"    size = len(text) + 10 * ({count}) + {3 * len(strings) + 2}",
    ]
    lines += [f"    size += rest(obj.{n})" for n in rest]
    lines.append(f"    return size if size <= {MAX_SIZE} else None")
    namespace: dict[str, Any] = {"rest": _rest_size}
    exec("\n".join(lines), namespace)  # field names come from the class itself
    quick: Callable[[Any], int | None] = namespace["quick"]
    return quick


def _rest_size(value: Any) -> int:
    """A field the quick path does not settle in C, walked in full (at depth 1)."""
    if value is None or type(value) is bool:
        return 6
    try:
        return _walk(value, 1, MAX_DEPTH, MAX_SIZE, True, None)
    except _Over:
        return MAX_SIZE + 1  # over: the full walk then says where and why


def _quick(data: Any, depth: int) -> int | None:
    """The size of a model or flat dict that is obviously within bounds, else None."""
    if type(data) is dict:
        return _flat_size(data)
    kind: type = type(data)
    quick = _quick_for(kind) if depth == 0 else None
    return None if quick is None else quick(data)


def check_model(obj: Any, what: str = "payload") -> bool:
    """:func:`check_bounds` for a payload or result model, fast in the common case.

    Returns True when ``obj`` took the quick path (every string ASCII, every dict
    field a flat map of strings): a shallow copy of its dicts is then a deep one."""
    kind: type = type(obj)
    quick = _quick_for(kind)
    if quick is not None and quick(obj) is not None:
        return True
    check_bounds(obj, what)
    return False


def _path(what: str, over: _Over) -> str:
    """``payload.tool_input.a[3].b``, its middle elided when the path is long."""
    parts: list[Any] = [over.key]
    node = over.node
    while node is not None and node[2] is not None:
        parts.append(node[3])
        node = node[2]
    parts.reverse()
    shown = [p for p in parts if p is not None]
    text = what
    for i, p in enumerate(shown):
        if len(shown) > _PATH_PARTS and i == _PATH_PARTS // 2:
            text += f".…{len(shown) - _PATH_PARTS} more…"
        if len(shown) > _PATH_PARTS and _PATH_PARTS // 2 <= i < len(shown) - _PATH_PARTS // 2:
            continue
        text += f"[{p}]" if isinstance(p, int) else f".{_label(p)}"
    return text


def _label(key: str) -> str:
    """A key as printed in a path: short, control characters and surrogates escaped."""
    short = key[:40]
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in short)
    return text + ("…" if len(key) > 40 else "")
