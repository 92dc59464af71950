"""kodelet inside the real Copilot CLI (``@github/copilot`` 1.0.102): PascalCase hooks.

Each test runs ``copilot -p`` offline against the stand-in Chat Completions API in a
fresh HOME and project, with kodelet connected by ``kodelet copilot install``, and
guards in ``.kodelet/hooks`` that know only kodelet's tool names (``bash``). Pass or
fail comes from facts: the files the shell call wrote, what the model was sent back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from kodelet.agents.standins.messages import Turn, text, tool

from tests.e2e import agent_clis
from tests.e2e.agent_clis import (
    COPILOT,
    MISSED_BY_THE_README_GUARD,
    STOP,
    Agent,
    assert_a_dangerous_call_is_blocked_by_the_native_client,
    assert_each_hook_runs_once,
    assert_the_recommended_rules_block,
    assert_the_redaction_holds,
    connected,
    hook_client,
    seen,
    write_hook,
)


@pytest.fixture
def copilot(cc_project: Path, isolated_home: Path, venv_bin: Path) -> Agent:
    return connected("copilot", COPILOT, agent_clis.copilot, cc_project, isolated_home, venv_bin)


def shell(command: str) -> list[Turn]:
    return [[tool("bash", command=command, description="run")], [text("done")]]


def test_a_dangerous_shell_call_is_blocked_through_the_native_client(
    copilot: Agent,
) -> None:
    assert_a_dangerous_call_is_blocked_by_the_native_client(copilot, shell("touch pwned # danger"))


def test_a_harmless_shell_call_runs(copilot: Agent) -> None:
    run = copilot.run(shell("echo hello > harmless.txt"))
    assert run.returncode == 0, run.stderr
    assert (copilot.project / "harmless.txt").read_text() == "hello\n"
    assert seen(copilot.project)[0]["tool_input"]["command"] == "echo hello > harmless.txt"


def test_a_rewrite_runs_the_rewritten_command(copilot: Agent) -> None:
    run = copilot.run(shell("sudo touch root.txt"))
    assert run.returncode == 0, run.stderr
    assert not (copilot.project / "root.txt").exists()
    assert (copilot.project / "rewritten.txt").read_text() == "rewritten\n"


def test_a_file_write_reaches_kodelet_under_kodelets_names(copilot: Agent) -> None:
    target = copilot.project / "notes.txt"
    run = copilot.run([[tool("create", path=str(target), file_text="hello\n")], [text("ok")]])
    assert run.returncode == 0, run.stderr
    assert target.read_text() == "hello\n"
    call = seen(copilot.project)[0]
    assert call["tool_name"] == "file_write"
    assert call["tool_input"] == {"file_path": str(target), "text": "hello\n"}


def test_added_context_and_a_follow_up_reach_the_model(copilot: Agent) -> None:
    write_hook(copilot.project, "stop", STOP)
    run = copilot.run(shell("echo explain > explained.txt"))
    assert run.returncode == 0, run.stderr
    assert (copilot.project / "explained.txt").exists()
    said = run.seen_by_model()
    assert "kodelet context: the build dir is generated" in said
    assert "kodelet follow-up: run the tests" in said
    assert said.count("kodelet follow-up: run the tests") < 20  # once, not a loop


def test_kodelet_failing_blocks_the_call_with_what_to_fix(copilot: Agent) -> None:
    (copilot.project / ".kodelet" / "config.toml").write_text("[hooks\n")
    """The prompt itself is refused (UserPromptSubmit), with the reason on the terminal."""
    run = copilot.run(shell("echo hello > harmless.txt"))
    assert not (copilot.project / "harmless.txt").exists()
    assert not run.api.main_requests()
    said = " ".join((run.stdout + run.stderr).split())  # the terminal wraps long lines
    assert "kodelet could not check this prompt, so it is blocked" in said
    assert "config.toml" in said
    assert "kodelet copilot status" in said  # rendered as markdown: no backticks


def test_kodelet_missing_blocks_the_call(copilot: Agent) -> None:
    """Copilot CLI denies a call whose hook command cannot start."""
    run = copilot.run(shell("echo hello > harmless.txt"), on_path=False)
    assert not (copilot.project / "harmless.txt").exists()
    assert "Denied by preToolUse hook" in "".join(run.tool_outputs()) + run.stdout


def test_user_scope_runs_the_warm_kodelets_lean_client(copilot: Agent) -> None:
    copilot.kodelet("copilot", "uninstall")
    copilot.kodelet("copilot", "install", "--scope", "user")
    hooks = json.loads((copilot.home / ".copilot" / "hooks" / "kodelet.json").read_text())
    command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    client = hook_client(copilot.venv_bin)
    assert command.endswith(f"{client} claude hook --agent copilot --scope user")
    run = copilot.run(shell("touch pwned # danger"), on_path=False)
    assert not (copilot.project / "pwned").exists()
    assert "kodelet guard: no danger here" in run.tool_outputs()[0]


def test_uninstall_leaves_copilots_hooks_as_they_were(copilot: Agent) -> None:
    copilot.kodelet("copilot", "uninstall")
    hooks = copilot.project / ".github" / "hooks"
    marker = copilot.project / "own-hook-ran"
    own = hooks / "own.json"
    mine = {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": f"touch {marker}"}]}}
    own.write_text(json.dumps(mine, indent=4) + "\n")
    before = {p.name: p.read_bytes() for p in hooks.iterdir()}
    copilot.kodelet("copilot", "install")
    assert (hooks / "kodelet.json").exists()
    copilot.kodelet("copilot", "uninstall")
    assert {p.name: p.read_bytes() for p in hooks.iterdir()} == before
    run = copilot.run(shell("touch pwned # danger"))
    assert run.returncode == 0, run.stderr
    assert (copilot.project / "pwned").exists()  # no guard any more
    assert marker.exists()  # the user's own hook still runs


def test_installed_at_project_and_user_scope_each_hook_runs_once(copilot: Agent) -> None:
    """Copilot CLI runs kodelet's entry of ``.github/hooks`` (a trusted folder) and
    that of ``~/.copilot/hooks`` for every call; the user's stands down, so each hook
    runs once."""
    assert_each_hook_runs_once(copilot, shell("echo once > once.txt"), "echo once > once.txt")


def untrusting(api: Any, agent: Agent, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``copilot -p`` with no COPILOT_ALLOW_ALL: the folder is trusted, or not, as the
    user's own config.json says."""
    command, env = agent_clis.copilot(api, agent, args)
    env.pop("COPILOT_ALLOW_ALL")
    return command, env


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-folder", "untrusted"])
def test_at_both_scopes_copilots_own_folder_trust_decides_which_entry_guards(
    copilot: Agent, trusted: bool
) -> None:
    """In a folder the user trusted (listed in its ``config.json``, which Copilot CLI
    rewrites as ``trustedFolders``) it runs kodelet's project entry and the user's
    stands down; in one it does not trust it skips ``.github/hooks`` and the user's
    entry guards alone. Either way: one run per call, and the guard holds."""
    copilot.kodelet("copilot", "install", "--scope", "user")
    if trusted:
        config = copilot.home / ".copilot" / "config.json"
        config.write_text(json.dumps({"trusted_folders": [str(copilot.project)]}))
    agent = attrs.evolve(copilot, launch=untrusting)
    run = agent.run(shell("echo once > once.txt"))
    assert run.returncode == 0, run.stderr
    calls = [p for p in seen(copilot.project) if p.get("tool_name") == "bash"]
    assert [p["tool_input"]["command"] for p in calls] == ["echo once > once.txt"]
    run = agent.run(shell("touch pwned # danger"))
    assert not (copilot.project / "pwned").exists()
    assert "kodelet guard: no danger here" in run.tool_outputs()[0]


def test_the_events_md_redaction_keeps_the_key_from_the_model(copilot: Agent) -> None:
    assert_the_redaction_holds(copilot, shell("cat keys.txt"))


def test_the_recommended_rules_block_what_the_readme_guard_misses(copilot: Agent) -> None:
    assert_the_recommended_rules_block(copilot, shell(MISSED_BY_THE_README_GUARD))
