"""Runners: what turns (recipe, conversation, args) into the recipe's text output.

Two ship with kodelet. :class:`ExtractiveRunner` needs no model and no network:
it pulls the compact recipe's five sections straight out of the conversation,
the same way every time, so compaction works (and is testable) offline.
:class:`LLMRunner` hands the recipe to any model the ``llm`` library knows.

Messages carry only a role and a text, so what tools did is passed beside
them as :class:`ToolCall` records (a host keeps one per ``after_tool_call``);
paths merely mentioned in message text are picked up too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..errors import KodeletError
from ..payloads import Message, StructuredToolResult
from ..wire import converter, structure
from .loader import Recipe

if TYPE_CHECKING:
    from types import ModuleType


class RunnerError(KodeletError, RuntimeError):
    """A runner could not produce output; the message says why in one line."""


@attrs.frozen(kw_only=True)
class ToolCall:
    """One tool call as the summarizer needs it: what was asked and how it ended."""

    tool_name: str
    tool_input: dict[str, Any] = attrs.field(factory=dict)
    success: bool = True
    error: str | None = None

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ToolCall:
        """From the fields of an ``after_tool_call`` payload, as hosts and fixtures store them."""
        raw_out = data.get("tool_output")
        out = structure(raw_out, StructuredToolResult, what="tool_output") if raw_out else None
        name = data.get("tool_name")
        if not isinstance(name, str) or not name:
            raise ValueError("tool call without a 'tool_name'")
        tool_input = data.get("tool_input") or {}
        if not isinstance(tool_input, dict):
            raise ValueError(f"tool call {name}: 'tool_input' must be an object")
        return cls(
            tool_name=name,
            tool_input=dict(tool_input),
            success=True if out is None else out.success,
            error=None if out is None else out.error,
        )


class RecipeRunner(Protocol):
    def run(
        self,
        recipe: Recipe,
        messages: Sequence[Message],
        args: Mapping[str, str],
        *,
        tool_calls: Sequence[ToolCall] = (),
    ) -> str: ...


# -- the extractive runner ----------------------------------------------------

SECTIONS = (
    "Primary Objective",
    "Key Decisions",
    "Files Modified",
    "Errors & Resolutions",
    "Pending Tasks",
)
NONE = "- None recorded"

_SECTION_ITEM = re.compile(r"^\s*\d+\.\s+\*\*(.+?)\*\*", re.MULTILINE)
_EXT = r"[A-Za-z0-9]{1,8}"
_PATH = re.compile(
    r"(?<![\w/.:@-])((?:\.{0,2}/)?(?:[\w@.+-]+/)*[\w@+-][\w@.+-]*\.(" + _EXT + r"))(?![\w/])"
)
_KNOWN_EXT = frozenset(
    {
        "py",
        "pyi",
        "md",
        "txt",
        "rst",
        "toml",
        "yaml",
        "yml",
        "json",
        "jsonl",
        "ini",
        "cfg",
        "go",
        "rs",
        "js",
        "jsx",
        "ts",
        "tsx",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "java",
        "kt",
        "rb",
        "php",
        "sh",
        "bash",
        "zsh",
        "sql",
        "html",
        "css",
        "scss",
        "lock",
        "mod",
        "sum",
        "xml",
        "csv",
        "proto",
        "tf",
        "vue",
        "swift",
    }
)
_PATH_KEYS = frozenset(
    {
        "path",
        "file_path",
        "filepath",
        "file",
        "filename",
        "paths",
        "files",
        "target_file",
        "notebook_path",
        "dest",
        "source",
    }
)
_DECISION = re.compile(
    r"\b(decid\w*|decision|chose|choose|going with|go with|instead of|rather than|prefer\w*|"
    r"agreed|settled on|we'll use|i'll use|let's use|will use)\b",
    re.IGNORECASE,
)
_PENDING = re.compile(
    r"\b(todo|next step|next,|still need|still to|remaining|remains|pending|not yet|left to do|"
    r"follow[- ]up|afterwards|later)\b|^\s*[-*]\s*\[ \]",
    re.IGNORECASE | re.MULTILINE,
)
_ERROR_LINE = re.compile(
    r"^\s*(?:[A-Z]\w*(?:Error|Exception)|error|Error|ERROR|FAILED|fatal|Traceback)\b.*$",
    re.MULTILINE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _sentences(text: str) -> list[str]:
    return [s.strip(" -*\t") for s in _SENTENCE.split(text) if s.strip(" -*\t")]


def paths_in(text: str) -> list[str]:
    """Path-like words in free text: with a directory part, or a well-known file extension."""
    found: list[str] = []
    for m in _PATH.finditer(text):
        path, ext = m.group(1), m.group(2)
        if "://" in text[max(0, m.start() - 8) : m.start() + 3]:
            continue
        if "/" in path.strip("./") or ext.lower() in _KNOWN_EXT:
            found.append(path)
    return list(dict.fromkeys(found))


def paths_of(tool_input: Mapping[str, Any]) -> list[str]:
    """Paths a tool's input names under a path-like key."""
    out: list[str] = []
    for key, value in tool_input.items():
        if key.lower() not in _PATH_KEYS and not key.lower().endswith(("_path", "_file", "_paths")):
            continue
        values = value if isinstance(value, list) else [value]
        out.extend(v for v in values if isinstance(v, str) and v.strip())
    return out


def _describe_input(call: ToolCall) -> str:
    for key in ("command", "cmd", "query", "pattern"):
        value = call.tool_input.get(key)
        if isinstance(value, str) and value:
            return _clip(value, 120)
    paths = paths_of(call.tool_input)
    if paths:
        return ", ".join(paths)
    return _clip(json.dumps(call.tool_input, sort_keys=True), 120) if call.tool_input else ""


def section_titles(recipe: Recipe, args: Mapping[str, str]) -> tuple[str, ...]:
    """The recipe's own five numbered ``**Title**`` items, else the compact recipe's."""
    titles = tuple(t.strip().rstrip(":") for t in _SECTION_ITEM.findall(recipe.render(args)))
    return titles if len(titles) == len(SECTIONS) else SECTIONS


@attrs.frozen
class ExtractiveRunner:
    """Builds the summary from the conversation itself: no model, same input, same output."""

    max_items: int = 10

    def run(
        self,
        recipe: Recipe,
        messages: Sequence[Message],
        args: Mapping[str, str],
        *,
        tool_calls: Sequence[ToolCall] = (),
    ) -> str:
        if not messages and not tool_calls:
            return ""
        titles = section_titles(recipe, args)
        bodies = (
            self._objective(messages),
            self._bullets(self._decisions(messages)),
            self._bullets(self._files(messages, tool_calls)),
            self._bullets(self._errors(messages, tool_calls)),
            self._bullets(self._pending(messages)),
        )
        parts = ["## Summary"]
        parts.extend(f"### {title}\n\n{body}" for title, body in zip(titles, bodies, strict=True))
        return "\n\n".join(parts) + "\n"

    def _bullets(self, items: Iterable[str]) -> str:
        lines = [f"- {item}" for item in list(dict.fromkeys(items))[: self.max_items]]
        return "\n".join(lines) or NONE

    @staticmethod
    def _objective(messages: Sequence[Message]) -> str:
        first = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
        last = next(
            (m.content for m in reversed(messages) if m.role == "assistant" and m.content.strip()),
            "",
        )
        text = _clip(first, 600) if first else "No user request recorded."
        status = _sentences(last)
        if status:
            text += f"\n\nStatus: {_clip(status[0], 300)}"
        return text

    @staticmethod
    def _decisions(messages: Sequence[Message]) -> list[str]:
        # The user's later messages steer the work: they are decisions even without a cue word.
        users = [i for i, m in enumerate(messages) if m.role == "user" and m.content.strip()]
        steering = set(users[1:]) - {len(messages) - 1}
        out: list[str] = []
        for i, m in enumerate(messages):
            if i in steering:
                out.append("User: " + _clip(m.content, 240))
                continue
            out.extend(_clip(s, 240) for s in _sentences(m.content) if _DECISION.search(s))
        return out

    @staticmethod
    def _files(messages: Sequence[Message], tool_calls: Sequence[ToolCall]) -> list[str]:
        tools: dict[str, list[str]] = {}
        for call in tool_calls:
            for path in paths_of(call.tool_input):
                names = tools.setdefault(path, [])
                if call.tool_name not in names:
                    names.append(call.tool_name)
        lines = [f"`{path}` ({', '.join(names)})" for path, names in tools.items()]
        for m in messages:
            for path in paths_in(m.content):
                if path not in tools:
                    tools[path] = []
                    lines.append(f"`{path}` (mentioned)")
        return lines

    @staticmethod
    def _errors(messages: Sequence[Message], tool_calls: Sequence[ToolCall]) -> list[str]:
        out: list[str] = []
        for i, call in enumerate(tool_calls):
            if call.success:
                continue
            what = _describe_input(call)
            line = f"{call.tool_name}" + (f" `{what}`" if what else "")
            line += f": {_clip(call.error or 'failed', 240)}"
            later = tool_calls[i + 1 :]
            if any(
                c.success and c.tool_name == call.tool_name and c.tool_input == call.tool_input
                for c in later
            ):
                line += " (resolved: the same call succeeded later)"
            else:
                line += " (unresolved)"
            out.append(line)
        seen = " ".join(out)
        for m in messages:
            for match in _ERROR_LINE.finditer(m.content):
                text = _clip(match.group(0), 240)
                if text not in seen:
                    out.append(text)
        return out

    @staticmethod
    def _pending(messages: Sequence[Message]) -> list[str]:
        out: list[str] = []
        tail = list(messages[-3:])
        roles = [m.role for m in messages]
        last_assistant = max((i for i, r in enumerate(roles) if r == "assistant"), default=-1)
        if messages and messages[-1].role == "user" and len(messages) - 1 > last_assistant:
            out.append("Answer the latest request: " + _clip(messages[-1].content, 300))
        for m in tail:
            out.extend(_clip(s, 240) for s in _sentences(m.content) if _PENDING.search(s))
        return out


# -- the llm runner -----------------------------------------------------------


def transcript(messages: Sequence[Message], tool_calls: Sequence[ToolCall] = ()) -> str:
    """The conversation as plain text, for a model that reads it as context."""
    parts = ["<conversation>"]
    parts.extend(f"[{m.role}]\n{m.content}\n" for m in messages)
    parts.append("</conversation>")
    if tool_calls:
        parts.append("<tool_calls>")
        for call in tool_calls:
            status = "ok" if call.success else f"failed: {call.error or 'no error text'}"
            args = json.dumps(converter.unstructure(call.tool_input), sort_keys=True)
            parts.append(f"- {call.tool_name} {args} -> {status}")
        parts.append("</tool_calls>")
    return "\n".join(parts)


def _import_llm() -> ModuleType:
    try:
        import llm
    except ImportError:
        raise RunnerError(
            "the llm runner needs the 'llm' package: pip install 'kodelet[llm]'"
        ) from None
    return llm


@attrs.frozen
class LLMRunner:
    """Sends the conversation as context and the rendered recipe as the instruction."""

    model: str

    def run(
        self,
        recipe: Recipe,
        messages: Sequence[Message],
        args: Mapping[str, str],
        *,
        tool_calls: Sequence[ToolCall] = (),
    ) -> str:
        llm = _import_llm()
        try:
            model = llm.get_model(self.model)
        except llm.UnknownModelError:
            raise RunnerError(
                f"unknown model {self.model!r} (`llm models` lists the installed ones)"
            ) from None
        prompt = f"{transcript(messages, tool_calls)}\n\n{recipe.render(args)}"
        text = model.prompt(prompt).text()
        return text if isinstance(text, str) else str(text)
