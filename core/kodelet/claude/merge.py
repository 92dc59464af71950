"""Folding the results of one fire into the single answer Claude Code acts on.

The document has Claude Code's hook output shape (``continue``, ``stopReason``,
``systemMessage``, ``suppressOutput``, ``decision``, ``reason``,
``hookSpecificOutput``), with empty fields left out, so a host can act on it as
Claude Code would on one hook's answer. The rules, Spec 07's "Result Processing
Priority" with Claude Code's documented precedence:

- any ``continue: false`` stops the agent, with the first such hook's ``stopReason``;
- ``systemMessage`` and ``additionalContext`` accumulate in order, joined by newlines;
- PreToolUse: deny > ask > allow > no decision; the reason is the first one given
  by a hook of the winning kind; ``updatedInput`` comes from the first hook of the
  winning kind that gives one, else from the first hook with no decision that gives
  one (Claude Code 2.1.332 applies it and still asks its permission rules), never
  with a deny; exit 2 is a deny;
- PermissionRequest: deny > allow, the first decision of the winning kind;
- events that can block (UserPromptSubmit, Stop, SubagentStop, TeammateIdle,
  TaskCompleted) and those that feed back (PostToolUse, PostToolUseFailure):
  ``decision: "block"`` or exit 2 gives ``decision: "block"`` with every blocking
  hook's reason, in order;
- Stop and SubagentStop: a Python callback's explicit ``continue: true`` also keeps
  the agent going (Spec 07). Command hooks keep Claude Code's meaning, where
  ``continue: true`` is only the default: public hooks print it to say "carry on";
- late results of async hooks add their ``systemMessage`` and ``additionalContext``
  only, as Claude Code delivers an async hook's output on the next turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .events import EVENTS, HookEvent, parse_hook_event
from .results import HookResult, Outcome
from .types import (
    PermissionRequestSpecificOutput,
    PostToolUseSpecificOutput,
    PreToolUseSpecificOutput,
    output_to_wire,
)

_STOPS = (HookEvent.STOP, HookEvent.SUBAGENT_STOP)


def _reason(r: HookResult) -> str | None:
    specific = r.hook_specific_output
    if isinstance(specific, PreToolUseSpecificOutput) and specific.permission_decision_reason:
        return specific.permission_decision_reason
    return r.reason or (r.message if r.outcome == Outcome.BLOCKING else None) or None


def _pre_tool_use(now: list[HookResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("deny", "ask", "allow"):
        chosen = [r for r in now if r.decision == kind]
        if chosen:
            out["permissionDecision"] = kind
            reason = next((x for r in chosen if (x := _reason(r))), None)
            if reason:
                out["permissionDecisionReason"] = reason
            break
    else:
        kind = None
    if kind == "deny":
        return out
    # Claude Code applies an updatedInput that comes with no decision, and then asks
    # its own permission rules; a hook of the winning kind gives it first.
    givers = [r for r in now if r.decision == kind] + [r for r in now if r.decision is None]
    for r in givers:
        specific = r.hook_specific_output
        if isinstance(specific, PreToolUseSpecificOutput) and specific.updated_input is not None:
            out["updatedInput"] = specific.updated_input
            break
    return out


def _permission_request(now: list[HookResult]) -> dict[str, Any]:
    for kind in ("deny", "allow"):
        for r in now:
            if r.decision != kind:
                continue
            specific = r.hook_specific_output
            if isinstance(specific, PermissionRequestSpecificOutput) and specific.decision:
                return {"decision": output_to_wire(specific)["decision"]}
            return {"decision": {"behavior": kind, "message": r.message or ""}}
    return {}


def _keeps_going(r: HookResult) -> bool:
    return r.decision == "block" or (r.kind == "callback" and r.continue_ is True)


def merge(event: str | HookEvent, results: Iterable[HookResult]) -> dict[str, Any]:
    """The hook output document for ``event``; see the module docstring for the rules."""
    hook_event = parse_hook_event(str(event))
    info = EVENTS[hook_event]
    every = list(results)
    now = [r for r in every if not r.late and r.event == hook_event]
    doc: dict[str, Any] = {}

    stopper = next((r for r in now if r.continue_ is False), None)
    if stopper is not None:
        doc["continue"] = False
        if stopper.stop_reason:
            doc["stopReason"] = stopper.stop_reason
    if any(r.suppress_output for r in now):
        doc["suppressOutput"] = True
    messages = [r.system_message for r in every if r.system_message]
    if messages:
        doc["systemMessage"] = "\n".join(messages)

    specific: dict[str, Any] = {}
    if hook_event in (HookEvent.PRE_TOOL_USE, HookEvent.PRE_SKILL_SHELL_COMMAND):
        specific.update(_pre_tool_use(now))
    elif hook_event == HookEvent.PERMISSION_REQUEST:
        specific.update(_permission_request(now))
    elif info.exit_two in ("block", "feedback"):
        keeps = _keeps_going if hook_event in _STOPS else lambda r: r.decision == "block"
        blockers = [r for r in now if keeps(r)]
        if blockers:
            doc["decision"] = "block"
            reasons = [x for r in blockers if (x := _reason(r))]
            if reasons:
                doc["reason"] = "\n".join(reasons)
    if hook_event == HookEvent.POST_TOOL_USE:
        for r in now:
            out = r.hook_specific_output
            if not isinstance(out, PostToolUseSpecificOutput):
                continue
            if out.updated_mcp_tool_output is not None:
                specific.setdefault("updatedMCPToolOutput", out.updated_mcp_tool_output)
            if out.updated_tool_output is not None:
                specific.setdefault("updatedToolOutput", out.updated_tool_output)
    if "additionalContext" in info.specific_output:
        contexts = [x for r in every if (x := r.additional_context)]
        if contexts:
            specific["additionalContext"] = "\n".join(contexts)
    if specific:
        doc["hookSpecificOutput"] = {"hookEventName": hook_event.value, **specific}
    return doc
