"""``kodelet verify`` and ``kodelet verify --live`` against the real, pinned Claude Code and
Gemini CLI: the agent binary on PATH as a user has it, kodelet installed in a project by
``kodelet AGENT install``, a guard that blocks and one that lets through. ``--live``
drives the agent against kodelet's own stand-in model and judges from the files in its
sacrificial folder; the plain run must agree with it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import agent_clis
from tests.e2e.agent_clis import GEMINI
from tests.kit.hooks import BLOCKER, NOTHING


@pytest.fixture
def agents_bin(tmp_path: Path, claude_bin: Path) -> Path:
    """A folder holding ``claude`` and ``gemini`` as a user's PATH has them."""
    try:
        gemini = agent_clis.install(GEMINI)
    except (agent_clis.InstallError, OSError) as exc:
        pytest.fail(f"cannot install Gemini CLI {GEMINI.version}: {exc}", pytrace=False)
    folder = tmp_path / "agents-bin"
    folder.mkdir()
    (folder / "claude").symlink_to(claude_bin)
    wrapper = folder / "gemini"
    wrapper.write_text(f'#!/bin/sh\nexec node {gemini} "$@"\n')
    wrapper.chmod(0o755)
    return folder


def kodelet(
    venv_bin: Path, agents_bin: Path, *args: str, cwd: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    inherited = [
        d
        for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
        if d and not os.access(os.path.join(d, "kodelet"), os.X_OK)
    ]
    path = os.pathsep.join([str(agents_bin), str(venv_bin), *inherited])
    return subprocess.run(
        [str(venv_bin / "kodelet"), *args],
        cwd=cwd,
        env={**os.environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def project(root: Path, guard: str) -> Path:
    hook = root / ".kodelet" / "hooks" / "guard"
    hook.parent.mkdir(parents=True)
    hook.write_text(guard)
    hook.chmod(0o700)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def calls(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert proc.stdout.startswith("{"), (proc.stdout, proc.stderr)
    data = json.loads(proc.stdout)
    (row,) = data["agents"]
    assert row["problem"] is None, row
    return {c["call"]: c for c in row["calls"]}


TRUST = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
"""Gemini CLI reads a project's settings only in a trusted folder: the user's shell says so."""


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_verify_live_a_guard_that_blocks_holds_in_the_real_agent(
    tmp_path: Path, venv_bin: Path, agents_bin: Path, agent: str
) -> None:
    root = project(tmp_path / "p", BLOCKER)
    run = lambda *a: kodelet(venv_bin, agents_bin, *a, cwd=root, **TRUST)  # noqa: E731
    assert run(agent, "install").returncode == 0
    args = ["verify", "--agent", agent, "--json", "--expect-block", "rm -rf build"]
    args += ["--expect-allow", "echo fine"]
    plain = run(*args)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    live = run(*args, "--live")
    assert live.returncode == 0, live.stdout + live.stderr
    got = calls(live)
    assert got["rm -rf build"]["outcome"] == "blocked"
    assert "no rm -rf in this project" in got["rm -rf build"]["reason"]
    assert got["echo fine"]["outcome"] == "allowed"
    (deletion,) = [c for c in got.values() if c["builtin"]]
    assert deletion["outcome"] == "blocked", deletion  # the victim file is still there
    assert calls(plain)["rm -rf build"]["outcome"] == "blocked"


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_verify_live_a_guard_that_lets_it_through_fails_from_facts(
    tmp_path: Path, venv_bin: Path, agents_bin: Path, agent: str
) -> None:
    root = project(tmp_path / "p", NOTHING)
    # The e2e session pip-installs the example guardrail plugin, which blocks rm -rf on
    # its own: this project's only guard must be the one that lets everything through.
    (root / ".kodelet" / "config.toml").write_text('[plugins]\ndisabled = ["guardrail"]\n')
    run = lambda *a: kodelet(venv_bin, agents_bin, *a, cwd=root, **TRUST)  # noqa: E731
    assert run(agent, "install").returncode == 0
    live = run("verify", "--agent", agent, "--live", "--json", "--expect-block", "rm -rf build")
    assert live.returncode == 1, live.stdout + live.stderr
    got = calls(live)
    assert got["rm -rf build"] | {"reason": ""} == {
        "call": "rm -rf build",
        "tool": "Bash",
        "builtin": False,
        "expect": "block",
        "outcome": "allowed",
        "reason": "",
        "held": False,
    }
    (deletion,) = [c for c in got.values() if c["builtin"]]
    assert deletion["outcome"] == "allowed"  # the victim file is gone


def test_verify_live_gemini_in_an_untrusted_folder_does_not_run_the_project_entry(
    tmp_path: Path, venv_bin: Path, agents_bin: Path
) -> None:
    root = project(tmp_path / "p", BLOCKER)
    assert kodelet(venv_bin, agents_bin, "gemini", "install", cwd=root).returncode == 0
    live = kodelet(
        venv_bin, agents_bin, "verify", "--agent", "gemini", "--live", "--expect-block", "rm -rf x",
        cwd=root,
    )  # fmt: skip
    assert live.returncode == 1, live.stdout + live.stderr
    assert "did not run the control call" in live.stdout
    assert "not trusted" in live.stdout


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_verify_from_a_subfolder_says_the_agent_never_calls_kodelet(
    tmp_path: Path, venv_bin: Path, agents_bin: Path, agent: str
) -> None:
    """The real agent started in a subfolder does not run the project's entry: the guard
    lets ``rm`` through there, as ``verify`` (exit 1) says it would, and ``install``
    said so."""
    root = project(tmp_path / "p", BLOCKER)
    deep = root / "src" / "deep"
    deep.mkdir(parents=True)
    run = lambda *a, cwd: kodelet(venv_bin, agents_bin, *a, cwd=cwd, **TRUST)  # noqa: E731
    installed = run(agent, "install", cwd=root)
    assert installed.returncode == 0
    assert "reads this file only when started in" in installed.stdout
    said = run("verify", "--agent", agent, cwd=deep)
    assert said.returncode == 1
    assert "reads only when started in" in said.stdout
    live = run(
        "verify", "--agent", agent, "--live", "--json", "--expect-block", "rm -rf build", cwd=deep
    )
    assert live.returncode == 1
    data = json.loads(live.stdout)
    got = {c["call"]: c for c in data["agents"][0]["calls"]}
    assert got["rm -rf build"]["outcome"] == "allowed", got


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_verify_live_a_user_scope_entry_holds_from_a_subfolder(
    tmp_path: Path, venv_bin: Path, agents_bin: Path, agent: str
) -> None:
    """Started in ``src/deep`` the agent calls the user-scope entry with its project
    variable set to ``src/deep``: the guards are still those of the project above."""
    root = project(tmp_path / "p", BLOCKER)
    deep = root / "src" / "deep"
    deep.mkdir(parents=True)
    run = lambda *a, cwd: kodelet(venv_bin, agents_bin, *a, cwd=cwd, **TRUST)  # noqa: E731
    assert run(agent, "install", "--scope", "user", cwd=root).returncode == 0
    args = ["verify", "--agent", agent, "--json", "--expect-block", "rm -rf build"]
    assert run(*args, cwd=deep).returncode == 0
    live = run(*args, "--live", cwd=deep)
    assert live.returncode == 0, live.stdout + live.stderr
    assert calls(live)["rm -rf build"]["outcome"] == "blocked"
