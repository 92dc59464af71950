"""The recorded-session file: what ``kodelet replay`` feeds through the hooks.

Validation is hand-written rather than left to the converter so that every
problem comes back as one line naming the exact place in the file
(``items[4].tool_calls[0].output.success: expected a boolean, got string``):
a user fixing a hand-edited or imported session needs the path, not a stack.
Unknown keys are errors too, because a misspelt ``tool_calls`` would
otherwise replay silently as a turn without tools.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from .. import jsonio
from ..bounds import MAX_DEPTH
from ..errors import KodeletError
from ..payloads import StructuredToolResult, UsageInfo
from ..wire import converter

VERSION = 1
DEMO_NAME = "demo_session.json"
HOSTS = ("kodelet", "claude-code")
"""The agent loop a session was recorded in, whose rules a replay follows: Claude Code
continues for a stop's follow-ups once per stop (not while ``stop_hook_active``)."""


class SessionFormatError(KodeletError, ValueError):
    """A session file does not match the format; the message is one line naming the place."""


@attrs.frozen(kw_only=True)
class AutoCompact:
    enabled: bool = False
    threshold: float | None = None


@attrs.frozen(kw_only=True)
class Usage:
    """A turn's recorded token usage; the window sizes may be left to the session's defaults."""

    input_tokens: int = 0
    output_tokens: int = 0
    current_context_window: int | None = None
    max_context_window: int | None = None

    def resolve(self, max_context_window: int) -> UsageInfo:
        """The usage a host reports: current window defaults to input + output tokens."""
        current = self.current_context_window
        if current is None:
            current = self.input_tokens + self.output_tokens
        window = self.max_context_window
        return UsageInfo(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            current_context_window=current,
            max_context_window=max_context_window if window is None else window,
        )


@attrs.frozen(kw_only=True)
class Subagent:
    """What a subagent did while the tool call that started it ran: its own items."""

    agent_id: str
    items: tuple[Item, ...]


@attrs.frozen(kw_only=True)
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]
    output: StructuredToolResult
    subagent: Subagent | None = None


@attrs.frozen(kw_only=True)
class UserItem:
    content: str
    type: Literal["user"] = "user"


# What the agent's client put in the conversation without a person typing it: the
# model saw it, so it joins the history, but ``user_message_send`` never fires on it.
NOTE_KINDS = (
    "interrupt",
    "command",
    "command-output",
    "task-notification",
    "stop-hook-feedback",
    "compact-summary",
    "meta",
)


@attrs.frozen(kw_only=True)
class NoteItem:
    kind: str
    content: str
    type: Literal["note"] = "note"


@attrs.frozen(kw_only=True)
class CompactionItem:
    """A compaction the recorded agent did itself: from here on the history is the summary
    and the recorded token counts are small again, whatever the replay did before."""

    trigger: str = ""
    pre_tokens: int | None = None
    summary: str = ""
    type: Literal["compaction"] = "compaction"


@attrs.frozen(kw_only=True)
class AssistantItem:
    content: str
    usage: Usage = attrs.field(factory=Usage)
    tool_calls: tuple[ToolCall, ...] = ()
    type: Literal["assistant"] = "assistant"


Item = UserItem | AssistantItem | NoteItem | CompactionItem


@attrs.frozen(kw_only=True)
class RecordedSession:
    conv_id: str
    items: tuple[Item, ...]
    max_context_window: int = 0
    auto_compact: AutoCompact = attrs.field(factory=AutoCompact)
    recipe_name: str = ""
    invoked_by: Literal["main", "subagent"] = "main"
    host: Literal["kodelet", "claude-code"] = "kodelet"
    model: str = ""
    description: str = ""
    cwd: str = ""
    # What an import had to leave out (bad lines); said once, never written to a file.
    warnings: tuple[str, ...] = attrs.field(default=(), eq=False)

    @property
    def turns(self) -> list[AssistantItem]:
        return [i for i in self.items if isinstance(i, AssistantItem)]

    def event_count(self) -> int:
        """How many events a replay fires at most: sizes the progress bar."""
        return _events(self.items)


def _events(items: Sequence[Item]) -> int:
    total = 0
    for item in items:
        if isinstance(item, UserItem):
            total += 1
        elif isinstance(item, AssistantItem):
            total += 1 + 2 * len(item.tool_calls) + (0 if item.tool_calls else 1)
            total += sum(_events(c.subagent.items) for c in item.tool_calls if c.subagent)
    return total


# -- reading -----------------------------------------------------------------

_TYPE_NAMES = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    dict: "an object",
    list: "a list",
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class _Reader:
    """Reads one JSON object field by field, failing with the field's path."""

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            where = path or "session"
            raise SessionFormatError(f"{where}: expected an object, got {_json_type(data)}")
        self.data: dict[str, Any] = data
        self.path = path

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def check_keys(self, allowed: Sequence[str]) -> None:
        for key in self.data:
            if key not in allowed:
                where = self.path or "session"
                raise SessionFormatError(
                    f"{where}: unknown field {key!r} (expected one of: {', '.join(allowed)})"
                )

    def get(
        self,
        key: str,
        kind: type,
        *,
        required: bool = False,
        default: Any = None,
        nullable: bool = False,
    ) -> Any:
        if key not in self.data:
            if required:
                raise SessionFormatError(f"{self.at(key)}: missing required field")
            return default
        value = self.data[key]
        if value is None and nullable:
            return None
        ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            ok, value = True, float(value)
        if not ok:
            raise SessionFormatError(
                f"{self.at(key)}: expected {_TYPE_NAMES[kind]}, got {_json_type(value)}"
            )
        return value

    def count(self, key: str, *, required: bool = False, default: int | None = 0) -> int | None:
        value = self.get(key, int, required=required, default=default)
        if value is not None and value < 0:
            raise SessionFormatError(f"{self.at(key)}: must not be negative, got {value}")
        return value  # type: ignore[no-any-return]


def _usage(data: Any, path: str) -> Usage:
    r = _Reader(data, path)
    r.check_keys(("input_tokens", "output_tokens", "current_context_window", "max_context_window"))
    return Usage(
        input_tokens=r.count("input_tokens") or 0,
        output_tokens=r.count("output_tokens") or 0,
        current_context_window=r.count("current_context_window", default=None),
        max_context_window=r.count("max_context_window", default=None),
    )


def _tool_output(data: Any, path: str) -> StructuredToolResult:
    r = _Reader(data, path)
    r.check_keys(("toolName", "success", "error", "metadata", "timestamp"))
    return StructuredToolResult(
        tool_name=r.get("toolName", str, required=True),
        success=r.get("success", bool, required=True),
        error=r.get("error", str, nullable=True),
        metadata=r.get("metadata", dict, nullable=True),
        timestamp=r.get("timestamp", str, default=""),
    )


def _subagent(data: Any, path: str) -> Subagent:
    r = _Reader(data, path)
    r.check_keys(("agent_id", "items"))
    items = r.get("items", list, required=True)
    return Subagent(
        agent_id=r.get("agent_id", str, default=""),
        items=tuple(_item(item, f"{r.at('items')}[{i}]") for i, item in enumerate(items)),
    )


def _tool_call(data: Any, path: str) -> ToolCall:
    r = _Reader(data, path)
    r.check_keys(("id", "name", "input", "output", "subagent"))
    name = r.get("name", str, required=True)
    if not name:
        raise SessionFormatError(f"{r.at('name')}: must not be empty")
    sub = r.get("subagent", dict, nullable=True)
    return ToolCall(
        id=r.get("id", str, required=True),
        name=name,
        input=r.get("input", dict, default={}),
        output=_tool_output(r.get("output", dict, required=True), r.at("output")),
        subagent=None if sub is None else _subagent(sub, r.at("subagent")),
    )


ITEM_TYPES = ("user", "assistant", "note", "compaction")


def _item(data: Any, path: str) -> Item:
    r = _Reader(data, path)
    kind = r.get("type", str, required=True)
    if kind == "user":
        r.check_keys(("type", "content"))
        return UserItem(content=r.get("content", str, required=True))
    if kind == "note":
        r.check_keys(("type", "kind", "content"))
        note = r.get("kind", str, required=True)
        if note not in NOTE_KINDS:
            raise SessionFormatError(
                f"{r.at('kind')}: expected one of {', '.join(NOTE_KINDS)}, got {note!r}"
            )
        return NoteItem(kind=note, content=r.get("content", str, default=""))
    if kind == "compaction":
        r.check_keys(("type", "trigger", "pre_tokens", "summary"))
        return CompactionItem(
            trigger=r.get("trigger", str, default=""),
            pre_tokens=r.count("pre_tokens", default=None),
            summary=r.get("summary", str, default=""),
        )
    if kind == "assistant":
        r.check_keys(("type", "content", "usage", "tool_calls"))
        calls = r.get("tool_calls", list, default=[])
        return AssistantItem(
            content=r.get("content", str, default=""),
            usage=_usage(r.get("usage", dict, default={}), r.at("usage")),
            tool_calls=tuple(
                _tool_call(c, f"{r.at('tool_calls')}[{i}]") for i, c in enumerate(calls)
            ),
        )
    expected = ", ".join(repr(t) for t in ITEM_TYPES)
    raise SessionFormatError(f"{r.at('type')}: expected one of {expected}, got {kind!r}")


_TOP_KEYS = (
    "version",
    "conv_id",
    "max_context_window",
    "auto_compact",
    "recipe_name",
    "invoked_by",
    "host",
    "model",
    "description",
    "cwd",
    "items",
)


def from_data(data: Any) -> RecordedSession:
    """Validate parsed JSON as a session; :class:`SessionFormatError` names the first problem."""
    r = _Reader(data, "")
    r.check_keys(_TOP_KEYS)
    version = r.get("version", int, required=True)
    if version != VERSION:
        raise SessionFormatError(
            f"version: unsupported version {version} (this kodelet reads {VERSION})"
        )
    auto = _Reader(r.get("auto_compact", dict, default={}), "auto_compact")
    auto.check_keys(("enabled", "threshold"))
    threshold = auto.get("threshold", float, nullable=True)
    if threshold is not None and not 0 < threshold <= 1:
        raise SessionFormatError(f"auto_compact.threshold: must be in (0, 1], got {threshold}")
    invoked_by = r.get("invoked_by", str, default="main")
    if invoked_by not in ("main", "subagent"):
        raise SessionFormatError(f"invoked_by: expected 'main' or 'subagent', got {invoked_by!r}")
    host = r.get("host", str, default="kodelet")
    if host not in HOSTS:
        expected = " or ".join(repr(h) for h in HOSTS)
        raise SessionFormatError(f"host: expected {expected}, got {host!r}")
    items = r.get("items", list, required=True)
    return RecordedSession(
        conv_id=r.get("conv_id", str, required=True),
        max_context_window=r.count("max_context_window") or 0,
        auto_compact=AutoCompact(
            enabled=auto.get("enabled", bool, default=False), threshold=threshold
        ),
        recipe_name=r.get("recipe_name", str, default=""),
        invoked_by=invoked_by,
        host=host,
        model=r.get("model", str, default=""),
        description=r.get("description", str, default=""),
        cwd=r.get("cwd", str, default=""),
        items=tuple(_item(item, f"items[{i}]") for i, item in enumerate(items)),
    )


REPLAY_CAP = 64 * 1024 * 1024
"""Largest session or transcript file read, in bytes."""
REPLAY_DEPTH = MAX_DEPTH + 8
"""A recorded payload sits a few levels inside a session file (items[i].tool_calls[j])."""


def loads(text: str, name: str = "session") -> RecordedSession:
    """Parse and validate; every error message starts with ``name``."""
    try:
        data = jsonio.loads(text, name, max_depth=REPLAY_DEPTH)
    except jsonio.JSONError as exc:
        if exc.syntax:
            raise SessionFormatError(f"{name}: not valid JSON: {exc.detail}") from None
        raise SessionFormatError(str(exc)) from None
    try:
        return from_data(data)
    except SessionFormatError as exc:
        raise SessionFormatError(f"{name}: {exc}") from None


def read_text(path: str | Path, kind: str) -> str:
    """A file's text, or a one-line :class:`SessionFormatError` naming the path and why
    it cannot be read (``kind`` is what a directory was mistaken for)."""
    if Path(path).is_dir():
        raise SessionFormatError(f"{path}: is a directory, not {kind}")
    try:
        return jsonio.read_file(path, kind, cap=REPLAY_CAP).decode("utf-8")
    except FileNotFoundError:
        raise SessionFormatError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise SessionFormatError(f"{path}: not UTF-8 text") from None
    except jsonio.FileError as exc:
        raise SessionFormatError(str(exc)) from None


def load(path: str | Path) -> RecordedSession:
    return loads(read_text(path, "a session file"), str(path))


def load_demo() -> RecordedSession:
    """The session shipped in the package, replayed when no file is given."""
    from importlib.resources import files

    text = (files("kodelet.replay") / DEMO_NAME).read_text(encoding="utf-8")
    return loads(text, DEMO_NAME)


# -- writing -----------------------------------------------------------------


def _drop_empty(data: Mapping[str, Any], keep: Sequence[str] = ()) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in keep or v not in (None, "", [], {})}


def _call_data(call: ToolCall) -> dict[str, Any]:
    data = {
        "id": call.id,
        "name": call.name,
        "input": call.input,
        "output": converter.unstructure(call.output),
    }
    if call.subagent is not None:
        sub = call.subagent
        data["subagent"] = {"agent_id": sub.agent_id, "items": _items_data(sub.items)}
    return data


def _items_data(items: Sequence[Item]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, UserItem):
            out.append({"type": "user", "content": item.content})
        elif isinstance(item, NoteItem):
            out.append({"type": "note", "kind": item.kind, "content": item.content})
        elif isinstance(item, CompactionItem):
            out.append(
                _drop_empty(
                    {
                        "type": "compaction",
                        "trigger": item.trigger,
                        "pre_tokens": item.pre_tokens,
                        "summary": item.summary,
                    }
                )
            )
        else:
            usage = _drop_empty(attrs.asdict(item.usage), keep=("input_tokens", "output_tokens"))
            calls = [_call_data(c) for c in item.tool_calls]
            out.append(
                _drop_empty(
                    {
                        "type": "assistant",
                        "content": item.content,
                        "usage": usage,
                        "tool_calls": calls,
                    },
                    keep=("content",),
                )
            )
    return out


def to_data(session: RecordedSession) -> dict[str, Any]:
    """The JSON form, readable back by :func:`from_data` (what an import writes)."""
    items = _items_data(session.items)
    auto = _drop_empty(attrs.asdict(session.auto_compact), keep=("enabled",))
    head = {
        "version": VERSION,
        "conv_id": session.conv_id,
        "model": session.model,
        "description": session.description,
        "max_context_window": session.max_context_window,
        "auto_compact": auto,
        "recipe_name": session.recipe_name,
        "invoked_by": session.invoked_by if session.invoked_by != "main" else "",
        "host": session.host if session.host != "kodelet" else "",
        "cwd": session.cwd,
    }
    return {**_drop_empty(head, keep=("version", "conv_id")), "items": items}


def dumps(session: RecordedSession) -> str:
    return json.dumps(to_data(session), indent=2, ensure_ascii=False) + "\n"
