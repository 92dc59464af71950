"""The hook events of Claude Code and the Agent SDK kodelet knows, and how each behaves.

One table, :data:`EVENTS`, says per event which input field a matcher is tested
against, what exit code 2 does, and whether plain text on stdout becomes context:
the runner, the merge and the docs all read it instead of repeating event lists.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import attrs


class HookEvent(StrEnum):
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    STOP = "Stop"
    SUBAGENT_STOP = "SubagentStop"
    PRE_SKILL_SHELL_COMMAND = "PreSkillShellCommand"
    """A skill's or slash command's ``!`cmd``` line, before it runs (Claude Code
    2.1.332 on); no tool call, and no PreToolUse, is made for it."""
    SUBAGENT_START = "SubagentStart"
    PRE_COMPACT = "PreCompact"
    NOTIFICATION = "Notification"
    SESSION_START = "SessionStart"
    SESSION_END = "SessionEnd"
    PERMISSION_REQUEST = "PermissionRequest"
    SETUP = "Setup"
    TEAMMATE_IDLE = "TeammateIdle"
    TASK_COMPLETED = "TaskCompleted"


# What exit code 2 means for an event, as Claude Code documents it:
# "deny" refuses the tool call or permission, "block" stops the prompt or keeps the
# agent (or teammate, or task) going, "feedback" hands stderr to the model after the
# fact, and "none" only shows stderr to the user (a non-blocking error).
ExitTwo = Literal["deny", "block", "feedback", "none"]


@attrs.frozen(kw_only=True)
class EventInfo:
    matcher_field: str | None
    """Input field a matcher is tested against; None: matchers are ignored."""
    exit_two: ExitTwo
    stdout_is_context: bool = False
    """Plain (non-JSON) stdout of a successful command hook becomes additionalContext."""
    specific_output: tuple[str, ...] = ()
    """Keys this event accepts in ``hookSpecificOutput`` (empty: none at all)."""


_CONTEXT = ("additionalContext",)

EVENTS: dict[HookEvent, EventInfo] = {
    HookEvent.PRE_TOOL_USE: EventInfo(
        matcher_field="tool_name",
        exit_two="deny",
        specific_output=(
            "permissionDecision",
            "permissionDecisionReason",
            "updatedInput",
            "additionalContext",
        ),
    ),
    # Claude Code 2.1.332 never applies a PreSkillShellCommand updatedInput: any value
    # keeps the line from running, as deny and ask do.
    HookEvent.PRE_SKILL_SHELL_COMMAND: EventInfo(
        matcher_field="tool_name",
        exit_two="deny",
        specific_output=("permissionDecision", "permissionDecisionReason", "updatedInput"),
    ),
    HookEvent.POST_TOOL_USE: EventInfo(
        matcher_field="tool_name",
        exit_two="feedback",
        specific_output=("additionalContext", "updatedMCPToolOutput", "updatedToolOutput"),
    ),
    HookEvent.POST_TOOL_USE_FAILURE: EventInfo(
        matcher_field="tool_name", exit_two="feedback", specific_output=_CONTEXT
    ),
    HookEvent.PERMISSION_REQUEST: EventInfo(
        matcher_field="tool_name", exit_two="deny", specific_output=("decision",)
    ),
    HookEvent.USER_PROMPT_SUBMIT: EventInfo(
        matcher_field=None, exit_two="block", stdout_is_context=True, specific_output=_CONTEXT
    ),
    # Claude Code 2.1.332 takes additionalContext on Stop, SubagentStop and Setup too;
    # on a stop it is feedback the agent goes on to act on.
    HookEvent.STOP: EventInfo(matcher_field=None, exit_two="block", specific_output=_CONTEXT),
    HookEvent.SUBAGENT_STOP: EventInfo(
        matcher_field="agent_type", exit_two="block", specific_output=_CONTEXT
    ),
    HookEvent.SUBAGENT_START: EventInfo(
        matcher_field="agent_type", exit_two="none", specific_output=_CONTEXT
    ),
    HookEvent.PRE_COMPACT: EventInfo(matcher_field="trigger", exit_two="none"),
    HookEvent.NOTIFICATION: EventInfo(
        matcher_field="notification_type", exit_two="none", specific_output=_CONTEXT
    ),
    HookEvent.SESSION_START: EventInfo(
        matcher_field="source", exit_two="none", stdout_is_context=True, specific_output=_CONTEXT
    ),
    HookEvent.SESSION_END: EventInfo(matcher_field="reason", exit_two="none"),
    HookEvent.SETUP: EventInfo(matcher_field="trigger", exit_two="none", specific_output=_CONTEXT),
    HookEvent.TEAMMATE_IDLE: EventInfo(matcher_field=None, exit_two="block"),
    HookEvent.TASK_COMPLETED: EventInfo(matcher_field=None, exit_two="block"),
}


def parse_hook_event(name: str) -> HookEvent:
    """Resolve an event name as Claude Code spells it; ``ValueError`` names the bad value."""
    try:
        return HookEvent(name.strip())
    except ValueError:
        known = ", ".join(e.value for e in HookEvent)
        raise ValueError(f"unknown Claude hook event {name!r} (expected one of: {known})") from None
