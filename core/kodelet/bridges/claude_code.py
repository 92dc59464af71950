"""kodelet behind Claude Code's command hooks: ``kodelet claude hook``.

Claude Code runs a command for each hook event with one JSON object on stdin and
acts on the JSON the command prints. This module turns that input into a kodelet
payload, dispatches it through the full runtime (:func:`kodelet.assembly.load_runtime`)
and turns the merged result back into Claude Code's output. It is on the agent's
hot path (one process per tool call), so it imports no CLI framework; the CLI's
``main`` hands ``claude hook`` straight to :func:`main` here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ..claude.mapping import EVENT_MAP, to_claude_tool, to_kodelet_tool
from ..events import Event
from ..payloads import BasePayload

__all__ = [
    "HookInputError",
    "answer",
    "main",
    "prepare",
    "respond",
    "run_hook",
    "to_claude_tool",
    "to_kodelet_tool",
]

# Claude Code event -> (kodelet event, invoked_by), from the one mapping table.
EVENTS: dict[str, tuple[Event, str]] = {
    m.claude.value: (m.kodelet, m.invoked_by) for m in EVENT_MAP
}


class HookInputError(ValueError):
    """Claude Code's input is not a hook input this bridge can read."""


def _field(data: Mapping[str, Any], key: str, kind: type, default: Any = None) -> Any:
    value = data.get(key, default)
    if (value is None or value == "") and default is None:
        raise HookInputError(f"hook input has no {key!r}")
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise HookInputError(f"hook input field {key!r} must be {kind.__name__}")
    return value


def payload_fields(data: Mapping[str, Any]) -> tuple[Event, dict[str, Any]] | None:
    """The kodelet event and payload fields for a Claude hook input; None when kodelet
    has no such event. :class:`HookInputError` names a missing or mistyped field."""
    name = _field(data, "hook_event_name", str)
    mapped = EVENTS.get(name)
    if mapped is None:
        return None
    event, invoked_by = mapped
    fields: dict[str, Any] = {
        "conv_id": _field(data, "session_id", str, ""),
        "cwd": _field(data, "cwd", str),
        "invoked_by": invoked_by,
    }
    if event in (Event.BEFORE_TOOL_CALL, Event.AFTER_TOOL_CALL):
        tool, tool_input = to_kodelet_tool(
            _field(data, "tool_name", str), _field(data, "tool_input", dict, {})
        )
        fields.update(
            tool_name=tool, tool_input=tool_input, tool_user_id=_field(data, "tool_use_id", str, "")
        )
        if event is Event.AFTER_TOOL_CALL:
            failed = name == "PostToolUseFailure"
            response = data.get("tool_response")
            output: dict[str, Any] = {"toolName": tool, "success": not failed}
            if failed:
                output["error"] = _field(data, "error", str, "tool failed")
            if isinstance(response, dict):
                output["metadata"] = response
            fields["tool_output"] = output
    elif event is Event.USER_MESSAGE_SEND:
        fields["message"] = _field(data, "prompt", str)
    return event, fields


def answer(name: str, result: Any, *, stop_hook_active: bool = False) -> dict[str, Any] | None:
    """Claude Code's hook output for kodelet's merged ``result``; None is "no action"."""
    extra = getattr(result, "additional_context", None) or ""
    context = extra if isinstance(extra, str) else "\n".join(extra)
    specific: dict[str, Any] = {"hookEventName": name}
    out: dict[str, Any] = {}
    if name == "PreToolUse":
        if result.blocked:
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = result.reason or "blocked by a kodelet hook"
        elif result.input is not None:
            specific["permissionDecision"] = "allow"
            specific["updatedInput"] = result.input
    elif name == "UserPromptSubmit":
        if result.blocked:
            out = {"decision": "block", "reason": result.reason or "blocked by a kodelet hook"}
    elif name in ("PostToolUse", "PostToolUseFailure"):
        # Claude Code cannot replace a built-in tool's result: the rewrite reaches
        # the model as context next to the original (docs/DECISIONS.md).
        if result.output is not None:
            rewritten = _output_text(result.output)
            context = f"{context}\n\n{rewritten}" if context else rewritten
    elif name in ("Stop", "SubagentStop"):
        messages = [m for m in (result.follow_up_messages or []) if m]
        # One follow-up round per stop: Claude Code says stop_hook_active when it is
        # already continuing because of a Stop hook, and answering "block" again
        # could keep the agent running forever.
        if messages and not stop_hook_active:
            out = {"decision": "block", "reason": "\n\n".join(messages)}
    if context:
        specific["additionalContext"] = context
    if len(specific) > 1:
        out["hookSpecificOutput"] = specific
    return out or None


def _output_text(output: Any) -> str:
    from ..wire import converter

    data = converter.unstructure(output)
    return "kodelet hooks rewrote this tool result: " + json.dumps(data, ensure_ascii=False)


def prepare(data: Mapping[str, Any]) -> tuple[str, BasePayload, dict[str, Any]] | None:
    """(Claude event name, kodelet payload, payload fields) for a Claude hook input;
    None when kodelet has no such event."""
    fields = payload_fields(data)
    if fields is None:
        return None
    event, values = fields
    from ..wire import build_payload

    return str(data["hook_event_name"]), build_payload(event, values), values


def respond(
    data: Mapping[str, Any], values: Mapping[str, Any], result: Any
) -> dict[str, Any] | None:
    """Claude Code's output for a merged kodelet result, tool input back in Claude's keys."""
    name = str(data["hook_event_name"])
    if name == "PreToolUse" and getattr(result, "input", None) is not None:
        _, back = to_claude_tool(values["tool_name"], result.input)
        result = _with_input(result, back)
    return answer(name, result, stop_hook_active=data.get("stop_hook_active") is True)


def run_hook(
    data: Mapping[str, Any], *, trace: IO[str] | None = None, no_hooks: bool | None = None
) -> dict[str, Any] | None:
    """Dispatch one Claude hook input through the runtime for its ``cwd``; the output or None."""
    prepared = prepare(data)
    if prepared is None:
        return None
    _, payload, values = prepared
    from ..assembly import hooks_die_with_host, load_runtime

    # Claude Code reads stdout as the answer (and, for some events, as text for
    # the model): a plugin's stray print must not end up there.
    with (
        contextlib.redirect_stdout(sys.stderr),
        load_runtime(cwd=values["cwd"], no_hooks=no_hooks, claude=False) as runtime,
        hooks_die_with_host(runtime),
    ):
        dispatch = runtime.dispatch(payload)
    if trace is not None:
        for rec in dispatch.trace:
            trace.write(json.dumps(rec.to_json(), ensure_ascii=False) + "\n")
        trace.flush()
    return respond(data, values, dispatch.result)


def _with_input(result: Any, tool_input: dict[str, Any]) -> Any:
    import attrs

    return attrs.evolve(result, input=tool_input)


def _setup_logging() -> None:
    name = os.environ.get("KODELET_LOG_LEVEL", "warning").strip().upper() or "WARNING"
    level = logging.getLevelNamesMapping().get(name, logging.WARNING)
    logging.basicConfig(level=level, format="kodelet: %(levelname)s: %(message)s")


USAGE = "kodelet claude hook [--trace] [--trace-file PATH] [--no-hooks]"
HELP = f"""Usage: {USAGE}

  The command Claude Code runs: one hook input on stdin, kodelet's answer on
  stdout in Claude Code's hook output format (docs/CLAUDE.md).

Options:
  --trace            One JSON line per hook called, on stderr.
  --trace-file PATH  The same lines, appended to PATH.
  --no-hooks         Only the built-ins run.
  -h, --help         Show this message and exit.
"""


def main(argv: Sequence[str] | None = None) -> int:
    """``kodelet claude hook``: stdin in, Claude Code's JSON out, exit 0; 1 on a bad input
    (a non-blocking error for Claude Code). Never raises a traceback at the agent."""
    args = list(sys.argv[3:] if argv is None else argv)
    trace: IO[str] | None = None
    no_hooks: bool | None = None
    try:
        while args:
            arg = args.pop(0)
            if arg == "--trace":
                trace = trace or sys.stderr
            elif arg == "--trace-file" and args:
                trace = open(args.pop(0), "a", encoding="utf-8")  # noqa: SIM115
            elif arg == "--no-hooks":
                no_hooks = True
            elif arg in ("-h", "--help"):
                sys.stdout.write(HELP)
                return 0
            else:
                raise HookInputError(f"unknown option {arg!r} (usage: {USAGE})")
        _setup_logging()
        try:
            data = json.loads(sys.stdin.buffer.read())
        except (ValueError, UnicodeDecodeError) as exc:
            raise HookInputError(f"hook input on stdin is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise HookInputError(f"hook input must be a JSON object, not {type(data).__name__}")
        out = run_hook(data, trace=trace, no_hooks=no_hooks)
    except (HookInputError, ValueError, OSError) as exc:
        sys.stderr.write(f"kodelet: error: {exc}\n")
        return 1
    except Exception as exc:  # a kodelet failure: never blocks the agent
        sys.stderr.write(f"kodelet: error: {type(exc).__name__}: {exc}\n")
        return 1
    finally:
        if trace is not None and trace is not sys.stderr:
            trace.close()
    if out is not None:
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    return 0
