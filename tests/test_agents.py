"""`kodelet claude hook --agent NAME`: other agents' hook inputs through the Claude bridge.

Each test runs the real bridge (``python -m kodelet claude hook``, or the lean client
of the warm kodelet) on a hook input shaped like the agent's, in a project whose
``.kodelet/hooks`` holds a real bash guard written for kodelet's own tool names.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents import DIALECTS, Dialect
from kodelet.agents.base import Answer, Ran
from kodelet.testing import write_hook

from tests.kit.cli import bridge

GUARD = """#!/bin/bash
[ "$1" = hook ] && { echo before_tool_call; exit 0; }
payload=$(cat)
printf '%s' "$payload" > .kodelet/seen.json
case "$payload" in
  *'rm -rf'*) echo '{"blocked": true, "reason": "rm -rf is not allowed"}' ;;
  *'sudo '*) echo '{"input": {"command": "echo no sudo", "background": false}}' ;;
esac
"""


ASKER = """#!/bin/bash
[ "$1" = hook ] && { echo before_tool_call; exit 0; }
grep -q 'git push' && echo '{"ask": true, "reason": "pushing needs a yes"}'
exit 0
"""

REDACT = """#!/bin/bash
[ "$1" = hook ] && { echo after_tool_call; exit 0; }
grep -q SECRET && printf '%s' '{"output": {"toolName": "bash", "success": true, ' \
  '"metadata": {"tool_response": "redacted"}}}'
exit 0
"""

PROMPT = """#!/bin/bash
[ "$1" = hook ] && { echo user_message_send; exit 0; }
cat > .kodelet/prompt.json
"""


@pytest.fixture
def guarded(project: Path) -> Path:
    write_hook(project / ".kodelet" / "hooks", "guard", GUARD)
    return project


def pre_tool(project: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A PreToolUse input as Codex and Qwen Code send it: Claude's fields, their tools."""
    return {
        "session_id": "s-1",
        "transcript_path": "",
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "call_1",
    }


def seen(project: Path) -> Any:
    return json.loads((project / ".kodelet" / "seen.json").read_text())


@pytest.mark.parametrize(
    ("agent", "tool"),
    [("qwen", "run_shell_command"), ("codex", "exec_command"), ("codex", "Bash")],
)
@pytest.mark.parametrize("lean", [False, True], ids=["in-process", "lean-client"])
def test_a_guard_on_bash_blocks_the_agents_shell(
    guarded: Path, agent: str, tool: str, lean: bool
) -> None:
    proc = bridge(
        pre_tool(guarded, tool, {"command": "rm -rf /"}), "--agent", agent, cwd=guarded, lean=lean
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm -rf is not allowed",
        }
    }
    assert seen(guarded)["tool_name"] == "bash"
    assert seen(guarded)["tool_input"] == {"command": "rm -rf /"}


def test_a_rewrite_codex_can_run_is_allowed_in_its_form(guarded: Path) -> None:
    """Codex 0.169.0 refuses ``updatedInput`` without ``permissionDecision: "allow"``."""
    proc = bridge(pre_tool(guarded, "Bash", {"command": "sudo ls"}), "--agent", "codex",
                  cwd=guarded)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"command": "echo no sudo", "run_in_background": False},
    }


def test_a_rewrite_qwen_cannot_run_blocks_and_names_the_rewritten_call(guarded: Path) -> None:
    """Qwen Code 0.24.4 ignores ``updatedInput``: the call as asked must not run."""
    call = pre_tool(guarded, "run_shell_command", {"command": "sudo ls", "is_background": True})
    proc = bridge(call, "--agent", "qwen", cwd=guarded)
    assert proc.returncode == 0, proc.stderr
    assert seen(guarded)["tool_input"] == {"command": "sudo ls", "background": True}
    specific = json.loads(proc.stdout)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    rewritten = '{"command": "echo no sudo", "is_background": false}'
    assert f"rewrote this call to {rewritten}" in specific["permissionDecisionReason"]
    assert "updatedInput" not in specific


@pytest.mark.parametrize("agent", ["codex", "qwen"])
def test_an_ask_is_a_deny_where_the_agent_has_no_one_to_ask(guarded: Path, agent: str) -> None:
    write_hook(guarded / ".kodelet" / "hooks", "asker", ASKER)
    proc = bridge(pre_tool(guarded, "Bash", {"command": "git push"}), "--agent", agent,
                  cwd=guarded)  # fmt: skip
    specific = json.loads(proc.stdout)["hookSpecificOutput"]
    expected = "deny" if agent == "codex" else "ask"
    assert (specific["permissionDecision"], specific["permissionDecisionReason"]) == (
        expected,
        "pushing needs a yes",
    )


def test_a_replaced_tool_output_is_codexs_blocking_reason(guarded: Path) -> None:
    """Codex 0.169.0 refuses ``updatedToolOutput`` but puts a blocking PostToolUse
    answer's reason in the output's place: the rewrite goes there, never beside it."""
    write_hook(guarded / ".kodelet" / "hooks", "redact", REDACT)
    call = {
        **pre_tool(guarded, "Bash", {"command": "cat .env"}),
        "hook_event_name": "PostToolUse",
        "tool_response": "SECRET=1",
    }
    proc = bridge(call, "--agent", "codex", cwd=guarded)
    assert json.loads(proc.stdout) == {"decision": "block", "reason": "redacted"}


def test_an_empty_prompt_is_no_user_message(guarded: Path) -> None:
    """Qwen Code sends UserPromptSubmit with ``prompt: ""`` after every tool round."""
    write_hook(guarded / ".kodelet" / "hooks", "prompt", PROMPT)
    call = {**pre_tool(guarded, "x", {}), "hook_event_name": "UserPromptSubmit", "prompt": ""}
    proc = bridge(call, "--agent", "qwen", cwd=guarded)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert not (guarded / ".kodelet" / "prompt.json").exists()
    proc = bridge({**call, "prompt": "hello"}, "--agent", "qwen", cwd=guarded)
    assert json.loads((guarded / ".kodelet" / "prompt.json").read_text())["message"] == "hello"


def test_a_harmless_call_gets_no_answer(guarded: Path) -> None:
    proc = bridge(pre_tool(guarded, "run_shell_command", {"command": "ls"}), "--agent", "qwen",
                  cwd=guarded)  # fmt: skip
    assert (proc.returncode, proc.stdout) == (0, "")


def test_kodelet_failing_blocks_in_the_agents_form(guarded: Path) -> None:
    (guarded / ".kodelet" / "config.toml").write_text("[hooks\n")
    proc = bridge(pre_tool(guarded, "exec_command", {"command": "ls"}), "--agent", "codex",
                  cwd=guarded)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    specific = json.loads(proc.stdout)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "config.toml" in specific["permissionDecisionReason"]
    assert "`kodelet codex status`" in specific["permissionDecisionReason"]


def test_an_unknown_agent_is_refused_with_the_known_ones(guarded: Path) -> None:
    proc = bridge(pre_tool(guarded, "Bash", {"command": "ls"}), "--agent", "nope", cwd=guarded)
    assert proc.returncode == 2
    assert "unknown agent 'nope' (known: claude, codex, " in proc.stderr


def test_to_claude_and_back_keep_unknown_names() -> None:
    dialect = DIALECTS["qwen"]
    data = {"hook_event_name": "TodoCreated", "tool_name": "mcp__x__y", "tool_input": {"a": 1}}
    assert dialect.to_claude(data) == data
    assert dialect.speak(None, 0, data) == ("", 0)


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_each_dialect_reads_back_the_answer_it_says(name: str) -> None:
    """The bridge's answer (:meth:`Dialect.say`) read as the agent reads it
    (:meth:`Dialect.outcome`, what ``kodelet verify`` judges by): a block stays a block
    with its reason, an ask is an ask where someone can answer, a rewrite the agent
    cannot run blocks, and no answer lets the call through."""
    d = DIALECTS[name]
    data = {"hook_event_name": d.agent_event("PreToolUse"), "tool_name": d.shell_tool}

    def heard(answer: Answer | None) -> tuple[str, str]:
        out, code = d.speak(answer, 0, data)
        return d.outcome(Ran(code, out))

    assert heard(Answer("PreToolUse", blocked=True, reason="no")) == ("blocked", "no")
    assert heard(None) == ("allowed", "no hook objected")
    assert heard(Answer("PreToolUse")) == ("allowed", "no hook objected")
    nobody_asks = not d.asks
    asked = heard(Answer("PreToolUse", ask=True, reason="sure?"))
    assert asked == ("blocked" if nobody_asks else "asks", "sure?")
    rewritten = heard(Answer("PreToolUse", input={"command": "ls"}))
    assert rewritten[0] == ("rewritten" if d.rewrites else "blocked"), rewritten


def test_every_dialect_maps_the_blocking_events() -> None:
    for d in DIALECTS.values():
        assert isinstance(d, Dialect)
        claude = {d.claude_event(e) for e in d.hook_events()}
        assert {"PreToolUse", "UserPromptSubmit"} <= claude, d.name
        shell = next((t for t, c in d.tools.items() if c == "Bash"), "Bash")
        assert d.claude_tool(shell) == "Bash", d.name


@pytest.mark.parametrize(
    ("agent", "inside"), [("codex", "hooks.json"), ("copilot", "hooks/kodelet.json")]
)
def test_the_agents_home_variable_stands_for_its_folder(
    tmp_path: Path, agent: str, inside: str
) -> None:
    d = DIALECTS[agent]
    env = {"HOME": str(tmp_path / "home"), d.home_env: str(tmp_path / "elsewhere")}
    assert d.config_path("user", tmp_path, env) == (tmp_path / "elsewhere" / inside).resolve()
    del env[d.home_env]
    assert d.config_path("user", tmp_path, env) == tmp_path / "home" / d.config["user"][2:]


def test_the_warm_kodelet_answers_an_agent_as_in_process(guarded: Path) -> None:
    """The lean client hands ``--agent`` to the warm kodelet, which answers in the
    agent's form from its kept runtime."""
    import time

    from kodelet.warm import control

    (guarded / ".git").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KODELET_DAEMON"}
    call = pre_tool(guarded, "run_shell_command", {"command": "rm -rf /"})
    first = bridge(call, "--agent", "qwen", cwd=guarded, lean=True, env=env)
    deadline = time.monotonic() + 30
    while not (running := [i for i in control.running(env) if "pid" in i]):
        assert time.monotonic() < deadline, "no warm kodelet started"
        time.sleep(0.05)
    second = bridge(call, "--agent", "qwen", cwd=guarded, lean=True, env=env)
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout)
    assert "rm -rf is not allowed" in second.stdout
    assert control.ask(running[0]["socket"], "status")["calls"] == 1
