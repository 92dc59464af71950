"""A Claude Code plugin installed with ``kodelet plugins add`` runs inside the real Claude
Code from a directory named as its author named it, so a hook that imports the plugin
by that name (as hookify does) still guards."""

from __future__ import annotations

from pathlib import Path

import pytest
from kodelet.agents.standins.messages import text, tool

from tests.e2e.claude_agent import Agent
from tests.kit.repos import make_claude_plugin


def test_a_claude_plugin_that_imports_itself_by_name_guards_after_plugins_add(
    claude_bin: Path,
    cc_project: Path,
    isolated_home: Path,
    venv_bin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = Agent(claude_bin, cc_project, isolated_home, venv_bin)
    agent.install()
    base = tmp_path / "git"
    make_claude_plugin(base / "acme" / "guard-repo")  # its plugin.json names it "guardkit"
    monkeypatch.setenv("KODELET_PLUGIN_GIT_BASE", f"file://{base}")
    agent.kodelet("plugins", "add", "acme/guard-repo")
    keep = agent.project / "keep.txt"
    keep.write_text("kept")
    run = agent.run([[tool("Bash", command=f"rm {keep}", description="rm")], [text("fin")]])
    assert keep.exists(), run.tool_result_text()
    assert "guardkit: no rm" in run.tool_result_text()
