"""One test per output style Claude Code hooks use, each through a real script and
:func:`merge`: exit 2, permissionDecision deny and ask, updatedInput, additionalContext,
plain-text context, decision block on Stop, continue false."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kodelet.claude import CommandHook, HookMatcher, Outcome, merge
from kodelet.testing import write_hook

from tests.kit.claude_runner import MakeRunner, bash_input

GUARD = """#!/bin/bash
# Blocks rm -rf the way most public guards do: reason on stderr, exit 2.
cmd=$(jq -r '.tool_input.command // empty')
if [[ "$cmd" == *"rm -rf"* ]]; then
  echo "Blocked: rm -rf is not allowed" >&2
  exit 2
fi
exit 0
"""

DECIDE = """#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
cmd = data["tool_input"].get("command", "")
decision = "deny" if "curl" in cmd else "ask" if "git push" in cmd else "allow"
out = {"hookEventName": "PreToolUse", "permissionDecision": decision,
       "permissionDecisionReason": f"{decision}: {cmd}"}
if decision == "allow" and cmd.startswith("npm "):
    out["updatedInput"] = {**data["tool_input"], "command": "pnpm " + cmd[4:]}
print(json.dumps({"hookSpecificOutput": out}))
"""


def pre(make_runner: MakeRunner, tmp_path: Path, *hooks: str) -> Any:
    commands = [
        CommandHook(str(write_hook(tmp_path, f"h{i}", text))) for i, text in enumerate(hooks)
    ]
    return make_runner({"PreToolUse": [HookMatcher("Bash", commands)]})


def test_exit_2_denies_with_stderr_as_reason(make_runner: MakeRunner, tmp_path: Path) -> None:
    runner = pre(make_runner, tmp_path, GUARD)
    (result,) = runner.fire("PreToolUse", bash_input("rm -rf /"))
    assert (result.outcome, result.exit_code, result.decision) == (Outcome.BLOCKING, 2, "deny")
    assert merge("PreToolUse", [result]) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Blocked: rm -rf is not allowed",
        }
    }
    (allowed,) = runner.fire("PreToolUse", bash_input("ls"))
    assert merge("PreToolUse", [allowed]) == {}


@pytest.mark.parametrize(
    ("command", "decision"),
    [("curl evil.sh", "deny"), ("git push --force", "ask"), ("ls", "allow")],
)
def test_permission_decision(
    make_runner: MakeRunner, tmp_path: Path, command: str, decision: str
) -> None:
    runner = pre(make_runner, tmp_path, DECIDE)
    (result,) = runner.fire("PreToolUse", bash_input(command))
    assert result.decision == decision
    assert merge("PreToolUse", [result])["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": f"{decision}: {command}",
    }


def test_updated_input_from_the_first_allowing_hook(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    second = DECIDE.replace('"pnpm "', '"yarn "')
    runner = pre(make_runner, tmp_path, GUARD, DECIDE, second)
    results = runner.fire("PreToolUse", bash_input("npm test"))
    assert merge("PreToolUse", results)["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "permissionDecisionReason": "allow: npm test",
        "updatedInput": {"command": "pnpm test"},
    }


def test_deny_beats_ask_beats_allow(make_runner: MakeRunner, tmp_path: Path) -> None:
    def answer(decision: str, reason: str) -> Any:
        def hook(*_: Any) -> Any:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": decision,
                    "permissionDecisionReason": reason,
                    "updatedInput": {"command": "changed"},
                }
            }

        return hook

    hooks = [answer("allow", "a"), answer("ask", "q1"), answer("ask", "q2")]
    runner = make_runner({"PreToolUse": [HookMatcher(None, hooks)]})
    doc = merge("PreToolUse", runner.fire("PreToolUse", bash_input()))
    # Claude Code shows the asking hook's rewrite to the user it asks.
    assert doc["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "q1",
        "updatedInput": {"command": "changed"},
    }
    runner = make_runner(
        {"PreToolUse": [HookMatcher(None, [*hooks, CommandHook("echo no >&2; exit 2")])]}
    )
    doc = merge("PreToolUse", runner.fire("PreToolUse", bash_input()))
    assert doc["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert doc["hookSpecificOutput"]["permissionDecisionReason"] == "no"


def test_legacy_decision_spelling_on_pre_tool_use(make_runner: MakeRunner) -> None:
    hook = CommandHook('echo \'{"decision": "block", "reason": "old style"}\'')
    runner = make_runner({"PreToolUse": [HookMatcher(None, [hook])]})
    doc = merge("PreToolUse", runner.fire("PreToolUse", bash_input()))
    assert doc["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert doc["hookSpecificOutput"]["permissionDecisionReason"] == "old style"


def test_additional_context_and_system_messages_accumulate(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    ctx = """#!/bin/bash
file=$(jq -r '.tool_input.file_path')
jq -n --arg f "$file" --arg tag "$1" '{systemMessage: ("checked " + $f + " " + $tag),
  hookSpecificOutput: {hookEventName: "PostToolUse", additionalContext: ($tag + ": " + $f)}}'
"""
    path = write_hook(tmp_path, "ctx.sh", ctx)
    runner = make_runner(
        {
            "PostToolUse": [
                HookMatcher(
                    "Write|Edit", [CommandHook(f"{path} lint"), CommandHook(f"{path} types")]
                )
            ]
        }
    )
    data = {"tool_name": "Edit", "tool_input": {"file_path": "a.py"}, "tool_response": {}}
    assert merge("PostToolUse", runner.fire("PostToolUse", data)) == {
        "systemMessage": "checked a.py lint\nchecked a.py types",
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": "lint: a.py\ntypes: a.py",
        },
    }


@pytest.mark.parametrize(
    ("event", "data"), [("UserPromptSubmit", {"prompt": "hi"}), ("SessionStart", {})]
)
def test_plain_text_stdout_becomes_context(
    make_runner: MakeRunner, tmp_path: Path, event: str, data: dict[str, Any]
) -> None:
    hook = write_hook(
        tmp_path, "branch.sh", '#!/bin/bash\necho "Current branch: main"\ndate +%Y >/dev/null\n'
    )
    runner = make_runner({event: [HookMatcher(None, [CommandHook(str(hook))])]})
    (result,) = runner.fire(event, data)
    assert result.additional_context == "Current branch: main"
    assert merge(event, [result]) == {
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": "Current branch: main"}
    }


def test_user_prompt_block_by_exit_2_and_by_json(make_runner: MakeRunner) -> None:
    secret = CommandHook(
        "jq -e '.prompt | test(\"password\")' >/dev/null "
        "&& { echo 'no secrets' >&2; exit 2; }; exit 0"
    )
    policy = CommandHook(
        'jq -c \'if (.prompt | test("deploy")) then {decision: "block", reason: "ask ops"} '
        "else {} end'"
    )
    runner = make_runner({"UserPromptSubmit": [HookMatcher(None, [secret, policy])]})
    assert merge(
        "UserPromptSubmit", runner.fire("UserPromptSubmit", {"prompt": "my password"})
    ) == {
        "decision": "block",
        "reason": "no secrets",
    }
    assert merge("UserPromptSubmit", runner.fire("UserPromptSubmit", {"prompt": "deploy"})) == {
        "decision": "block",
        "reason": "ask ops",
    }
    assert merge("UserPromptSubmit", runner.fire("UserPromptSubmit", {"prompt": "hello"})) == {}


def test_decision_block_on_stop_keeps_the_agent_going(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    tests_first = """#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)  # already sent back once: let it stop
print(json.dumps({"decision": "block", "reason": "Run the tests before stopping."}))
"""
    runner = make_runner(
        {"Stop": [HookMatcher(None, [CommandHook(str(write_hook(tmp_path, "s.py", tests_first)))])]}
    )
    first = merge("Stop", runner.fire("Stop", {"stop_hook_active": False}))
    assert first == {"decision": "block", "reason": "Run the tests before stopping."}
    assert merge("Stop", runner.fire("Stop", {"stop_hook_active": True})) == {}


def test_exit_2_on_stop_and_subagent_stop_keeps_going(make_runner: MakeRunner) -> None:
    hook = CommandHook("echo 'TODO list not empty' >&2; exit 2")
    runner = make_runner(
        {"Stop": [HookMatcher(None, [hook])], "SubagentStop": [HookMatcher(None, [hook])]}
    )
    for event in ("Stop", "SubagentStop"):
        assert merge(event, runner.fire(event, {})) == {
            "decision": "block",
            "reason": "TODO list not empty",
        }


def test_continue_true_on_stop(make_runner: MakeRunner) -> None:
    def spec07(*_: Any) -> Any:
        return {"continue_": True, "reason": "one more pass"}

    runner = make_runner({"Stop": [HookMatcher(None, [spec07])]})
    assert merge("Stop", runner.fire("Stop", {})) == {
        "decision": "block",
        "reason": "one more pass",
    }
    # A command hook printing continue: true means "carry on" in Claude Code: no loop.
    runner = make_runner(
        {"Stop": [HookMatcher(None, [CommandHook("echo '{\"continue\": true}'")])]}
    )
    assert merge("Stop", runner.fire("Stop", {})) == {}


def test_continue_false_stops_the_agent(make_runner: MakeRunner, tmp_path: Path) -> None:
    halt = write_hook(
        tmp_path,
        "halt.sh",
        '#!/bin/bash\njq -n \'{continue: false, stopReason: "Budget exhausted", '
        'systemMessage: "stopping"}\'\n',
    )
    runner = make_runner({"PostToolUse": [HookMatcher(None, [CommandHook(str(halt))])]})
    assert merge("PostToolUse", runner.fire("PostToolUse", bash_input())) == {
        "continue": False,
        "stopReason": "Budget exhausted",
        "systemMessage": "stopping",
    }


def test_post_tool_use_feedback(make_runner: MakeRunner) -> None:
    lint = CommandHook("echo 'line 3: unused import' >&2; exit 2")
    mcp = CommandHook(
        'echo \'{"hookSpecificOutput": {"hookEventName": "PostToolUse", '
        '"updatedMCPToolOutput": {"rows": []}}}\''
    )
    runner = make_runner({"PostToolUse": [HookMatcher(None, [lint, mcp])]})
    assert merge("PostToolUse", runner.fire("PostToolUse", bash_input())) == {
        "decision": "block",
        "reason": "line 3: unused import",
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedMCPToolOutput": {"rows": []},
        },
    }


def test_exit_2_where_it_cannot_block_is_a_non_blocking_error(make_runner: MakeRunner) -> None:
    runner = make_runner(
        {"SessionStart": [HookMatcher(None, [CommandHook("echo broken >&2; exit 2")])]}
    )
    (result,) = runner.fire("SessionStart", {"source": "startup"})
    assert result.outcome == Outcome.ERROR and result.error == "broken"
    assert merge("SessionStart", [result]) == {}


def test_permission_request_decision(make_runner: MakeRunner) -> None:
    allow = CommandHook(
        'echo \'{"hookSpecificOutput": {"hookEventName": "PermissionRequest", '
        '"decision": {"behavior": "allow", "updatedInput": {"command": "ls"}}}}\''
    )
    runner = make_runner({"PermissionRequest": [HookMatcher("Bash", [allow])]})
    assert merge("PermissionRequest", runner.fire("PermissionRequest", bash_input())) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow", "updatedInput": {"command": "ls"}},
        }
    }
    runner = make_runner(
        {"PermissionRequest": [HookMatcher(None, [allow, CommandHook("echo nope >&2; exit 2")])]}
    )
    doc = merge("PermissionRequest", runner.fire("PermissionRequest", bash_input()))
    assert doc["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "nope"}


def test_late_results_only_add_messages_and_context(make_runner: MakeRunner) -> None:
    async def late_deny(*_: Any) -> Any:
        yield {"async_": True}
        yield {
            "systemMessage": "background check done",
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "additionalContext": "found 2 issues",
            },
        }

    runner = make_runner({"PreToolUse": [HookMatcher(None, [late_deny])]})
    runner.fire("PreToolUse", bash_input())
    late = runner.drain_sync()
    assert late[0].decision == "deny" and late[0].late
    assert merge("UserPromptSubmit", late) == {
        "systemMessage": "background check done",
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "found 2 issues",
        },
    }
    assert merge("PreToolUse", late) == {
        "systemMessage": "background check done",
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": "found 2 issues",
        },
    }
