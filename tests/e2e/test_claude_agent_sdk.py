"""kodelet's Agent SDK hooks in real SDK sessions driving the pinned Claude Code binary."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents.standins.messages import MessagesAPI, Script, text, tool
from kodelet.integrations.claude_agent_sdk import hooks
from kodelet.testing import write_hook

from tests.e2e.agent_clis import MISSED_BY_THE_README_GUARD
from tests.e2e.claude_agent import DANGER_HOOK, REWRITE_HOOK
from tests.e2e.claude_code import claude_env

sdk = pytest.importorskip("claude_agent_sdk")


def _hook(project: Path, name: str, body: str) -> None:
    write_hook(project / ".kodelet" / "hooks", name, body)


def session(binary: Path, project: Path, home: Path, command: str) -> MessagesAPI:
    """One SDK ``query`` whose model runs ``command`` in Bash once, then stops."""
    script = Script([[tool("Bash", command=command, description="run")], [text("fin")]])
    with MessagesAPI(script) as api:
        options = sdk.ClaudeAgentOptions(
            cli_path=str(binary),
            cwd=str(project),
            hooks=hooks(),
            allowed_tools=["Bash"],
            env=claude_env(api, home),
            setting_sources=[],
        )

        async def drive() -> list[Any]:
            return [m async for m in sdk.query(prompt="go", options=options)]

        asyncio.run(asyncio.wait_for(drive(), 120))
        return api


def test_an_sdk_session_is_blocked_by_an_executable_hook(
    claude_bin: Path, cc_project: Path, isolated_home: Path
) -> None:
    _hook(cc_project, "no-danger", DANGER_HOOK)
    api = session(claude_bin, cc_project, isolated_home, "touch danger-marker")
    assert not (cc_project / "danger-marker").exists()
    assert "no danger here" in str(api.tool_results()[0]["content"])


def test_an_sdk_session_runs_the_rewritten_command(
    claude_bin: Path, cc_project: Path, isolated_home: Path
) -> None:
    _hook(cc_project, "rewrite", REWRITE_HOOK)
    session(claude_bin, cc_project, isolated_home, "touch original")
    assert (cc_project / "rewritten").exists()
    assert not (cc_project / "original").exists()


def test_kodelet_failing_inside_an_sdk_session_denies_the_call(
    claude_bin: Path, cc_project: Path, isolated_home: Path
) -> None:
    _hook(cc_project, "no-danger", DANGER_HOOK)
    (cc_project / ".kodelet" / "config.toml").write_text('[hooks."no-danger"]\ntimeout = "x"\n')
    api = session(claude_bin, cc_project, isolated_home, "touch marker")
    assert not (cc_project / "marker").exists()
    assert not api.main_requests()  # the prompt was denied before it reached the model


def test_an_sdk_session_is_guarded_by_the_recommended_rules(
    claude_bin: Path, cc_project: Path, isolated_home: Path
) -> None:
    victim = isolated_home / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep\n")
    (cc_project / ".kodelet").mkdir(exist_ok=True)
    (cc_project / ".kodelet" / "rules.toml").write_text('use = ["recommended"]\n')
    api = session(claude_bin, cc_project, isolated_home, MISSED_BY_THE_README_GUARD)
    assert (victim / "keep.txt").exists()
    assert "kodelet rule " in str(api.tool_results()[0]["content"])
