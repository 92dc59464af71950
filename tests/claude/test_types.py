"""Inputs and outputs on Claude Code's wire: round trips, SDK spellings, strict errors."""

from __future__ import annotations

import pytest
from kodelet.claude import (
    INPUT_TYPES,
    AsyncOutput,
    HookDataError,
    HookEvent,
    SyncOutput,
    input_from_wire,
    input_to_wire,
    output_from_wire,
    output_to_wire,
)
from kodelet.claude.types import PreToolUseSpecificOutput

BASE = {
    "session_id": "s1",
    "transcript_path": "/tmp/t.jsonl",
    "cwd": "/work",
    "permission_mode": "acceptEdits",
}

# One realistic input per event, as Claude Code sends it.
SAMPLES: dict[HookEvent, dict[str, object]] = {
    HookEvent.PRE_TOOL_USE: {
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    },
    # As Claude Code 2.1.332 sends it for a project command's `!`rm -rf victim`` line.
    HookEvent.PRE_SKILL_SHELL_COMMAND: {
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf victim"},
        "tool_use_id": "cbfcb127-51cd-42a7-bf98-67f6249fe3fd:inner:preamble-0",
        "command_name": "boom",
        "command_source": "projectSettings",
        "invoked_by": "user",
    },
    HookEvent.POST_TOOL_USE: {
        "tool_name": "Write",
        "tool_input": {"file_path": "a.py", "content": "x"},
        "tool_response": {"filePath": "a.py", "success": True},
        "tool_use_id": "toolu_2",
    },
    HookEvent.POST_TOOL_USE_FAILURE: {
        "tool_name": "Bash",
        "tool_input": {"command": "false"},
        "tool_use_id": "toolu_3",
        "error": "exit 1",
        "is_interrupt": False,
    },
    HookEvent.PERMISSION_REQUEST: {
        "tool_name": "Bash",
        "tool_input": {"command": "rm x"},
        "permission_suggestions": [{"type": "addRules"}],
    },
    HookEvent.USER_PROMPT_SUBMIT: {"prompt": "fix the bug"},
    HookEvent.STOP: {"stop_hook_active": True, "last_assistant_message": "done"},
    HookEvent.SUBAGENT_STOP: {
        "stop_hook_active": False,
        "agent_id": "a1",
        "agent_type": "code-reviewer",
        "agent_transcript_path": "/tmp/a.jsonl",
    },
    HookEvent.SUBAGENT_START: {"agent_id": "a1", "agent_type": "Explore"},
    HookEvent.PRE_COMPACT: {"trigger": "manual", "custom_instructions": None},
    HookEvent.NOTIFICATION: {
        "message": "Claude needs your permission",
        "title": "Permission",
        "notification_type": "permission_prompt",
    },
    HookEvent.SESSION_START: {"source": "resume", "model": "claude-x"},
    HookEvent.SESSION_END: {"reason": "logout"},
    HookEvent.SETUP: {"trigger": "maintenance"},
    HookEvent.TEAMMATE_IDLE: {"teammate_name": "ann", "team_name": "t"},
    HookEvent.TASK_COMPLETED: {
        "task_id": "7",
        "task_subject": "write tests",
        "task_description": "all of them",
        "teammate_name": "ann",
        "team_name": "t",
    },
}


def test_every_event_has_an_input_type_and_a_sample() -> None:
    assert set(INPUT_TYPES) == set(HookEvent) == set(SAMPLES)
    assert len(HookEvent) == 16


@pytest.mark.parametrize("event", list(HookEvent))
def test_input_round_trip_keeps_unknown_fields(event: HookEvent) -> None:
    wire = {**BASE, "hook_event_name": event.value, **SAMPLES[event], "added_later": {"x": [1]}}
    typed = input_from_wire(event, wire)
    assert typed.extra == {"added_later": {"x": [1]}}
    assert input_to_wire(typed) == wire


def test_input_errors_name_the_field() -> None:
    with pytest.raises(HookDataError, match=r"required field missing @ input\.tool_name"):
        input_from_wire(HookEvent.PRE_TOOL_USE, {"tool_input": {}})
    with pytest.raises(HookDataError, match=r"expected an object, got list @ input\.tool_input"):
        input_from_wire(HookEvent.PRE_TOOL_USE, {"tool_name": "Bash", "tool_input": []})
    with pytest.raises(
        HookDataError, match=r"expected a boolean, got str @ input\.stop_hook_active"
    ):
        input_from_wire(HookEvent.STOP, {"stop_hook_active": "yes"})
    with pytest.raises(HookDataError, match="input is for 'Stop', not 'PreToolUse'"):
        input_from_wire(HookEvent.PRE_TOOL_USE, {"hook_event_name": "Stop", "tool_name": "x"})
    with pytest.raises(HookDataError, match="expected a JSON object, got list"):
        input_from_wire(HookEvent.STOP, [])


def test_sdk_spellings_are_read_like_the_wire_ones() -> None:
    sdk, _ = output_from_wire(HookEvent.STOP, {"continue_": False, "stopReason": "halt"})
    wire, _ = output_from_wire(HookEvent.STOP, {"continue": False, "stopReason": "halt"})
    assert sdk == wire == SyncOutput(continue_=False, stop_reason="halt")
    assert output_to_wire(sdk) == {"continue": False, "stopReason": "halt"}
    late, _ = output_from_wire(HookEvent.STOP, {"async_": True, "asyncTimeout": 1500})
    assert late == AsyncOutput(async_timeout=1500)
    assert output_to_wire(late) == {"async": True, "asyncTimeout": 1500}


def test_pre_tool_use_output_round_trip() -> None:
    data = {
        "systemMessage": "careful",
        "suppressOutput": True,
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "safe",
            "updatedInput": {"command": "ls -l"},
            "additionalContext": "ran ls",
        },
    }
    output, ignored = output_from_wire(HookEvent.PRE_TOOL_USE, data)
    assert ignored == []
    assert isinstance(output, SyncOutput)
    assert output.hook_specific_output == PreToolUseSpecificOutput(
        permission_decision="allow",
        permission_decision_reason="safe",
        updated_input={"command": "ls -l"},
        additional_context="ran ls",
    )
    assert output_to_wire(output) == data


@pytest.mark.parametrize(
    ("event", "data", "message"),
    [
        (HookEvent.STOP, {"continue": "no"}, r"expected a boolean, got str @ output\.continue$"),
        (HookEvent.STOP, {"stopReason": 3}, r"expected a string, got int @ output\.stopReason"),
        (
            HookEvent.STOP,
            {"decision": "deny"},
            r'expected one of "approve", "block" @ output\.decision',
        ),
        (
            HookEvent.PRE_TOOL_USE,
            {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "no"}},
            r"output\.hookSpecificOutput\.permissionDecision",
        ),
        (
            HookEvent.PRE_TOOL_USE,
            {"hookSpecificOutput": {"hookEventName": "PostToolUse"}},
            r"hookEventName: expected 'PreToolUse', got 'PostToolUse'",
        ),
        (
            HookEvent.PRE_COMPACT,
            {"hookSpecificOutput": {"hookEventName": "PreCompact"}},
            r"PreCompact hooks have no hook-specific output",
        ),
        (
            HookEvent.PERMISSION_REQUEST,
            {"hookSpecificOutput": {"decision": {"behavior": "maybe"}}},
            r"output\.hookSpecificOutput\.decision\.behavior",
        ),
        (HookEvent.STOP, {"async": False}, r"output\.async: expected true"),
        (HookEvent.STOP, ["block"], r"output: expected a JSON object, got list"),
    ],
)
def test_bad_outputs_name_the_field(event: HookEvent, data: object, message: str) -> None:
    with pytest.raises(HookDataError, match=message):
        output_from_wire(event, data)


def test_unknown_output_keys_are_ignored_but_named() -> None:
    data = {"permissionDecision": "deny", "hookSpecificOutput": {"permissiondecision": "deny"}}
    output, ignored = output_from_wire(HookEvent.PRE_TOOL_USE, data)
    assert output == SyncOutput(hook_specific_output=PreToolUseSpecificOutput())
    assert ignored == ["output.permissionDecision", "output.hookSpecificOutput.permissiondecision"]


def test_hook_event_name_may_be_left_out() -> None:
    data = {"hookSpecificOutput": {"additionalContext": "hi"}}
    output, _ = output_from_wire(HookEvent.SESSION_START, data)
    assert output_to_wire(output) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "hi"}
    }
