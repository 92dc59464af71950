"""Gemini CLI's, Copilot CLI's and opencode's hook wires through the real Claude bridge.

Each test runs ``python -m kodelet claude hook --agent NAME`` on an input shaped as the
agent sends it (recorded from the pinned CLIs, see tests/e2e/) in a project whose
``.kodelet/hooks`` holds real bash hooks written for kodelet's own names, and reads the
answer as the agent would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents import DIALECTS
from kodelet.agents.opencode import MARKER, plugin_source
from kodelet.testing import write_hook

from tests.kit.cli import bridge as agent_bridge

GUARD = """#!/bin/bash
[ "$1" = hook ] && { echo before_tool_call; exit 0; }
payload=$(cat)
printf '%s' "$payload" > .kodelet/seen.json
case "$payload" in
  *'rm -rf'*) echo '{"blocked": true, "reason": "rm -rf is not allowed"}' ;;
  *'sudo '*) echo '{"input": {"command": "echo no sudo", "background": true}}' ;;
  *'explain'*) echo '{"additional_context": ["the build dir is generated"]}' ;;
  *'git push'*) echo '{"ask": true, "reason": "pushing needs a yes"}' ;;
esac
"""
AFTER = """#!/bin/bash
[ "$1" = hook ] && { echo after_tool_call; exit 0; }
cat > .kodelet/after.json
echo '{"additional_context": ["checked by kodelet"]}'
"""
STOP = """#!/bin/bash
[ "$1" = hook ] && { echo agent_stop; exit 0; }
cat > /dev/null
echo '{"follow_up_messages": ["run the tests"]}'
"""
PROMPT = """#!/bin/bash
[ "$1" = hook ] && { echo user_message_send; exit 0; }
grep -q secret && echo '{"blocked": true, "reason": "no secrets"}'
exit 0
"""


@pytest.fixture
def guarded(project: Path) -> Path:
    for name, text in (("guard", GUARD), ("after", AFTER), ("stop", STOP), ("prompt", PROMPT)):
        write_hook(project / ".kodelet" / "hooks", name, text)
    return project


def bridge(agent: str, data: dict[str, Any], cwd: Path) -> tuple[int, Any]:
    call = {"session_id": "s-1", "cwd": str(cwd), **data}
    proc = agent_bridge(call, "--agent", agent, cwd=cwd)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None


def seen(project: Path, name: str = "seen") -> Any:
    return json.loads((project / ".kodelet" / f"{name}.json").read_text())


def shell(event: str, tool: str, command: str, **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": {"command": command, **extra},
    }


# --- Gemini CLI -------------------------------------------------------------


def test_gemini_block_is_a_top_level_deny(guarded: Path) -> None:
    code, out = bridge("gemini", shell("BeforeTool", "run_shell_command", "rm -rf /"), guarded)
    assert (code, out) == (0, {"decision": "deny", "reason": "rm -rf is not allowed"})
    assert seen(guarded)["tool_name"] == "bash"


def test_gemini_ask_is_a_deny_since_a_headless_gemini_would_wait_forever(guarded: Path) -> None:
    code, out = bridge("gemini", shell("BeforeTool", "run_shell_command", "git push"), guarded)
    assert (code, out) == (0, {"decision": "deny", "reason": "pushing needs a yes"})


def test_gemini_rewrite_is_its_tool_input_in_its_keys(guarded: Path) -> None:
    call = shell("BeforeTool", "run_shell_command", "sudo ls", is_background=False)
    _, out = bridge("gemini", call, guarded)
    assert seen(guarded)["tool_input"] == {"command": "sudo ls", "background": False}
    specific = out["hookSpecificOutput"]
    assert specific["tool_input"] == {"command": "echo no sudo", "is_background": True}
    assert specific["hookEventName"] == "BeforeTool"
    assert "permissionDecision" not in specific and "decision" not in out


def test_gemini_harmless_call_gets_no_answer(guarded: Path) -> None:
    assert bridge("gemini", shell("BeforeTool", "run_shell_command", "ls"), guarded) == (0, None)


def test_gemini_failed_tool_reaches_kodelet_as_a_failure(guarded: Path) -> None:
    data = {
        "hook_event_name": "AfterTool",
        "tool_name": "read_file",
        "tool_input": {"file_path": "/nope"},
        "tool_response": {"llmContent": "", "error": {"message": "no such file"}},
    }
    _, out = bridge("gemini", data, guarded)
    after = seen(guarded, "after")
    assert after["tool_name"] == "file_read"
    assert after["tool_output"]["success"] is False
    assert after["tool_output"]["error"] == "no such file"
    assert out["hookSpecificOutput"]["additionalContext"] == "checked by kodelet"


def test_gemini_stop_follow_up_is_a_block_with_the_message(guarded: Path) -> None:
    data = {"hook_event_name": "AfterAgent", "prompt": "go", "prompt_response": "done",
            "stop_hook_active": False}  # fmt: skip
    assert bridge("gemini", data, guarded) == (0, {"decision": "block", "reason": "run the tests"})
    again = bridge("gemini", {**data, "stop_hook_active": True}, guarded)
    assert again == (0, None)


def test_gemini_prompt_block(guarded: Path) -> None:
    data = {"hook_event_name": "BeforeAgent", "prompt": "print the secret"}
    assert bridge("gemini", data, guarded) == (0, {"decision": "block", "reason": "no secrets"})


def test_gemini_kodelet_failing_denies_with_what_to_fix(guarded: Path) -> None:
    (guarded / ".kodelet" / "config.toml").write_text("[hooks\n")
    code, out = bridge("gemini", shell("BeforeTool", "run_shell_command", "ls"), guarded)
    assert code == 0 and out["decision"] == "deny"
    assert "config.toml" in out["reason"] and "`kodelet gemini status`" in out["reason"]


# --- Copilot CLI ------------------------------------------------------------


def test_copilot_file_tools_reach_kodelet_in_kodelets_keys(guarded: Path) -> None:
    data = {"hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"path": "/tmp/a", "file_text": "x"}}  # fmt: skip
    assert bridge("copilot", data, guarded) == (0, None)
    assert seen(guarded)["tool_name"] == "file_write"
    assert seen(guarded)["tool_input"] == {"file_path": "/tmp/a", "text": "x"}


def test_copilot_block_and_context(guarded: Path) -> None:
    _, out = bridge("copilot", shell("PreToolUse", "Bash", "rm -rf /"), guarded)
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    _, out = bridge("copilot", shell("PreToolUse", "Bash", "explain"), guarded)
    assert out == {"additionalContext": "the build dir is generated"}


def test_copilot_tool_result_reaches_kodelet(guarded: Path) -> None:
    data = {**shell("PostToolUse", "Bash", "ls"),
            "tool_result": {"result_type": "success", "text_result_for_llm": "a.txt"}}  # fmt: skip
    _, out = bridge("copilot", data, guarded)
    assert seen(guarded, "after")["tool_output"]["metadata"]["tool_response"] == "a.txt"
    assert out == {"additionalContext": "checked by kodelet"}


def test_copilot_on_failure_allow_exits_zero(guarded: Path) -> None:
    """Copilot CLI denies on any non-zero exit: the opt-out must exit 0."""
    (guarded / ".kodelet" / "config.toml").write_text('[claude]\non_failure = "allow"\n')
    data = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "not an object"}
    assert bridge("copilot", data, guarded) == (0, None)
    (guarded / ".kodelet" / "config.toml").unlink()
    _, out = bridge("copilot", data, guarded)
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


# --- opencode ---------------------------------------------------------------


def test_opencode_answers_in_the_plugins_form(guarded: Path) -> None:
    before = "tool.execute.before"
    assert bridge("opencode", shell(before, "bash", "rm -rf /"), guarded) == (
        0,
        {"block": "rm -rf is not allowed"},
    )
    _, out = bridge("opencode", shell(before, "bash", "sudo ls", description="d"), guarded)
    assert out == {"args": {"command": "echo no sudo", "run_in_background": True}}
    data = {"hook_event_name": "chat.message", "prompt": "print the secret"}
    assert bridge("opencode", data, guarded) == (0, {"block": "no secrets"})
    data = {"hook_event_name": "session.idle", "stop_hook_active": False}
    assert bridge("opencode", data, guarded) == (0, {"followUp": "run the tests"})


def test_opencode_edit_reaches_kodelet_in_kodelets_keys(guarded: Path) -> None:
    data = {"hook_event_name": "tool.execute.before", "tool_name": "edit",
            "tool_input": {"filePath": "/a", "oldString": "x", "newString": "y"}}  # fmt: skip
    assert bridge("opencode", data, guarded) == (0, None)
    assert seen(guarded)["tool_name"] == "file_edit"
    assert seen(guarded)["tool_input"] == {"file_path": "/a", "old_text": "x", "new_text": "y"}


def test_opencode_kodelet_failing_blocks(guarded: Path) -> None:
    (guarded / ".kodelet" / "config.toml").write_text("[hooks\n")
    code, out = bridge("opencode", shell("tool.execute.before", "bash", "ls"), guarded)
    assert code == 0 and "`kodelet opencode status`" in out["block"]


def test_opencode_plugin_runs_the_command_it_was_given() -> None:
    source = plugin_source("kodelet claude hook --agent 'opencode'")
    assert source.startswith(MARKER)
    assert "const COMMAND = \"kodelet claude hook --agent 'opencode'\";" in source


def test_every_agent_answers_its_blocking_events() -> None:
    for name in ("gemini", "copilot", "opencode"):
        d = DIALECTS[name]
        claude = {d.claude_event(e) for e in d.hook_events()}
        assert {"PreToolUse", "UserPromptSubmit", "Stop"} <= claude, name
