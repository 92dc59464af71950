"""kodelet inside the real Codex (``@openai/codex`` 0.169.0): one guard, Codex's tools.

Each test runs ``codex exec`` against the stand-in Responses API in a fresh HOME and
project, with kodelet connected by ``kodelet codex install``, and a guard in
``.kodelet/hooks`` that knows only kodelet's tool names (``bash``). Pass or fail comes
from facts: the files the shell call wrote, what the model was sent back.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents.standins.messages import Turn, text, tool

from tests.e2e import agent_clis
from tests.e2e.agent_clis import (
    AFTER,
    CODEX,
    MISSED_BY_THE_README_GUARD,
    STOP,
    Agent,
    assert_a_dangerous_call_is_blocked_by_the_native_client,
    assert_a_managed_rule_holds,
    assert_each_hook_runs_once,
    assert_the_recommended_rules_block,
    assert_the_redaction_holds,
    connected,
    hook_client,
    seen,
    write_hook,
)
from tests.kit.warm import wait_for, warm


@pytest.fixture
def codex(cc_project: Path, isolated_home: Path, venv_bin: Path) -> Agent:
    return connected("codex", CODEX, agent_clis.codex, cc_project, isolated_home, venv_bin)


def shell(command: str) -> list[Turn]:
    return [[tool("exec_command", cmd=command)], [text("done")]]


def test_a_dangerous_shell_call_is_blocked_through_the_native_client(
    codex: Agent,
) -> None:
    assert_a_dangerous_call_is_blocked_by_the_native_client(codex, shell("touch pwned # danger"))


def test_a_harmless_shell_call_runs(codex: Agent) -> None:
    run = codex.run(shell("echo hello > harmless.txt"))
    assert run.returncode == 0, run.stderr
    assert (codex.project / "harmless.txt").read_text() == "hello\n"
    assert seen(codex.project)[0]["tool_input"] == {"command": "echo hello > harmless.txt"}


def test_a_rewrite_runs_the_rewritten_command(codex: Agent) -> None:
    run = codex.run(shell("sudo touch root.txt"))
    assert run.returncode == 0, run.stderr
    assert not (codex.project / "root.txt").exists()
    assert (codex.project / "rewritten.txt").read_text() == "rewritten\n"


def test_added_context_and_a_follow_up_reach_the_model(codex: Agent) -> None:
    write_hook(codex.project, "stop", STOP)
    write_hook(codex.project, "after", AFTER)
    run = codex.run(shell("echo explain > explained.txt"))
    assert run.returncode == 0, run.stderr
    assert (codex.project / "explained.txt").exists()
    said = run.seen_by_model()
    assert "kodelet context: the build dir is generated" in said
    assert "kodelet after: the output is fine" in said
    assert "kodelet follow-up: run the tests" in said
    assert said.count("kodelet follow-up: run the tests") < 20  # once, not a loop


def test_the_events_md_redaction_keeps_the_key_from_the_model(codex: Agent) -> None:
    assert_the_redaction_holds(codex, shell("cat keys.txt"))


def test_the_recommended_rules_block_what_the_readme_guard_misses(codex: Agent) -> None:
    assert_the_recommended_rules_block(codex, shell(MISSED_BY_THE_README_GUARD))


def test_a_managed_rule_holds_whatever_the_project_says(codex: Agent) -> None:
    assert_a_managed_rule_holds(codex, shell("touch pwned"))


def test_kodelet_failing_blocks_the_prompt(codex: Agent) -> None:
    """``codex exec`` prints no hook's reason; ``kodelet codex status`` names it."""
    (codex.project / ".kodelet" / "config.toml").write_text("[hooks\n")
    run = codex.run(shell("echo hello > harmless.txt"))
    assert not (codex.project / "harmless.txt").exists()
    assert not run.api.main_requests()  # the prompt itself is blocked
    assert "UserPromptSubmit Blocked" in run.stderr
    status = codex.kodelet("codex", "status").stdout
    assert "config error (every tool call is blocked until fixed)" in status
    assert "config.toml" in status


def test_kodelet_missing_lets_the_call_through_as_codex_does(codex: Agent) -> None:
    """Codex runs a call whose hook command cannot start: the documented gap."""
    run = codex.run(shell("touch pwned # danger"), on_path=False)
    assert run.returncode == 0, run.stderr
    assert (codex.project / "pwned").exists()


def test_install_records_codexs_trust_without_which_codex_runs_no_hook(codex: Agent) -> None:
    """``codex exec`` runs only reviewed hooks: install records the review of kodelet's
    own entries in Codex's config.toml; without it Codex lets the call through, and
    ``kodelet codex status`` says so."""
    config = codex.home / ".codex" / "config.toml"
    trusted = config.read_text()
    assert trusted.count("trusted_hash") == 5
    config.write_text(trusted.split("[hooks")[0])
    untrusted = codex.kodelet("codex", "status", check=False)
    assert untrusted.returncode == 1  # the guard does not hold
    status = untrusted.stdout
    assert "5 of kodelet's entries are not trusted by Codex, which will not run them" in status
    assert "NOT HELD here:" in status
    run = codex.run(shell("touch pwned # danger"))
    assert (codex.project / "pwned").exists()
    codex.kodelet("codex", "install")
    assert "not trusted" not in codex.kodelet("codex", "status").stdout
    run = codex.run(shell("touch pwned2 # danger"))
    assert not (codex.project / "pwned2").exists()
    assert "kodelet guard: no danger here" in run.tool_outputs()[0]


def test_user_scope_runs_the_warm_kodelets_lean_client(codex: Agent) -> None:
    codex.kodelet("codex", "uninstall")
    codex.kodelet("codex", "install", "--scope", "user")
    hooks = json.loads((codex.home / ".codex" / "hooks.json").read_text())
    command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command.endswith(f"{hook_client(codex.venv_bin)} claude hook --agent codex --scope user")
    run = codex.run(shell("touch pwned # danger"), on_path=False)
    assert not (codex.project / "pwned").exists()
    assert "kodelet guard: no danger here" in run.tool_outputs()[0]


COUNTED = """#!/bin/bash
# Blocks the call on the victim, and notes each of its runs.
case "$1" in
  hook) echo before_tool_call ;;
  run)
    case "$(cat)" in
      *'rm -rf victim'*)
        echo ran >> RUNS
        echo '{"blocked": true, "reason": "kodelet guard: the victim stays"}' ;;
    esac ;;
esac
"""


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_a_stopped_warm_kodelet_is_passed_by_and_the_guard_runs_once(
    codex: Agent, tmp_path: Path
) -> None:
    """A warm kodelet that takes no call (here SIGSTOPped) is waited for a second or
    two, not Codex's whole hook timeout after which Codex runs the call: the lean
    client answers in-process, the guard blocks, and the warm kodelet, resumed, runs
    nothing of the calls it never acknowledged."""
    codex.kodelet("codex", "uninstall")
    codex.kodelet("codex", "install", "--scope", "user")
    # The e2e session's example guardrail plugin would block ``rm -rf`` before it.
    (codex.project / ".kodelet" / "config.toml").write_text('[plugins]\ndisabled = ["guardrail"]\n')
    runs = tmp_path / "runs"
    write_hook(codex.project, "wedge", COUNTED.replace("RUNS", str(runs)))
    victim = codex.project / "victim"
    victim.mkdir()
    first = codex.run(shell("echo hi > warmed.txt"), on_path=False)
    assert (codex.project / "warmed.txt").exists(), first.stderr
    (info,) = wait_for(warm)  # the first call, answered in-process, started it
    pid = int(info["pid"])
    os.kill(pid, signal.SIGSTOP)
    try:
        assert wait_for(lambda: state(pid) == "T")
        run = codex.run(shell("rm -rf victim"), on_path=False, timeout=300)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert victim.is_dir(), run.stderr
    assert "kodelet guard: the victim stays" in run.tool_outputs()[0]
    assert runs.read_text() == "ran\n"
    # Resumed, it finds each hook call of the session given up by its client (Codex
    # prints "hook: EVENT" as it starts one) and runs none of them.
    hooks = [line for line in run.stderr.splitlines() if line.split(":")[0] == "hook"]
    started = [line for line in hooks if len(line.split()) == 2]
    assert "hook: PreToolUse" in started
    (resumed,) = wait_for(lambda: [i for i in warm() if i["abandoned"] == len(started)])
    assert (resumed["pid"], resumed["calls"]) == (pid, info["calls"])
    assert runs.read_text() == "ran\n"


def test_uninstall_leaves_codexs_hooks_as_they_were(codex: Agent) -> None:
    codex.kodelet("codex", "uninstall")
    config = codex.home / ".codex" / "config.toml"
    assert "hooks.state" not in config.read_text()  # kodelet's trust records went too
    own = codex.project / ".codex" / "hooks.json"
    marker = codex.project / "own-hook-ran"
    mine = {
        "PreToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": f"touch {marker}"}]}
        ]
    }
    before = json.dumps({"hooks": mine}, indent=4) + "\n"
    own.write_text(before)
    codex.kodelet("codex", "install")
    assert own.read_text() != before
    codex.kodelet("codex", "uninstall")
    assert own.read_text() == before
    assert not own.with_name("hooks.json.bak").exists()
    assert "hooks.state" not in config.read_text()
    # The user's own hook runs once the user trusts it (here: trust bypassed).
    run = codex.run(shell("touch pwned # danger"), args=("--dangerously-bypass-hook-trust",))
    assert run.returncode == 0, run.stderr
    assert (codex.project / "pwned").exists()  # no guard any more
    assert marker.exists()


def test_installed_at_project_and_user_scope_each_hook_runs_once(codex: Agent) -> None:
    """Codex runs kodelet's entry of the project's ``.codex/hooks.json`` (a trusted
    project) and that of ``~/.codex/hooks.json`` for every call; the user's stands down,
    so each hook runs once."""
    assert_each_hook_runs_once(codex, shell("echo once > once.txt"), "echo once > once.txt")


def test_in_a_project_codex_does_not_trust_the_user_entry_still_guards(codex: Agent) -> None:
    """Codex skips ``.codex/`` of a project the user has not trusted: kodelet cannot be
    sure the project entry runs, so the user's entry does not stand down."""
    codex.kodelet("codex", "install", "--scope", "user")
    config = codex.home / ".codex" / "config.toml"
    trust = f'[projects."{codex.project}"]\ntrust_level = "trusted"\n'
    text = agent_clis.codex_config(codex.project) + "\n" + config.read_text()
    config.write_text(text.replace(trust, ""))
    run = codex.run(shell("touch pwned # danger"))
    assert run.returncode == 0, run.stderr
    assert not (codex.project / "pwned").exists()
    assert "kodelet guard: no danger here" in run.tool_outputs()[0]
    assert len([p for p in seen(codex.project) if p.get("tool_name") == "bash"]) == 1


def test_outside_a_repository_each_hook_runs_once(codex: Agent) -> None:
    """With no ``.git`` above, Codex's project root is the trusted folder it starts in;
    it reads that folder's ``.codex/hooks.json``, and the user's entry stands down."""
    shutil.rmtree(codex.project / ".git")
    assert_each_hook_runs_once(codex, shell("echo once > once.txt"), "echo once > once.txt")


def typed_in(line: str) -> Any:
    """The model opens a shell on a terminal (``exec_command`` with ``tty``) and types
    ``line`` into it with ``write_stdin``, then ``exit``: each turn answers the tool
    outputs so far, and the session is the one Codex said it started."""

    def answer(request: dict[str, Any]) -> Turn:
        outputs = [
            str(item.get("output"))
            for item in request.get("input") or []
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        started = re.findall(r"session ID (\d+)", "\n".join(outputs))
        session = int(started[0]) if started else 1000
        steps: list[Turn] = [
            [tool("exec_command", cmd="bash", tty=True, yield_time_ms=500)],
            [tool("write_stdin", session_id=session, chars=f"{line}\n", yield_time_ms=1000)],
            [tool("write_stdin", session_id=session, chars="exit\n", yield_time_ms=1000)],
        ]
        return steps[len(outputs)] if len(outputs) < len(steps) else [text("done")]

    return answer


def test_an_interactive_shell_is_refused_so_nothing_is_typed_past_the_guard(
    codex: Agent,
) -> None:
    """Codex sends no hook for ``write_stdin``: kodelet refuses the ``exec_command`` that
    would open the shell, and tells the model what to do instead."""
    victim = codex.project / "victim"
    victim.mkdir()
    run = codex.run(typed_in("rm -rf victim"))
    assert run.returncode == 0, run.stderr
    assert victim.is_dir(), run.stderr
    refused = run.tool_outputs()[0]
    assert "write_stdin reaches no hook" in refused
    assert "as its own exec_command call" in refused


def test_with_interactive_shells_allowed_a_typed_in_command_runs_unseen(codex: Agent) -> None:
    """The opt-out, and why it is not the default: the typed-in command runs, and the
    guard saw only the shell being opened."""
    (codex.project / ".kodelet" / "config.toml").write_text(
        '[codex]\ninteractive_shells = "allow"\n'
    )
    victim = codex.project / "victim"
    victim.mkdir()
    run = codex.run(typed_in("rm -rf victim"))
    assert run.returncode == 0, run.stderr
    assert not victim.exists(), run.stderr
    shells = [p["tool_input"] for p in seen(codex.project) if p.get("tool_name") == "bash"]
    assert shells == [{"command": "bash"}]


def test_in_code_mode_each_tool_the_script_calls_reaches_the_guard(codex: Agent) -> None:
    """With a model Codex knows, it gives the model its tools inside a JavaScript ``exec``
    (code mode): no hook runs for the script, and each tool it calls reaches the hooks
    as itself, so the guard still blocks the shell call."""
    script = 'text(JSON.stringify(await tools.exec_command({cmd: "touch pwned # danger"})));'
    turns: list[Turn] = [[{"type": "tool_use", "name": "exec", "input": script}], [text("done")]]
    run = codex.run(turns, args=("-m", "gpt-6.1-sol"))
    assert run.returncode == 0, run.stderr
    assert not (codex.project / "pwned").exists()
    assert "kodelet guard: no danger here" in run.tool_outputs()[0]
    assert [p["tool_name"] for p in seen(codex.project)] == ["bash"]
