"""Spec 07's loop_test.go cases, against a small agent loop that acts on merged answers:
a Stop hook keeps the loop going, a PreToolUse deny skips the tool, updatedInput is
what the tool runs with, additionalContext reaches the next model call."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import attrs
from kodelet.claude import CommandHook, HookMatcher, Runner, merge
from kodelet.testing import write_hook

from tests.kit.claude_runner import MakeRunner


@attrs.define
class ToyAgent:
    """Plays scripted model turns; each turn is a list of Bash commands (empty: stop)."""

    runner: Runner
    turns: list[list[str]]
    ran: list[str] = attrs.field(factory=list)
    denied: list[str] = attrs.field(factory=list)
    context: list[str] = attrs.field(factory=list)
    prompts: list[str] = attrs.field(factory=list)

    def run(self, prompt: str) -> None:
        self.prompts.append(prompt)
        stop_active = False
        while self.turns:
            calls = self.turns.pop(0)
            for command in calls:
                self.tool(command)
            if calls:
                continue
            doc = merge("Stop", self.runner.fire("Stop", {"stop_hook_active": stop_active}))
            if doc.get("decision") != "block":
                return
            stop_active = True
            self.prompts.append(doc.get("reason", ""))

    def tool(self, command: str) -> None:
        data: dict[str, Any] = {"tool_name": "Bash", "tool_input": {"command": command}}
        doc = merge("PreToolUse", self.runner.fire("PreToolUse", data))
        specific = doc.get("hookSpecificOutput", {})
        if specific.get("permissionDecision") == "deny":
            self.denied.append(specific.get("permissionDecisionReason", ""))
            return
        command = specific.get("updatedInput", {}).get("command", command)
        if specific.get("additionalContext"):
            self.context.append(specific["additionalContext"])
        out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
        self.ran.append(out.stdout.strip())


def test_stop_hook_continues_the_loop_once(make_runner: MakeRunner, tmp_path: Path) -> None:
    hook = write_hook(
        tmp_path,
        "stop.sh",
        """#!/bin/bash
if [ "$(jq -r .stop_hook_active)" = "true" ]; then exit 0; fi
echo "Please also run the linter" >&2
exit 2
""",
    )
    runner = make_runner({"Stop": [HookMatcher(None, [CommandHook(str(hook))])]})
    agent = ToyAgent(runner, [["echo build"], [], ["echo lint"], []])
    agent.run("build it")
    assert agent.ran == ["build", "lint"]
    assert agent.prompts == ["build it", "Please also run the linter"]
    assert agent.turns == []


def test_pre_tool_use_deny_skips_the_tool(make_runner: MakeRunner, tmp_path: Path) -> None:
    marker = tmp_path / "deleted"
    guard = CommandHook(
        "jq -e '.tool_input.command | test(\"touch\")' >/dev/null "
        "&& { echo 'no writes' >&2; exit 2; }; exit 0"
    )
    runner = make_runner({"PreToolUse": [HookMatcher("Bash", [guard])]})
    agent = ToyAgent(runner, [[f"touch {marker}", "echo read"], []])
    agent.run("go")
    assert not marker.exists()
    assert agent.denied == ["no writes"] and agent.ran == ["read"]


def test_updated_input_is_what_runs(make_runner: MakeRunner) -> None:
    def quiet(data: dict[str, Any], *_: Any) -> Any:
        command = data["tool_input"]["command"]
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": {"command": command.replace("hello", "HELLO")},
                "additionalContext": f"rewrote {command!r}",
            }
        }

    runner = make_runner({"PreToolUse": [HookMatcher(None, [quiet])]})
    agent = ToyAgent(runner, [["echo hello"], []])
    agent.run("greet")
    assert agent.ran == ["HELLO"]
    assert agent.context == ["rewrote 'echo hello'"]
