"""`kodelet agents` and `kodelet AGENT status` show the installed agent's version beside
the one kodelet was verified with, and what that version is known to lack.

Each agent is a real stand-in executable on PATH that prints a version the way the real
CLI does (``2.1.328 (Claude Code)``, ``codex-cli 0.169.0``); nothing is mocked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kodelet.agents import DIALECTS
from kodelet.agents.versions import installed_version

from tests.kit.cli import run_kodelet as kodelet

SKILL_LINES = "skill and slash-command shell lines"


def stand_in(bindir: Path, name: str, script: str) -> Path:
    bindir.mkdir(exist_ok=True)
    path = bindir / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def on_path(bindir: Path) -> dict[str, str]:
    return {"PATH": f"{bindir}{os.pathsep}/usr/bin:/bin"}


def test_an_older_claude_code_is_named_unverified_and_its_skill_lines_unguarded(
    tmp_path: Path, isolated_home: Path
) -> None:
    bindir = tmp_path / "bin"
    stand_in(bindir, "claude", 'echo "2.1.328 (Claude Code)"')
    done = kodelet("claude", "status", cwd=tmp_path, env=on_path(bindir))
    assert "version: 2.1.328 (kodelet verified with 2.1.332)" in done.stdout, done.stderr
    assert "unverified: Claude Code 2.1.328 is older than 2.1.332" in done.stdout
    assert f"missing in 2.1.328: {SKILL_LINES}" in done.stdout
    assert "run unguarded" in done.stdout
    data = json.loads(
        kodelet("claude", "status", "--json", cwd=tmp_path, env=on_path(bindir)).stdout
    )
    assert (data["version"], data["verified"]) == ("2.1.328", "2.1.332")
    assert "older than 2.1.332" in data["unverified"]
    assert len(data["missing"]) == 1 and data["missing"][0].startswith(SKILL_LINES)


def test_the_verified_claude_code_lacks_nothing(tmp_path: Path, isolated_home: Path) -> None:
    bindir = tmp_path / "bin"
    stand_in(bindir, "claude", 'echo "2.1.332 (Claude Code)"')
    data = json.loads(
        kodelet("claude", "status", "--json", cwd=tmp_path, env=on_path(bindir)).stdout
    )
    assert (data["version"], data["unverified"], data["missing"]) == ("2.1.332", None, [])
    text = kodelet("claude", "status", cwd=tmp_path, env=on_path(bindir)).stdout
    assert "version: 2.1.332 (kodelet verified with 2.1.332)" in text
    assert "unverified" not in text and SKILL_LINES not in text


@pytest.mark.parametrize("agent", sorted(DIALECTS))
def test_every_agents_status_shows_its_version(
    tmp_path: Path, isolated_home: Path, agent: str
) -> None:
    dialect = DIALECTS[agent]
    bindir = tmp_path / "bin"
    stand_in(bindir, dialect.binary, f'echo "{dialect.binary} 9.9.9"')
    done = kodelet(agent, "status", "--json", cwd=tmp_path, env=on_path(bindir))
    data = json.loads(done.stdout)
    assert (data["version"], data["verified"]) == ("9.9.9", dialect.verified)
    assert f"9.9.9 is newer than {dialect.verified}" in data["unverified"]
    text = kodelet(agent, "status", cwd=tmp_path, env=on_path(bindir)).stdout
    assert f"version: 9.9.9 (kodelet verified with {dialect.verified})" in text


def test_agents_shows_each_version_and_not_found(tmp_path: Path, isolated_home: Path) -> None:
    bindir = tmp_path / "bin"
    stand_in(bindir, "codex", 'echo "codex-cli 0.169.0"')
    stand_in(bindir, "claude", 'echo "2.1.330 (Claude Code)"')
    data = json.loads(kodelet("agents", "--json", cwd=tmp_path, env=on_path(bindir)).stdout)
    rows = {r["agent"]: r for r in data["agents"]}
    assert (rows["codex"]["version"], rows["codex"]["unverified"]) == ("0.169.0", None)
    assert rows["claude"]["version"] == "2.1.330"
    assert rows["claude"]["missing"][0].startswith(SKILL_LINES)
    assert (rows["qwen"]["version"], rows["qwen"]["version_problem"]) == (None, "not found")
    assert rows["qwen"]["verified"] == DIALECTS["qwen"].verified
    text = kodelet("agents", cwd=tmp_path, env=on_path(bindir)).stdout
    assert "version: 0.169.0 (kodelet verified with 0.169.0)" in text
    assert f"missing in 2.1.330: {SKILL_LINES}" in text
    assert f"version: not found (kodelet verified with {DIALECTS['qwen'].verified})" in text


def test_a_version_flag_that_hangs_is_cut_off_with_its_children(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    stand_in(bindir, "claude", "sleep 300 & sleep 300")
    version, problem = installed_version(DIALECTS["claude"], on_path(bindir), timeout=0.5)
    assert version is None
    assert problem == "`claude --version` timed out after 0.5s"


def test_a_binary_found_through_a_relative_path_entry_is_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    stand_in(tmp_path / "bin", "claude", f"touch {marker}; echo 2.1.332")
    env = {"PATH": "bin", "HOME": str(tmp_path)}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        version, problem = installed_version(DIALECTS["claude"], env)
    finally:
        os.chdir(cwd)
    assert version is None and problem is not None and "relative PATH entry" in problem
    assert not marker.exists()
