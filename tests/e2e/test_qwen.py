"""kodelet inside the real Qwen Code (``@qwen-code/qwen-code`` 0.24.4): one guard, Qwen's tools.

Each test runs ``qwen -p --yolo`` against the stand-in Chat Completions API in a fresh
HOME and project, with kodelet connected by ``kodelet qwen install``, and a guard in
``.kodelet/hooks`` that knows only kodelet's tool names: it fires for Qwen's
``run_shell_command`` because the dialect maps it to ``bash``. Pass or fail comes from
facts: the files the shell call wrote, what the model was sent back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kodelet.agents.standins.messages import Turn, text, tool

from tests.e2e import agent_clis
from tests.e2e.agent_clis import (
    AFTER,
    MISSED_BY_THE_README_GUARD,
    QWEN,
    STOP,
    Agent,
    assert_a_dangerous_call_is_blocked_by_the_native_client,
    assert_each_hook_runs_once,
    assert_the_recommended_rules_block,
    assert_the_redaction_holds,
    connected,
    seen,
    write_hook,
)


@pytest.fixture
def qwen(cc_project: Path, isolated_home: Path, venv_bin: Path) -> Agent:
    return connected("qwen", QWEN, agent_clis.qwen, cc_project, isolated_home, venv_bin)


def shell(command: str) -> list[Turn]:
    return [[tool("run_shell_command", command=command)], [text("done")]]


def test_a_dangerous_shell_call_is_blocked_through_the_native_client(
    qwen: Agent,
) -> None:
    assert_a_dangerous_call_is_blocked_by_the_native_client(qwen, shell("touch pwned # danger"))


def test_a_harmless_shell_call_runs(qwen: Agent) -> None:
    run = qwen.run(shell("echo hello > harmless.txt"))
    assert run.returncode == 0, run.stderr
    assert (qwen.project / "harmless.txt").read_text() == "hello\n"
    assert seen(qwen.project)[0]["tool_input"] == {"command": "echo hello > harmless.txt"}


def test_a_rewrite_blocks_the_call_and_names_the_rewritten_one(qwen: Agent) -> None:
    """Qwen Code 0.24.4 ignores a PreToolUse hook's updatedInput: the call as asked must
    not run, so the model is told the rewritten call to make instead."""
    run = qwen.run(shell("sudo touch root.txt"))
    assert run.returncode == 0, run.stderr
    assert not (qwen.project / "root.txt").exists()
    assert '{"command": "echo rewritten > rewritten.txt"}' in run.tool_outputs()[0]


def test_added_context_and_a_follow_up_reach_the_model(qwen: Agent) -> None:
    write_hook(qwen.project, "stop", STOP)
    write_hook(qwen.project, "after", AFTER)
    run = qwen.run(shell("echo explain > explained.txt"))
    assert run.returncode == 0, run.stderr
    assert (qwen.project / "explained.txt").exists()
    said = run.seen_by_model()
    assert "kodelet after: the output is fine" in said
    assert "kodelet follow-up: run the tests" in said
    # Qwen Code 0.24.4 reads a PreToolUse hook's additionalContext and drops it.
    assert "kodelet context: the build dir is generated" not in said


def test_only_the_users_prompts_are_user_messages(qwen: Agent) -> None:
    """Qwen Code fires UserPromptSubmit with an empty prompt after each tool round."""
    out = qwen.project / ".kodelet" / "prompts.jsonl"
    hook = '#!/bin/bash\n[ "$1" = hook ] && { echo user_message_send; exit 0; }\n'
    write_hook(qwen.project, "prompts", hook + f"cat >> {out}; echo >> {out}\n")
    qwen.run(shell("echo hello"))
    prompts = [json.loads(line)["message"] for line in out.read_text().splitlines() if line]
    assert prompts == ["go"]


def test_kodelet_failing_blocks_the_prompt(qwen: Agent) -> None:
    """``qwen -p`` prints no hook's reason; ``kodelet qwen status`` names it."""
    (qwen.project / ".kodelet" / "config.toml").write_text("[hooks\n")
    run = qwen.run(shell("echo hello > harmless.txt"))
    assert not (qwen.project / "harmless.txt").exists()
    assert not run.api.main_requests()  # the prompt itself is blocked
    status = qwen.kodelet("qwen", "status").stdout
    assert "config error (every tool call is blocked until fixed)" in status
    assert "config.toml" in status


def test_kodelet_missing_lets_the_call_through_as_qwen_does(qwen: Agent) -> None:
    """Qwen Code runs a call whose hook command cannot start: the documented gap."""
    run = qwen.run(shell("touch pwned # danger"), on_path=False)
    assert run.returncode == 0, run.stderr
    assert (qwen.project / "pwned").exists()


def test_uninstall_leaves_qwens_settings_as_they_were(qwen: Agent) -> None:
    qwen.kodelet("qwen", "uninstall")
    settings = qwen.project / ".qwen" / "settings.json"
    marker = qwen.project / "own-hook-ran"
    mine = {"type": "command", "command": f"touch {marker}"}
    before = json.dumps(
        {
            "model": {"name": "standin"},
            "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [mine]}]},
        },
        indent=4,
    )
    settings.write_text(before)
    qwen.kodelet("qwen", "install")
    assert settings.read_text() != before
    qwen.kodelet("qwen", "uninstall")
    assert settings.read_text() == before
    assert not settings.with_name("settings.json.bak").exists()
    run = qwen.run(shell("touch pwned # danger"))
    assert run.returncode == 0, run.stderr
    assert (qwen.project / "pwned").exists()  # no guard any more
    assert marker.exists()  # the user's own hook still runs


def test_installed_at_project_and_user_scope_each_hook_runs_once(qwen: Agent) -> None:
    """Qwen Code runs kodelet's entry of ``.qwen/settings.json`` and that of
    ``~/.qwen/settings.json`` for every call; the user's stands down, so each hook runs
    once."""
    assert_each_hook_runs_once(qwen, shell("echo once > once.txt"), "echo once > once.txt")


def test_a_monitor_command_is_a_shell_call_to_the_guard(qwen: Agent) -> None:
    """Qwen Code's deferred ``monitor``, run through ``tool_call``, runs a shell command in
    the background: kodelet sees it as ``bash``."""
    monitor = {"command": "touch pwned # danger", "description": "m"}
    call = {
        "type": "tool_use",
        "name": "tool_call",
        "input": {"name": "monitor", "arguments": monitor},
    }
    run = qwen.run([[tool("tool_search", query="select:monitor")], [call], [text("done")]])
    assert run.returncode == 0, run.stderr
    assert not (qwen.project / "pwned").exists(), run.tool_outputs()
    assert "kodelet guard: no danger here" in run.tool_outputs()[1]


def test_the_events_md_redaction_keeps_the_key_from_the_model(qwen: Agent) -> None:
    assert_the_redaction_holds(qwen, shell("cat keys.txt"))


def test_the_recommended_rules_block_what_the_readme_guard_misses(qwen: Agent) -> None:
    assert_the_recommended_rules_block(qwen, shell(MISSED_BY_THE_README_GUARD))
