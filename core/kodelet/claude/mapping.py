"""The one table between Claude Code's hook world and kodelet's, read in both directions.

Events, tool names, tool input keys and payload fields: the Claude Code adapter,
the bridge and the transcript importer all translate through here, so a name
is never mapped one way in one place and another way elsewhere. Anything the
table does not know (an MCP tool, a new input key) passes through unchanged.

Tool input keys are those of kodelet's tools as the seeds' hooks see them
(``bash`` takes ``command``; ``file_read`` ``file_path``/``offset``/``line_limit``;
``file_write`` ``file_path``/``text``; ``file_edit`` ``file_path``/``old_text``/
``new_text``/``replace_all``; ``grep_tool`` ``pattern``/``path``/``include``;
``subagent`` ``question``). Keys both sides share (``command``, ``file_path``,
``pattern``, ``path``, ``url``, ``todos``, ...) are not listed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs

from ..events import Event
from ..payloads import (
    AfterToolCallPayload,
    AgentStopPayload,
    BasePayload,
    BeforeToolCallPayload,
    InvokedBy,
    Message,
    StructuredToolResult,
    UserMessageSendPayload,
)
from ..tooltext import model_text
from ..wire import converter as _wire
from .events import HookEvent

if TYPE_CHECKING:
    from .types import (
        HookInput,
        PostToolUseFailureInput,
        PostToolUseInput,
        PreSkillShellCommandInput,
    )

# --- events ---------------------------------------------------------------


@attrs.frozen
class EventMapping:
    claude: HookEvent
    kodelet: Event
    invoked_by: InvokedBy = "main"
    tool_failed: bool | None = None
    """For after_tool_call: which of PostToolUse (False) and PostToolUseFailure (True)."""


EVENT_MAP: tuple[EventMapping, ...] = (
    EventMapping(HookEvent.PRE_TOOL_USE, Event.BEFORE_TOOL_CALL),
    # A skill's shell line is a shell call to kodelet's guards (marked by SKILL_SHELL in
    # the payload's metadata); a before_tool_call goes back to Claude as PreToolUse.
    EventMapping(HookEvent.PRE_SKILL_SHELL_COMMAND, Event.BEFORE_TOOL_CALL),
    EventMapping(HookEvent.POST_TOOL_USE, Event.AFTER_TOOL_CALL, tool_failed=False),
    EventMapping(HookEvent.POST_TOOL_USE_FAILURE, Event.AFTER_TOOL_CALL, tool_failed=True),
    EventMapping(HookEvent.USER_PROMPT_SUBMIT, Event.USER_MESSAGE_SEND),
    EventMapping(HookEvent.STOP, Event.AGENT_STOP),
    EventMapping(HookEvent.SUBAGENT_STOP, Event.AGENT_STOP, invoked_by="subagent"),
)


def to_kodelet_event(event: HookEvent) -> EventMapping | None:
    """The kodelet event a Claude event runs as, or None when kodelet has no such point."""
    return next((m for m in EVENT_MAP if m.claude == event), None)


def to_claude_event(
    event: Event, *, invoked_by: InvokedBy = "main", tool_failed: bool = False
) -> HookEvent | None:
    """The Claude event for a kodelet event; None for after_turn, which Claude lacks."""
    for m in EVENT_MAP:
        if m.kodelet != event:
            continue
        if m.tool_failed is not None and m.tool_failed != tool_failed:
            continue
        if event == Event.AGENT_STOP and m.invoked_by != invoked_by:
            continue
        return m.claude
    return None


# --- tools ----------------------------------------------------------------

Renames = tuple[tuple[str, str], ...]


@attrs.frozen
class ToolMapping:
    claude: str
    kodelet: str
    keys: Renames = ()
    """(Claude key, kodelet key) pairs for the input keys whose names differ."""
    item_keys: tuple[str, Renames] | None = None
    """A list-valued key whose items' keys are renamed too (MultiEdit's ``edits``)."""
    scale: tuple[tuple[str, int], ...] = ()
    """(Claude key, factor): the Claude value is the kodelet value times factor."""


_EDIT_KEYS: Renames = (("old_string", "old_text"), ("new_string", "new_text"))

TOOLS: tuple[ToolMapping, ...] = (
    # Claude's Bash timeout is in milliseconds, kodelet's in seconds.
    ToolMapping("Bash", "bash", (("run_in_background", "background"),), scale=(("timeout", 1000),)),
    ToolMapping("Read", "file_read", (("limit", "line_limit"),)),
    ToolMapping("Write", "file_write", (("content", "text"),)),
    ToolMapping("Edit", "file_edit", _EDIT_KEYS),
    ToolMapping("MultiEdit", "file_multi_edit", item_keys=("edits", _EDIT_KEYS)),
    ToolMapping("Glob", "glob_tool"),
    ToolMapping("Grep", "grep_tool", (("glob", "include"),)),
    ToolMapping("WebFetch", "web_fetch"),
    ToolMapping("TodoWrite", "todo_write"),
    ToolMapping("Task", "subagent", (("prompt", "question"),)),
    # Claude Code 2.1.x names its subagent tool Agent; Task is the older name.
    ToolMapping("Agent", "subagent", (("prompt", "question"),)),
    # Monitor runs a shell command in the background and streams its output (Qwen
    # Code's monitor too): a shell call, so a guard on bash sees it. Bash stays the
    # Claude tool a kodelet bash call is told as (the first mapping of a kodelet name).
    ToolMapping("Monitor", "bash"),
)

_BY_CLAUDE: dict[str, ToolMapping] = {m.claude: m for m in TOOLS}
_BY_KODELET: dict[str, ToolMapping] = {m.kodelet: m for m in reversed(TOOLS)}
"""kodelet tool name -> its mapping; where two Claude names share one, the first (Task)."""
TOOL_NAMES: dict[str, str] = {m.claude: m.kodelet for m in TOOLS}
"""Claude tool name -> kodelet tool name."""


def rename(data: dict[str, Any], pairs: Renames) -> dict[str, Any]:
    """Rename keys; a renamed key's value wins over a stray key already holding the new
    name, because the renamed one is what the tool will actually read."""
    out = dict(data)
    for old, new in pairs:
        if old in data:
            out.pop(old)
            out[new] = data[old]
    return out


def _translate(m: ToolMapping, tool_input: dict[str, Any], to_kodelet: bool) -> dict[str, Any]:
    pairs = m.keys if to_kodelet else tuple((b, a) for a, b in m.keys)
    out = rename(tool_input, pairs)
    if m.item_keys is not None:
        key, item_pairs = m.item_keys
        if not to_kodelet:
            item_pairs = tuple((b, a) for a, b in item_pairs)
        items = out.get(key)
        if isinstance(items, list):
            out[key] = [rename(i, item_pairs) if isinstance(i, dict) else i for i in items]
    for key, factor in m.scale:
        value = out.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = math.ceil(value / factor) if to_kodelet else int(value * factor)
    return out


def to_kodelet_tool(name: str, tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A Claude tool call as kodelet's hooks see it; unknown tools pass unchanged."""
    m = _BY_CLAUDE.get(name)
    if m is None:
        return name, dict(tool_input)
    return m.kodelet, _translate(m, tool_input, to_kodelet=True)


def to_claude_input(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A kodelet rewrite of a call to Claude's tool ``name``, back in that tool's keys."""
    m = _BY_CLAUDE.get(name)
    return dict(tool_input) if m is None else _translate(m, tool_input, to_kodelet=False)


def to_claude_tool(name: str, tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A kodelet tool call as Claude Code's hooks see it; unknown tools pass unchanged."""
    m = _BY_KODELET.get(name)
    if m is None:
        return name, dict(tool_input)
    return m.claude, _translate(m, tool_input, to_kodelet=False)


# --- skill shell lines ----------------------------------------------------

SKILL_SHELL = "skill_shell_line"
"""``metadata.origin`` of a ``before_tool_call`` for a skill's or slash command's
``!`cmd``` line (Claude Code's PreSkillShellCommand): no tool call the model made, and
a rewrite of it is never run."""


def skill_metadata(hook_input: PreSkillShellCommandInput) -> dict[str, Any]:
    """What a guard is told of a skill's shell line beside the command: where it comes
    from, who loaded it, and the shell that would run it."""
    out: dict[str, Any] = {
        "origin": SKILL_SHELL,
        "skill": hook_input.command_name,
        "started_by": hook_input.invoked_by,
        "shell": hook_input.tool_name,
    }
    if hook_input.command_source:
        out["skill_source"] = hook_input.command_source
    return out


def is_skill_shell(payload: BasePayload) -> bool:
    metadata = getattr(payload, "metadata", None)
    return isinstance(metadata, dict) and metadata.get("origin") == SKILL_SHELL


# --- payload fields -------------------------------------------------------


def claude_input(
    payload: BasePayload, *, transcript_path: str = "", permission_mode: str = "default"
) -> HookInput | None:
    """The Claude hook input for a kodelet payload; None for after_turn."""
    from .types import (
        PostToolUseFailureInput,
        PostToolUseInput,
        PreSkillShellCommandInput,
        PreToolUseInput,
        StopInput,
        SubagentStopInput,
        UserPromptSubmitInput,
    )

    base: dict[str, Any] = {
        "session_id": payload.conv_id,
        "cwd": payload.cwd,
        "transcript_path": transcript_path,
        "permission_mode": permission_mode,
    }
    if isinstance(payload, BeforeToolCallPayload | AfterToolCallPayload):
        name, tool_input = to_claude_tool(payload.tool_name, payload.tool_input)
        tool = {**base, "tool_name": name, "tool_input": tool_input}
        if isinstance(payload, BeforeToolCallPayload) and is_skill_shell(payload):
            meta = payload.metadata or {}
            shell = meta.get("shell")
            return PreSkillShellCommandInput(
                **{**tool, "tool_name": shell if isinstance(shell, str) and shell else name},
                tool_use_id=payload.tool_user_id,
                command_name=str(meta.get("skill") or ""),
                command_source=meta.get("skill_source") or None,
                invoked_by=str(meta.get("started_by") or "other"),
            )
        if isinstance(payload, BeforeToolCallPayload):
            return PreToolUseInput(**tool, tool_use_id=payload.tool_user_id)
        output = payload.tool_output
        if not output.success:
            return PostToolUseFailureInput(
                **tool, tool_use_id=payload.tool_user_id, error=output.error or "tool failed"
            )
        response = _wire.unstructure(output)
        return PostToolUseInput(**tool, tool_use_id=payload.tool_user_id, tool_response=response)
    if isinstance(payload, UserMessageSendPayload):
        return UserPromptSubmitInput(**base, prompt=payload.message)
    if isinstance(payload, AgentStopPayload):
        said = [m.content for m in payload.messages if m.role == "assistant"]
        last = said[-1] if said else None
        if payload.invoked_by == "subagent":
            return SubagentStopInput(**base, last_assistant_message=last)
        return StopInput(**base, last_assistant_message=last)
    return None


def to_kodelet_output(
    name: str, response: Any, *, error: str | None = None, timestamp: str = ""
) -> StructuredToolResult:
    """A Claude tool's result as kodelet's hooks see it: ``metadata.output`` is the text
    the model is shown (:func:`kodelet.tooltext.model_text`), the one field a redaction
    rewrites in every agent, and ``metadata.tool_response`` is Claude Code's
    ``tool_response`` (the transcript's ``toolUseResult``), whatever its shape; a failed
    call (``error`` given) is ``success: false`` with the error, which is also its
    ``metadata.output`` (what the model is shown). The bridge and the
    transcript importer both read results here."""
    if error is not None:
        error = error or "tool failed"
        return StructuredToolResult(
            tool_name=name,
            success=False,
            error=error,
            metadata={"output": error},
            timestamp=timestamp,
        )
    if isinstance(response, dict) and "toolName" in response:
        try:
            return _wire.structure(response, StructuredToolResult)
        except Exception:  # not kodelet's shape after all: keep it as metadata below
            pass
    return StructuredToolResult(
        tool_name=name,
        success=True,
        metadata={"output": model_text(response), "tool_response": response},
        timestamp=timestamp,
    )


def _tool_output(hook_input: PostToolUseInput | PostToolUseFailureInput, name: str) -> Any:
    from .types import PostToolUseFailureInput

    if isinstance(hook_input, PostToolUseFailureInput):
        return to_kodelet_output(name, None, error=hook_input.error)
    return to_kodelet_output(name, hook_input.tool_response)


def _stop_messages(hook_input: HookInput) -> list[Message]:
    """The conversation's recent turns from the transcript, or the last thing said."""
    from .transcript import recent_messages

    path = hook_input.transcript_path
    agent_path = getattr(hook_input, "agent_transcript_path", "")
    messages = recent_messages(agent_path or path)
    last = getattr(hook_input, "last_assistant_message", None)
    if isinstance(last, str) and last and not (messages and messages[-1].content == last):
        messages.append(Message(role="assistant", content=last))
    return messages


def kodelet_payload(hook_input: HookInput) -> BasePayload | None:
    """The kodelet payload for a Claude hook input; None for events kodelet lacks.

    The one translator from Claude Code to kodelet: the bridge, the settings adapter
    and the Agent SDK integration all build payloads here. A tool call made inside a
    subagent (Claude Code adds ``agent_id``) is ``invoked_by: subagent``; a stop gets
    the conversation's recent turns from the transcript."""
    from .types import (
        PostToolUseFailureInput,
        PostToolUseInput,
        PreSkillShellCommandInput,
        PreToolUseInput,
        UserPromptSubmitInput,
    )

    mapping = to_kodelet_event(hook_input.event)
    if mapping is None:
        return None
    base: dict[str, Any] = {
        "conv_id": hook_input.session_id,
        "cwd": hook_input.cwd,
        "invoked_by": mapping.invoked_by,
    }
    tools = PreToolUseInput | PreSkillShellCommandInput | PostToolUseInput | PostToolUseFailureInput
    if isinstance(hook_input, tools):
        if hook_input.agent_id:
            base["invoked_by"] = "subagent"
        # Every skill line is a shell line, Bash's or PowerShell's: a guard on shell calls
        # sees it as one (metadata.shell says which), never under a name it does not guard.
        shell = isinstance(hook_input, PreSkillShellCommandInput)
        claude_name = "Bash" if shell else hook_input.tool_name
        name, tool_input = to_kodelet_tool(claude_name, hook_input.tool_input)
        tool = {**base, "tool_name": name, "tool_input": tool_input}
        if isinstance(hook_input, PreSkillShellCommandInput):
            return BeforeToolCallPayload(
                **tool, tool_user_id=hook_input.tool_use_id, metadata=skill_metadata(hook_input)
            )
        if isinstance(hook_input, PreToolUseInput):
            return BeforeToolCallPayload(**tool, tool_user_id=hook_input.tool_use_id)
        return AfterToolCallPayload(
            **tool,
            tool_user_id=hook_input.tool_use_id,
            tool_output=_tool_output(hook_input, name),
        )
    if isinstance(hook_input, UserPromptSubmitInput):
        return UserMessageSendPayload(**base, message=hook_input.prompt)
    return AgentStopPayload(**base, messages=_stop_messages(hook_input))


# --- answers --------------------------------------------------------------


def to_kodelet_result(
    event: HookEvent, doc: dict[str, Any], *, tool_name: str = ""
) -> dict[str, Any] | None:
    """The kodelet result (wire form) for the merged Claude output ``doc`` of ``event``.

    ``tool_name`` is the Claude tool name, so ``updatedInput`` is translated back to
    the kodelet tool's keys (with no decision too: Claude Code applies it). As in
    Claude Code 2.1.332, ``continue: false`` lets a tool call run (kodelet has no "end
    the session" answer), blocks a prompt and cancels a Stop hook's follow-up; a Stop
    hook's ``additionalContext`` keeps the agent going as a follow-up; an ``ask`` is
    kodelet's ``ask`` (the host asks its approver, or blocks without one). None:
    nothing to do."""
    mapping = to_kodelet_event(event)
    if mapping is None:
        return None
    specific = doc.get("hookSpecificOutput") or {}
    out: dict[str, Any] = {}
    context = [specific["additionalContext"]] if specific.get("additionalContext") else []
    stopped = doc.get("continue") is False
    stop_reason = doc.get("stopReason") or "stopped by a Claude Code hook (continue: false)"
    if event in (HookEvent.PRE_TOOL_USE, HookEvent.PRE_SKILL_SHELL_COMMAND):
        decision = specific.get("permissionDecision")
        reason = specific.get("permissionDecisionReason") or ""
        updated = specific.get("updatedInput")
        if decision == "deny":
            out.update(blocked=True, reason=reason or "denied by a Claude Code hook")
        elif decision == "ask":
            out.update(ask=True, reason=reason or "a Claude Code hook asks for approval")
        elif event == HookEvent.PRE_SKILL_SHELL_COMMAND and "updatedInput" in specific:
            # Claude Code never runs a rewritten skill line: any updatedInput refuses it.
            out.update(
                blocked=True,
                reason="the hook changed the command, which Claude Code"
                " does not run for a skill's shell line",
            )
        pre = event == HookEvent.PRE_TOOL_USE
        if pre and decision in ("ask", "allow", None) and isinstance(updated, dict):
            out["input"] = to_kodelet_tool(tool_name, updated)[1]
    elif mapping.kodelet == Event.AFTER_TOOL_CALL:
        # A blocking PostToolUse hook's reason is feedback for the model.
        if doc.get("decision") == "block" and doc.get("reason"):
            context.append(doc["reason"])
    elif event == HookEvent.USER_PROMPT_SUBMIT:
        if stopped:
            out.update(blocked=True, reason=stop_reason)
        elif doc.get("decision") == "block":
            out.update(blocked=True, reason=doc.get("reason") or "blocked by a Claude Code hook")
    else:  # Stop, SubagentStop: a block and context both keep the agent going
        blocked = [doc.get("reason") or "Continue."] if doc.get("decision") == "block" else []
        if not stopped and (blocked or context):
            out["follow_up_messages"] = blocked + context
        context = []
    if context:
        out["additional_context"] = context
    return out or None
