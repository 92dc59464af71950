"""Import Claude Code transcripts (``~/.claude/projects/*/<session>.jsonl``).

A transcript is one JSON object per line. What a replay needs is in the
``user`` and ``assistant`` lines: a user line's ``message.content`` is either
the prompt (a string, or ``text`` and ``image`` blocks) or ``tool_result``
blocks answering earlier ``tool_use`` blocks; an assistant line holds
``text`` and ``tool_use`` blocks and the token usage. Claude Code writes one
line per content block, so assistant lines with the same ``message.id`` are
one model response.

Much of what Claude Code records as a "user" line is not a prompt a person
sent: interrupt markers, slash-command wrappers and their output, background
task notifications, a Stop hook's feedback (an ``isMeta`` line), and the
summary a compaction leaves. Those become notes: the model saw them, so they
join the history, but ``user_message_send`` never fires on them. A
``compact_boundary`` system line becomes a compaction item, so the replay's
token accounting starts again from the recording's.

Subagents: Claude Code 2.x records a subagent's messages inside the main
file as ``agent_progress`` lines pointing at the ``Task`` call that started
it, and again in ``<session>/subagents/agent-<id>.jsonl``. The first become
the subagent of that call; the second replays on its own as a subagent
session. Older transcripts mark them ``isSidechain`` in the main file; a
chain whose first prompt is a ``Task`` call's prompt becomes that call's
subagent.

A line that is not JSON, or not a usable object, is skipped with a warning
naming it (a transcript cut off mid-line is common); only a file with nothing
usable left is an error.

Tool calls and results go through the Claude dialect's translator
(:func:`kodelet.claude.mapping.to_kodelet_tool` and
:func:`~kodelet.claude.mapping.to_kodelet_output`), the one the bridge uses: a
replayed call hands hooks the tool name, input keys and ``tool_response`` that
``kodelet claude hook`` would have handed them live (``Write``'s ``content`` is
``file_write``'s ``text``). The session is marked ``host: claude-code``, so the
replay continues for a stop's follow-ups once per stop, as Claude Code does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from .. import jsonio
from ..claude.mapping import to_kodelet_output, to_kodelet_tool
from ..claude.transcript import content_text, note_kind
from ..payloads import StructuredToolResult
from .format import (
    REPLAY_DEPTH,
    AssistantItem,
    AutoCompact,
    CompactionItem,
    Item,
    NoteItem,
    RecordedSession,
    SessionFormatError,
    Subagent,
    ToolCall,
    Usage,
    UserItem,
    read_text,
)

CLAUDE_CONTEXT_WINDOW = 200_000

SUBAGENT_TOOLS = ("Task", "Agent")

NO_RESULT = "no tool_result for this call in the transcript"


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()

    def n(key: str) -> int:
        v = raw.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    prompt = n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens")
    return Usage(input_tokens=prompt, output_tokens=n("output_tokens"))


def _result(name: str, block: dict[str, Any], extra: Any, timestamp: str) -> StructuredToolResult:
    """What the bridge would have handed ``after_tool_call``: Claude Code's structured
    result (``toolUseResult``, its hooks' ``tool_response``), or the text the model got
    when the transcript kept none."""
    text = content_text(block.get("content"))
    if block.get("is_error") is True:
        return to_kodelet_output(name, None, error=text, timestamp=timestamp)
    response = extra if extra is not None else text
    return to_kodelet_output(name, response, timestamp=timestamp)


@attrs.define
class _Turn:
    message_id: str
    content: list[str] = attrs.field(factory=list)
    calls: list[tuple[str, str, dict[str, Any], str, dict[str, Any]]] = attrs.field(factory=list)
    """(id, kodelet tool name, kodelet input, Claude tool name, Claude input)"""
    usage: Usage = attrs.field(factory=Usage)


@attrs.define
class _Line:
    number: int
    entry: dict[str, Any]


def _ranges(numbers: list[int]) -> str:
    """``[3, 4, 5, 9]`` as ``3-5, 9``: a warning that names lines stays one short line."""
    out: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


class _Builder:
    """Turns transcript entries, in order, into session items."""

    def __init__(self, subagents: dict[str, list[_Line]], sidechains: list[list[_Line]]) -> None:
        self.items: list[Item | _Turn] = []
        self.results: dict[str, StructuredToolResult] = {}
        self.tool_names: dict[str, str] = {}
        self.subagents = subagents
        self.sidechains = sidechains
        self.model = ""

    def add(self, line: _Line) -> None:
        entry = line.entry
        kind = entry.get("type")
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            meta = entry.get("compactMetadata")
            meta = meta if isinstance(meta, dict) else {}
            pre = meta.get("preTokens")
            trigger = meta.get("trigger")
            self.items.append(
                CompactionItem(
                    trigger=trigger if isinstance(trigger, str) else "",
                    pre_tokens=pre if isinstance(pre, int) and not isinstance(pre, bool) else None,
                )
            )
            return
        if kind == "system":
            text = content_text(entry.get("content"))
            self.items.append(NoteItem(kind=note_kind(text) or "command", content=text))
            return
        message = entry["message"]
        stamp = entry.get("timestamp")
        timestamp = stamp if isinstance(stamp, str) else ""
        if kind == "assistant":
            self._assistant(line.number, message)
        else:
            self._user(entry, message.get("content"), timestamp)

    def _assistant(self, number: int, message: dict[str, Any]) -> None:
        self.model = self.model or str(message.get("model") or "")
        content = message.get("content")
        mid = str(message.get("id") or f"line-{number}")
        last = self.items[-1] if self.items else None
        turn = last if isinstance(last, _Turn) and last.message_id == mid else _Turn(mid)
        if turn is not last:
            self.items.append(turn)
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
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
                name, kodelet_input = to_kodelet_tool(tool, tool_input)
                self.tool_names[call_id] = name
                turn.calls.append((call_id, name, kodelet_input, tool, tool_input))
        if "usage" in message:
            turn.usage = _usage(message["usage"])

    def _user(self, entry: dict[str, Any], content: Any, timestamp: str) -> None:
        if entry.get("isCompactSummary"):
            text = content_text(content)
            last = self.items[-1] if self.items else None
            if isinstance(last, CompactionItem) and not last.summary:
                self.items[-1] = attrs.evolve(last, summary=text)
            else:
                self.items.append(NoteItem(kind="compact-summary", content=text))
            return
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call_id = str(block.get("tool_use_id") or "")
                    tool = self.tool_names.get(call_id, "unknown")
                    extra = entry.get("toolUseResult")
                    self.results[call_id] = _result(tool, block, extra, timestamp)
            rest = content_text(content, skip=("tool_result",))
            if rest:
                self._text(rest, meta=bool(entry.get("isMeta")))
            return
        text = content_text(content)
        if text.strip():
            self._text(text, meta=bool(entry.get("isMeta")))

    def _text(self, text: str, *, meta: bool) -> None:
        kind = note_kind(text, meta=meta)
        self.items.append(
            UserItem(content=text) if kind is None else NoteItem(kind=kind, content=text)
        )

    # -- finishing -------------------------------------------------------------

    def finish(self) -> tuple[Item, ...]:
        return tuple(self._finish(i) for i in self.items)

    def _finish(self, item: Item | _Turn) -> Item:
        if not isinstance(item, _Turn):
            return item
        calls = tuple(
            ToolCall(
                id=call_id,
                name=tool,
                input=tool_input,
                output=self.results.get(call_id)
                or StructuredToolResult(tool_name=tool, success=False, error=NO_RESULT),
                subagent=self._subagent(call_id, raw_name, raw_input),
            )
            for call_id, tool, tool_input, raw_name, raw_input in item.calls
        )
        return AssistantItem(content="\n\n".join(item.content), usage=item.usage, tool_calls=calls)

    def _subagent(self, call_id: str, raw_name: str, tool_input: dict[str, Any]) -> Subagent | None:
        lines = self.subagents.pop(call_id, None)
        if lines is None and raw_name in SUBAGENT_TOOLS:
            lines = self._sidechain_for(tool_input.get("prompt"))
        if not lines:
            return None
        agent = ""
        for line in lines:
            agent = agent or str(line.entry.get("agentId") or "")
        builder = _Builder({}, [])
        for line in lines:
            builder.add(line)
        return Subagent(agent_id=agent, items=builder.finish())

    def _sidechain_for(self, prompt: Any) -> list[_Line] | None:
        """An old-style sidechain whose first prompt is this ``Task`` call's prompt."""
        if not isinstance(prompt, str) or not prompt:
            return None
        for index, chain in enumerate(self.sidechains):
            first = chain[0].entry
            if first.get("type") == "user" and content_text(first["message"].get("content")) == (
                prompt
            ):
                return self.sidechains.pop(index)
        return None


def _usable(entry: Any) -> str | None:
    """Why a parsed line cannot be used, or None."""
    if not isinstance(entry, dict):
        return "not a JSON object"
    kind = entry.get("type")
    if kind in ("user", "assistant") and not isinstance(entry.get("message"), dict):
        return f"{kind} line without a message object"
    return None


def _progress_entry(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The subagent message an ``agent_progress`` line carries, with its ``Task`` call id."""
    data = entry.get("data")
    if not isinstance(data, dict) or data.get("type") != "agent_progress":
        return None
    inner = data.get("message")
    parent = entry.get("parentToolUseID")
    if not isinstance(inner, dict) or not isinstance(parent, str) or _usable(inner):
        return None
    if inner.get("type") not in ("user", "assistant"):
        return None
    inner = {**inner, "agentId": data.get("agentId") or inner.get("agentId")}
    return parent, inner


def import_lines(lines: list[str], name: str = "transcript") -> RecordedSession:
    """Build a session from transcript lines.

    Unusable lines are skipped and named in ``warnings``; ``SessionFormatError``
    only when no user or assistant message is left.
    """
    skipped: dict[str, list[int]] = {}
    main: list[_Line] = []
    side: list[_Line] = []
    subagents: dict[str, list[_Line]] = {}
    conv_id = cwd = ""
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            entry = jsonio.loads(text, "entry", max_depth=REPLAY_DEPTH)
        except jsonio.JSONError:
            skipped.setdefault("not valid JSON", []).append(number)
            continue
        why = _usable(entry)
        if why is not None:
            skipped.setdefault(why, []).append(number)
            continue
        conv_id = conv_id or str(entry.get("sessionId") or "")
        cwd = cwd or (entry["cwd"] if isinstance(entry.get("cwd"), str) else "")
        kind = entry.get("type")
        if kind == "progress":
            found = _progress_entry(entry)
            if found is not None:
                subagents.setdefault(found[0], []).append(_Line(number, found[1]))
            continue
        kept = kind == "system" and entry.get("subtype") in ("compact_boundary", "local_command")
        if kind not in ("user", "assistant") and not kept:
            continue
        (side if entry.get("isSidechain") else main).append(_Line(number, entry))

    own = [line for line in main if line.entry.get("type") in ("user", "assistant")]
    is_subagent = not own and bool(side)
    chains: list[list[_Line]] = []
    if is_subagent:
        main, side = side, []
    for line in side:
        if line.entry.get("parentUuid") is None or not chains:
            chains.append([])
        chains[-1].append(line)

    builder = _Builder(subagents, chains)
    for line in main:
        builder.add(line)
    items = builder.finish()
    warnings = [
        f"{name}: skipped line{'s' if len(nums) > 1 else ''} {_ranges(nums)}: {why}"
        for why, nums in skipped.items()
    ]
    unlinked = sum(len(c) for c in builder.sidechains) + sum(
        len(v) for v in builder.subagents.values()
    )
    if unlinked:
        warnings.append(f"{name}: {unlinked} subagent lines match no Task call; left out")
    if not any(isinstance(i, UserItem | AssistantItem) for i in items):
        why = f" ({'; '.join(w.split(': ', 1)[1] for w in warnings)})" if warnings else ""
        raise SessionFormatError(f"{name}: no user or assistant messages found{why}")
    agent = ""
    if is_subagent:
        agent = str(main[0].entry.get("agentId") or "")
    described = f"subagent {agent} " if agent else ""
    return RecordedSession(
        conv_id=conv_id or Path(name).stem,
        model=builder.model,
        description=f"{described}imported from Claude Code transcript {Path(name).name}",
        max_context_window=CLAUDE_CONTEXT_WINDOW,
        auto_compact=AutoCompact(enabled=True, threshold=0.8),
        invoked_by="subagent" if is_subagent else "main",
        host="claude-code",
        cwd=cwd,
        items=items,
        warnings=tuple(warnings),
    )


def import_text(text: str, name: str = "transcript") -> RecordedSession:
    return import_lines(text.splitlines(), name)


def import_file(path: str | Path) -> RecordedSession:
    return import_text(read_text(path, "a transcript"), str(path))
