"""kodelet's hooks for the Claude Agent SDK: callbacks driven with SDK-shaped inputs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kodelet import hookimpl
from kodelet.integrations.claude_agent_sdk import hooks
from kodelet.testing import isolated_runtime, write_hook

GUARD = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'rm -rf'; then echo '{"blocked": true, "reason": "no rm -rf"}'; fi ;;
esac
"""


class Rewriter:
    @hookimpl
    def before_tool_call(self, tool_name: str, tool_input: dict[str, Any]) -> Any:
        if tool_name == "file_write":
            return {"input": {**tool_input, "text": tool_input["text"].upper()}}
        return None

    @hookimpl
    def agent_stop(self) -> Any:
        return {"follow_up_messages": ["run the tests first"]}


def fire(mapping: dict[str, list[Any]], data: dict[str, Any]) -> dict[str, Any]:
    (matcher,) = mapping[data["hook_event_name"]]
    (callback,) = matcher.hooks
    result: dict[str, Any] = asyncio.run(callback(data, "toolu_1", {"signal": None}))
    return result


def base(cwd: Path, event: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "s-1",
        "transcript_path": str(cwd / "t.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def test_an_executable_guardrail_denies_through_the_sdk_callback(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", GUARD)
    mapping = hooks()
    out = fire(mapping, base(project, "PreToolUse", tool_name="Bash",
                             tool_input={"command": "rm -rf /"}))  # fmt: skip
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no rm -rf",
        }
    }
    allowed = base(project, "PreToolUse", tool_name="Bash", tool_input={"command": "ls"})
    assert fire(mapping, allowed) == {}


def test_an_ask_is_the_sdks_ask_permission_decision(tmp_path: Path) -> None:
    class Asker:
        @hookimpl
        def before_tool_call(self, tool_input: dict[str, Any]) -> Any:
            return {"ask": True, "reason": "push to main?"}

    with isolated_runtime(tmp_path, ("asker", Asker())) as rt:
        out = fire(hooks(rt), base(tmp_path, "PreToolUse", tool_name="Bash",
                                   tool_input={"command": "git push"}))  # fmt: skip
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "push to main?",
        }
    }


def test_a_rewrite_comes_back_as_updated_input_in_claude_keys(tmp_path: Path) -> None:
    with isolated_runtime(tmp_path, ("rewriter", Rewriter())) as rt:
        data = base(tmp_path, "PreToolUse", tool_name="Write",
                    tool_input={"file_path": "a.txt", "content": "hi"})  # fmt: skip
        out = fire(hooks(rt), data)
    specific = out["hookSpecificOutput"]
    assert "permissionDecision" not in specific  # the SDK's own permission rules still apply
    assert specific["updatedInput"] == {"file_path": "a.txt", "content": "HI"}


def test_stop_follow_ups_keep_the_agent_going_once(tmp_path: Path) -> None:
    with isolated_runtime(tmp_path, ("rewriter", Rewriter())) as rt:
        mapping = hooks(rt)
        out = fire(mapping, base(tmp_path, "Stop", stop_hook_active=False))
        again = fire(mapping, base(tmp_path, "Stop", stop_hook_active=True))
    assert out == {"decision": "block", "reason": "run the tests first"}
    assert again == {}


def test_every_mapped_event_has_one_matcher_and_unmapped_events_answer_nothing(
    tmp_path: Path,
) -> None:
    with isolated_runtime(tmp_path) as rt:
        mapping = hooks(rt, timeout=5)
        assert set(mapping) == {
            "PreToolUse", "PostToolUse", "PostToolUseFailure",
            "UserPromptSubmit", "Stop", "SubagentStop", "PreSkillShellCommand",
        }  # fmt: skip
        assert all(m.timeout == 5 and m.matcher is None for (m,) in mapping.values())
        (matcher,) = mapping["Stop"]
        (callback,) = matcher.hooks
        assert asyncio.run(callback(base(tmp_path, "SessionStart"), None, {})) == {}


def test_with_the_sdk_installed_the_matchers_are_its_own(tmp_path: Path) -> None:
    sdk = pytest.importorskip("claude_agent_sdk")
    with isolated_runtime(tmp_path) as rt:
        mapping = hooks(rt)
        assert all(isinstance(m, sdk.HookMatcher) for ms in mapping.values() for m in ms)
        options = sdk.ClaudeAgentOptions(hooks=mapping)
        assert options.hooks is mapping


def test_the_example_host_checks_a_call_through_the_projects_hooks(project: Path) -> None:
    import json
    import subprocess
    import sys

    write_hook(project / ".kodelet" / "hooks", "guard", GUARD)
    host = Path(__file__).parents[1] / "plugins" / "examples" / "claude-agent-sdk" / "host.py"
    done = subprocess.run(
        [sys.executable, str(host), "--check"], cwd=project, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


class Context:
    @hookimpl
    def user_message_send(self, message: str) -> Any:
        return {"additional_context": [f"the user wrote {len(message)} characters"]}


def test_additional_context_reaches_the_sdk_as_additional_context(tmp_path: Path) -> None:
    with isolated_runtime(tmp_path, ("context", Context())) as rt:
        out = fire(hooks(rt), base(tmp_path, "UserPromptSubmit", prompt="tidy up"))
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "the user wrote 7 characters",
        }
    }
