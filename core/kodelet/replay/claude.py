"""Import Claude Code transcripts (``~/.claude/projects/*/<session>.jsonl``).

A transcript is one JSON object per line. What a replay needs is in the
``user`` and ``assistant`` lines: a user line's ``message.content`` is either
the prompt (a string, or ``text`` blocks) or ``tool_result`` blocks answering
earlier ``tool_use`` blocks; an assistant line holds ``text`` and
``tool_use`` blocks and the token usage. Claude Code writes one line per
content block, so consecutive assistant lines with the same ``message.id``
are one model response. Everything else (summaries, snapshots, system lines,
meta and side-chain messages) is left out.

Tool names are mapped to Kodelet's (``Bash`` → ``bash``, ...) so hooks
written for Kodelet's tools, like the seeds' security guardrail, see the
names they expect; unknown tools keep their own name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from .. import jsonio
from ..payloads import StructuredToolResult
from .format import (
    REPLAY_DEPTH,
    AssistantItem,
    AutoCompact,
    Item,
    RecordedSession,
    SessionFormatError,
    ToolCall,
    Usage,
    UserItem,
    read_text,
)

CLAUDE_CONTEXT_WINDOW = 200_000

TOOL_NAMES = {
    "Bash": "bash",
    "Read": "file_read",
    "Write": "file_write",
    "Edit": "file_edit",
    "MultiEdit": "file_multi_edit",
    "Glob": "glob_tool",
    "Grep": "grep_tool",
    "WebFetch": "web_fetch",
    "TodoWrite": "todo_write",
    "Task": "subagent",
}

NO_RESULT = "no tool_result for this call in the transcript"


@attrs.define
class _Turn:
    message_id: str
    content: list[str] = attrs.field(factory=list)
    calls: list[tuple[str, str, dict[str, Any]]] = attrs.field(factory=list)
    usage: Usage = attrs.field(factory=Usage)


def _text(content: Any) -> str:
    """The text of a content value: a string, or the ``text`` of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()

    def n(key: str) -> int:
        v = raw.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    prompt = n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens")
    return Usage(input_tokens=prompt, output_tokens=n("output_tokens"))


def _result(name: str, block: dict[str, Any], extra: Any, timestamp: str) -> StructuredToolResult:
    text = _text(block.get("content"))
    failed = block.get("is_error") is True
    metadata: dict[str, Any] = {"content": text}
    if isinstance(extra, dict):
        metadata["toolUseResult"] = extra
    return StructuredToolResult(
        tool_name=name,
        success=not failed,
        error=(text or "tool failed") if failed else None,
        metadata=metadata,
        timestamp=timestamp,
    )


def import_lines(lines: list[str], name: str = "transcript") -> RecordedSession:
    """Build a session from transcript lines; ``SessionFormatError`` names the bad line."""
    items: list[Item | _Turn] = []
    results: dict[str, StructuredToolResult] = {}
    tool_names: dict[str, str] = {}
    conv_id = ""
    model = ""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = jsonio.loads(line, "entry", max_depth=REPLAY_DEPTH)
        except jsonio.JSONError as exc:
            why = f"not valid JSON: {exc.detail}" if exc.syntax else str(exc)
            raise SessionFormatError(f"{name}: line {number}: {why}") from None
        if not isinstance(entry, dict):
            raise SessionFormatError(f"{name}: line {number}: expected a JSON object")
        kind = entry.get("type")
        if kind not in ("user", "assistant") or entry.get("isSidechain") or entry.get("isMeta"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            raise SessionFormatError(f"{name}: line {number}: {kind} line without a message object")
        conv_id = conv_id or str(entry.get("sessionId") or "")
        stamp = entry.get("timestamp")
        timestamp = stamp if isinstance(stamp, str) else ""
        content = message.get("content")
        if kind == "assistant":
            model = model or str(message.get("model") or "")
            mid = str(message.get("id") or f"line-{number}")
            last = items[-1] if items else None
            turn = last if isinstance(last, _Turn) and last.message_id == mid else _Turn(mid)
            if turn is not last:
                items.append(turn)
            blocks = (
                content if isinstance(content, list) else [{"type": "text", "text": _text(content)}]
            )
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    if block["text"]:
                        turn.content.append(block["text"])
                elif block.get("type") == "tool_use":
                    call_id = str(block.get("id") or f"call-{number}")
                    tool = str(block.get("name") or "unknown")
                    raw_input = block.get("input")
                    tool_input = raw_input if isinstance(raw_input, dict) else {}
                    tool_names[call_id] = TOOL_NAMES.get(tool, tool)
                    turn.calls.append((call_id, tool_names[call_id], tool_input))
            if "usage" in message:
                turn.usage = _usage(message["usage"])
            continue
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call_id = str(block.get("tool_use_id") or "")
                    tool = tool_names.get(call_id, "unknown")
                    results[call_id] = _result(tool, block, entry.get("toolUseResult"), timestamp)
            continue
        text = _text(content)
        if text:
            items.append(UserItem(content=text))
    if not any(isinstance(i, UserItem | _Turn) for i in items):
        raise SessionFormatError(f"{name}: no user or assistant messages found")
    return RecordedSession(
        conv_id=conv_id or Path(name).stem,
        model=model,
        description=f"imported from Claude Code transcript {Path(name).name}",
        max_context_window=CLAUDE_CONTEXT_WINDOW,
        auto_compact=AutoCompact(enabled=True, threshold=0.8),
        items=tuple(_finish(i, results) for i in items),
    )


def _finish(item: Item | _Turn, results: dict[str, StructuredToolResult]) -> Item:
    if not isinstance(item, _Turn):
        return item
    calls = tuple(
        ToolCall(
            id=call_id,
            name=tool,
            input=tool_input,
            output=results.get(call_id)
            or StructuredToolResult(tool_name=tool, success=False, error=NO_RESULT),
        )
        for call_id, tool, tool_input in item.calls
    )
    return AssistantItem(content="\n\n".join(item.content), usage=item.usage, tool_calls=calls)


def import_file(path: str | Path) -> RecordedSession:
    return import_lines(read_text(path, "a transcript").splitlines(), str(path))
