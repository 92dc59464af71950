"""The one table between Claude Code and kodelet, read both ways."""

from __future__ import annotations

import attrs
import pytest
from kodelet.claude import (
    TOOL_NAMES,
    TOOLS,
    HookEvent,
    claude_input,
    input_to_wire,
    kodelet_payload,
    to_claude_event,
    to_claude_tool,
    to_kodelet_event,
    to_kodelet_tool,
)
from kodelet.claude.mapping import to_claude_input
from kodelet.events import Event
from kodelet.payloads import (
    AfterToolCallPayload,
    AgentStopPayload,
    BeforeToolCallPayload,
    Message,
    StructuredToolResult,
    UserMessageSendPayload,
)
from kodelet.replay import claude as replay_claude

# Claude Code's input for each tool, and the same call as kodelet's tools take it.
CALLS = [
    (
        ("Bash", {"command": "sleep 1", "timeout": 120000, "run_in_background": True}),
        ("bash", {"command": "sleep 1", "timeout": 120, "background": True}),
    ),
    (
        ("Read", {"file_path": "/a.py", "offset": 10, "limit": 20}),
        ("file_read", {"file_path": "/a.py", "offset": 10, "line_limit": 20}),
    ),
    (
        ("Write", {"file_path": "/a.py", "content": "x"}),
        ("file_write", {"file_path": "/a.py", "text": "x"}),
    ),
    (
        ("Edit", {"file_path": "/a.py", "old_string": "a", "new_string": "b", "replace_all": True}),
        (
            "file_edit",
            {"file_path": "/a.py", "old_text": "a", "new_text": "b", "replace_all": True},
        ),
    ),
    (
        ("MultiEdit", {"file_path": "/a.py", "edits": [{"old_string": "a", "new_string": "b"}]}),
        ("file_multi_edit", {"file_path": "/a.py", "edits": [{"old_text": "a", "new_text": "b"}]}),
    ),
    (
        ("Glob", {"pattern": "*.py", "path": "/src"}),
        ("glob_tool", {"pattern": "*.py", "path": "/src"}),
    ),
    (
        ("Grep", {"pattern": "TODO", "path": "/src", "glob": "*.go"}),
        ("grep_tool", {"pattern": "TODO", "path": "/src", "include": "*.go"}),
    ),
    (
        ("WebFetch", {"url": "https://x", "prompt": "p"}),
        ("web_fetch", {"url": "https://x", "prompt": "p"}),
    ),
    (("TodoWrite", {"todos": []}), ("todo_write", {"todos": []})),
    (
        ("Task", {"description": "d", "prompt": "find it", "subagent_type": "Explore"}),
        ("subagent", {"description": "d", "question": "find it", "subagent_type": "Explore"}),
    ),
]
AGENT = ("Agent", {"description": "d", "prompt": "find it", "subagent_type": "Explore"})


def test_claude_codes_agent_tool_is_kodelets_subagent() -> None:
    """Claude Code 2.1.x calls its subagent tool Agent; Task is the older name."""
    assert to_kodelet_tool(*AGENT) == CALLS[-1][1]


@pytest.mark.parametrize(("claude", "kodelet"), CALLS, ids=[c[0][0] for c in CALLS])
def test_tool_calls_translate_both_ways(claude: tuple, kodelet: tuple) -> None:
    assert to_kodelet_tool(*claude) == kodelet
    assert to_claude_tool(*kodelet) == claude


MONITOR = ("Monitor", {"command": "tail -f log", "description": "d", "timeout_ms": 5000})


def test_claude_codes_monitor_is_a_shell_call_and_keeps_its_name_going_back() -> None:
    """Monitor runs a shell command in the background: a guard on bash sees it, and its
    rewrite goes back in Monitor's keys; a kodelet bash call is still told as Bash."""
    assert to_kodelet_tool(*MONITOR) == ("bash", MONITOR[1])
    assert to_claude_input("Monitor", {"command": "true"}) == {"command": "true"}
    assert to_claude_tool("bash", {"command": "ls"}) == ("Bash", {"command": "ls"})


def test_every_mapped_tool_has_a_case() -> None:
    assert {c[0][0] for c in CALLS} | {AGENT[0], MONITOR[0]} == {t.claude for t in TOOLS}


def test_unknown_tools_and_keys_pass_unchanged() -> None:
    assert to_kodelet_tool("mcp__x__y", {"a": 1}) == ("mcp__x__y", {"a": 1})
    assert to_claude_tool("my_tool", {"a": 1}) == ("my_tool", {"a": 1})
    assert to_kodelet_tool("Bash", {"command": "ls", "new_key": 1}) == (
        "bash",
        {"command": "ls", "new_key": 1},
    )


def test_the_key_the_tool_reads_wins_over_a_stray() -> None:
    # kodelet's file_write reads "text": a hook must see that, not a stray "content".
    name, data = to_claude_tool(
        "file_write", {"file_path": "a", "text": "real", "content": "decoy"}
    )
    assert (name, data) == ("Write", {"file_path": "a", "content": "real"})


def test_replay_imports_through_the_same_translator() -> None:
    from kodelet.claude import mapping

    assert replay_claude.to_kodelet_tool is mapping.to_kodelet_tool
    assert replay_claude.to_kodelet_output is mapping.to_kodelet_output
    assert TOOL_NAMES["Bash"] == "bash"


def test_events_map_both_ways() -> None:
    pre = to_kodelet_event(HookEvent.PRE_TOOL_USE)
    assert pre is not None and pre.kodelet == Event.BEFORE_TOOL_CALL
    sub = to_kodelet_event(HookEvent.SUBAGENT_STOP)
    assert sub is not None and (sub.kodelet, sub.invoked_by) == (Event.AGENT_STOP, "subagent")
    assert to_kodelet_event(HookEvent.SESSION_START) is None
    assert to_claude_event(Event.AGENT_STOP) == HookEvent.STOP
    assert to_claude_event(Event.AGENT_STOP, invoked_by="subagent") == HookEvent.SUBAGENT_STOP
    assert to_claude_event(Event.AFTER_TOOL_CALL) == HookEvent.POST_TOOL_USE
    assert to_claude_event(Event.AFTER_TOOL_CALL, tool_failed=True) == (
        HookEvent.POST_TOOL_USE_FAILURE
    )
    assert to_claude_event(Event.AFTER_TURN) is None


def test_payloads_translate_both_ways() -> None:
    before = BeforeToolCallPayload(
        conv_id="c1",
        cwd="/w",
        tool_name="file_write",
        tool_input={"file_path": "a", "text": "x"},
        tool_user_id="t1",
    )
    hook_input = claude_input(before, transcript_path="/t.jsonl")
    assert hook_input is not None
    assert input_to_wire(hook_input) == {
        "session_id": "c1",
        "transcript_path": "/t.jsonl",
        "cwd": "/w",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": "a", "content": "x"},
        "tool_use_id": "t1",
    }
    assert kodelet_payload(hook_input) == before

    failed = AfterToolCallPayload(
        conv_id="c1",
        tool_name="bash",
        tool_input={"command": "false"},
        tool_output=StructuredToolResult(tool_name="bash", success=False, error="exit 1"),
    )
    hook_input = claude_input(failed)
    assert hook_input is not None and hook_input.event == HookEvent.POST_TOOL_USE_FAILURE
    assert input_to_wire(hook_input)["error"] == "exit 1"
    # The error is also the text the model is shown, in the one field for it.
    shown = StructuredToolResult(
        tool_name="bash", success=False, error="exit 1", metadata={"output": "exit 1"}
    )
    assert kodelet_payload(hook_input) == attrs.evolve(failed, tool_output=shown)

    ok = AfterToolCallPayload(
        conv_id="c1",
        tool_name="bash",
        tool_input={"command": "true"},
        tool_output=StructuredToolResult(tool_name="bash", success=True, timestamp="T"),
    )
    hook_input = claude_input(ok)
    assert hook_input is not None and hook_input.event == HookEvent.POST_TOOL_USE
    assert kodelet_payload(hook_input) == ok

    prompt = UserMessageSendPayload(conv_id="c1", message="hi")
    hook_input = claude_input(prompt)
    assert hook_input is not None and input_to_wire(hook_input)["prompt"] == "hi"
    assert kodelet_payload(hook_input) == prompt

    stop = AgentStopPayload(
        conv_id="c1",
        invoked_by="subagent",
        messages=[Message("user", "go"), Message("assistant", "gone")],
    )
    hook_input = claude_input(stop)
    assert hook_input is not None and hook_input.event == HookEvent.SUBAGENT_STOP
    assert input_to_wire(hook_input)["last_assistant_message"] == "gone"
    back = kodelet_payload(hook_input)
    assert isinstance(back, AgentStopPayload) and back.invoked_by == "subagent"
