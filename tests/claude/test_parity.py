"""The runner does what Claude Code 2.1.332 does, where the two once differed.

Each case was checked against the pinned binary (tests/e2e/test_claude_differential.py
runs the same hooks through it); real scripts, real processes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kodelet.claude import CommandHook, HookEvent, HookMatcher, Outcome, merge

from tests.kit.claude_runner import MakeRunner, bash_input

STOP_BLOCK_WITH_CONTEXT = json.dumps(
    {
        "decision": "block",
        "reason": "tests are red",
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "see ci.log"},
    }
)


def one(make_runner: MakeRunner, event: str, hook: CommandHook, data: dict[str, Any]) -> Any:
    runner = make_runner({event: [HookMatcher(None, [hook])]})
    (result,) = runner.fire(event, data)
    return result


def test_a_stop_block_with_additional_context_still_blocks(make_runner: MakeRunner) -> None:
    result = one(make_runner, "Stop", CommandHook(f"echo '{STOP_BLOCK_WITH_CONTEXT}'"), {})
    assert result.outcome == Outcome.SUCCESS, result.error
    assert merge("Stop", [result]) == {
        "decision": "block",
        "reason": "tests are red",
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "see ci.log"},
    }


@pytest.mark.parametrize(
    ("event", "data"),
    [("SubagentStop", {"agent_type": "Explore"}), ("Setup", {"trigger": "init"})],
)
def test_subagent_stop_and_setup_take_additional_context(
    make_runner: MakeRunner, event: str, data: dict[str, Any]
) -> None:
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": "x"}})
    result = one(make_runner, event, CommandHook(f"echo '{answer}'"), data)
    assert result.outcome == Outcome.SUCCESS, result.error
    assert merge(event, [result])["hookSpecificOutput"]["additionalContext"] == "x"


def test_updated_input_without_a_decision_is_applied(make_runner: MakeRunner) -> None:
    answer = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls"}}}
    )
    result = one(make_runner, "PreToolUse", CommandHook(f"echo '{answer}'"), bash_input("rm x"))
    # Claude Code applies it and still asks its own permission rules: no decision.
    assert merge("PreToolUse", [result]) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls"}}
    }


def test_a_deny_never_carries_a_rewrite(make_runner: MakeRunner) -> None:
    rewrite = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls"}}}
    )
    hooks = [CommandHook(f"echo '{rewrite}'"), CommandHook("echo no >&2; exit 2")]
    runner = make_runner({"PreToolUse": [HookMatcher(None, hooks)]})
    doc = merge("PreToolUse", runner.fire("PreToolUse", bash_input()))
    assert doc["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "no",
    }


def test_commands_run_under_bin_sh_as_claude_code_runs_them(make_runner: MakeRunner) -> None:
    result = one(make_runner, "PostToolUse", CommandHook("readlink /proc/$$/exe"), bash_input())
    assert result.message == os.path.realpath("/bin/sh")


def test_a_deny_over_one_mib_is_a_deny(make_runner: MakeRunner, tmp_path: Path) -> None:
    reason = "x" * (1536 * 1024)
    answer = tmp_path / "deny.json"
    answer.write_text(
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }
        )
    )
    result = one(make_runner, "PreToolUse", CommandHook(f"cat {answer}"), bash_input())
    assert result.decision == "deny" and result.outcome == Outcome.SUCCESS


@pytest.mark.parametrize("event", ["PreToolUse", "PermissionRequest", "UserPromptSubmit"])
def test_an_answer_past_the_cap_blocks_where_it_gates(make_runner: MakeRunner, event: str) -> None:
    data = {"prompt": "hi"} if event == "UserPromptSubmit" else bash_input()
    flood = CommandHook("head -c 17000000 /dev/zero | tr '\\0' ' '")
    result = one(make_runner, event, flood, data)
    assert result.blocking, result
    assert "kodelet reads no further" in (result.message or "")


def test_session_start_hooks_get_claude_env_file(make_runner: MakeRunner, tmp_path: Path) -> None:
    env_dir = tmp_path / "session-env"
    write = CommandHook('echo "export FROM_HOOK=1" >> "$CLAUDE_ENV_FILE"; echo "$CLAUDE_ENV_FILE"')
    runner = make_runner({"SessionStart": [HookMatcher(None, [write])]}, env_dir=env_dir)
    (result,) = runner.fire("SessionStart", {"source": "startup"})
    assert result.outcome == Outcome.SUCCESS, result.error
    assert result.message == str(env_dir / "sess-1" / "sessionstart-hook-0.sh")
    assert result.session_env == "export FROM_HOOK=1\n"


def test_claude_env_file_is_only_for_session_start_and_setup(make_runner: MakeRunner) -> None:
    show = CommandHook('echo "[${CLAUDE_ENV_FILE-unset}]"')
    assert one(make_runner, "PostToolUse", show, bash_input()).message == "[unset]"
    setup = one(make_runner, "Setup", show, {"trigger": "init"})
    assert setup.message is not None and setup.message.endswith("setup-hook-0.sh]")


def test_a_runners_own_env_dir_is_removed_on_close(make_runner: MakeRunner) -> None:
    runner = make_runner(
        {"SessionStart": [HookMatcher(None, [CommandHook("echo $CLAUDE_ENV_FILE")])]}
    )
    (result,) = runner.fire("SessionStart", {})
    path = Path(result.message or "")
    assert path.parent.is_dir()
    runner.close()
    assert not path.parent.exists()


# --- onFailure: "block" -----------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "timeout", "what"),
    [
        ("echo oops >&2; exit 1", None, "failed"),
        ("/nonexistent/guard.sh", None, "failed"),
        ("sleep 5", 0.5, "timed out"),
        ('echo \'{"continue": "no"}\'', None, "failed"),
    ],
)
def test_on_failure_block_blocks_a_failed_guard(
    make_runner: MakeRunner, command: str, timeout: float | None, what: str
) -> None:
    hook = CommandHook(command, timeout=timeout, on_failure="block")
    result = one(make_runner, "PreToolUse", hook, bash_input())
    assert result.outcome == Outcome.BLOCKING and result.decision == "deny"
    assert (result.message or "").startswith(
        f'[{command}]: {what}; blocking because onFailure is "block"'
    )


def test_on_failure_block_blocks_a_prompt_and_feeds_back_after_a_tool(
    make_runner: MakeRunner,
) -> None:
    fails = CommandHook("exit 1", on_failure="block")
    prompt = one(make_runner, "UserPromptSubmit", fails, {"prompt": "hi"})
    assert merge("UserPromptSubmit", [prompt])["decision"] == "block"
    post = one(make_runner, "PostToolUse", fails, bash_input())
    assert merge("PostToolUse", [post])["decision"] == "block"


@pytest.mark.parametrize("event", ["Stop", "SubagentStop"])
def test_on_failure_block_never_keeps_an_agent_going(make_runner: MakeRunner, event: str) -> None:
    result = one(make_runner, event, CommandHook("exit 1", on_failure="block"), {})
    assert result.outcome == Outcome.ERROR and merge(event, [result]) == {}


def test_without_on_failure_a_failure_lets_the_call_through(make_runner: MakeRunner) -> None:
    for on_failure in (None, "continue"):
        hook = CommandHook("exit 1", on_failure=on_failure)
        result = one(make_runner, "PreToolUse", hook, bash_input())
        assert result.outcome == Outcome.ERROR and not result.blocking


def test_on_failure_must_be_block_or_continue() -> None:
    with pytest.raises(ValueError, match='onFailure must be "block" or "continue"'):
        CommandHook("true", on_failure="deny")


def test_event_table_knows_the_new_context_events() -> None:
    from kodelet.claude import EVENTS

    for event in (HookEvent.STOP, HookEvent.SUBAGENT_STOP, HookEvent.SETUP):
        assert "additionalContext" in EVENTS[event].specific_output
