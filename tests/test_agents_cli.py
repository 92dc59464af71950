"""`kodelet codex|qwen install|uninstall|status` and `kodelet agents`: the claude install
contract for every agent, run as real ``python -m kodelet`` processes on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet.warm.native_client import native_path

from tests.kit.claude import our_commands as commands
from tests.kit.cli import run_kodelet as kodelet

AGENTS = {
    "codex": (".codex/hooks.json", ["UserPromptSubmit", "PreToolUse", "PostToolUse"]),
    "qwen": (".qwen/settings.json", ["PreToolUse", "PostToolUse", "PostToolUseFailure"]),
}


OTHER: dict[str, Any] = {
    "model": {"name": "theirs"},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}],
    },
}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_install_keeps_everything_else_is_idempotent_and_uninstall_restores(
    tmp_path: Path, agent: str
) -> None:
    where, events = AGENTS[agent]
    path = tmp_path / where
    path.parent.mkdir()
    before = json.dumps(OTHER, indent=3) + "\n"
    path.write_text(before)
    proc = kodelet(agent, "install", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(path.read_text())
    assert data["model"] == OTHER["model"]
    assert data["hooks"]["SessionStart"] == OTHER["hooks"]["SessionStart"]
    assert data["hooks"]["PreToolUse"][0] == OTHER["hooks"]["PreToolUse"][0]
    ours = commands(data)
    for event in events:
        assert ours[event] == [f"kodelet-hook claude hook --agent {agent}"], event
    assert path.with_name(path.name + ".bak").read_text() == before
    again = kodelet(agent, "install", cwd=tmp_path)
    assert again.stdout.startswith("unchanged:"), again.stdout
    proc = kodelet(agent, "uninstall", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert path.read_text() == before
    assert not path.with_name(path.name + ".bak").exists()


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path, agent: str) -> None:
    proc = kodelet(agent, "install", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("--- /dev/null")
    assert f'+            "command": "kodelet-hook claude hook --agent {agent}"' in proc.stdout
    assert not (tmp_path / AGENTS[agent][0]).exists()


def test_user_scope_runs_the_lean_client_and_follows_codex_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(elsewhere))
    proc = kodelet("codex", "install", "--scope", "user", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    command = commands(json.loads((elsewhere / "hooks.json").read_text()))["PreToolUse"][0]
    native = native_path()  # the native client where this install built one
    if native is not None:
        assert command == f"{native} claude hook --agent codex --scope user"
    else:
        assert command.startswith(f"{sys.executable} -I -S ")
        assert command.endswith("/kodelet/warm/hook.py claude hook --agent codex --scope user")
    assert not (Path.home() / ".codex").exists()
    proc = kodelet("codex", "uninstall", "--scope", "user", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (elsewhere / "hooks.json").exists()  # the lean client's entries are kodelet's
    assert "hooks.state" not in (elsewhere / "config.toml").read_text()


def test_qwens_hook_settings_are_not_events(tmp_path: Path) -> None:
    path = tmp_path / ".qwen" / "settings.json"
    path.parent.mkdir()
    before = json.dumps({"hooks": {"enabled": True, "disabled": ["x"]}}) + "\n"
    path.write_text(before)
    assert kodelet("qwen", "install", cwd=tmp_path).returncode == 0
    assert json.loads(path.read_text())["hooks"]["disabled"] == ["x"]
    assert kodelet("qwen", "uninstall", cwd=tmp_path).returncode == 0
    assert path.read_text() == before


@pytest.mark.parametrize("bad", ["link", "json"])
def test_a_linked_or_broken_file_is_left_alone(tmp_path: Path, bad: str) -> None:
    path = tmp_path / ".codex" / "hooks.json"
    path.parent.mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    if bad == "link":
        path.symlink_to(target)
    else:
        path.write_text('{"hooks": ')
    proc = kodelet("codex", "install", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("kodelet: error: ") and proc.stderr.count("\n") == 1
    assert ("symbolic link" if bad == "link" else "not valid JSON") in proc.stderr
    assert target.read_text() == "{}"


def test_status_says_where_what_runs_and_that_codex_fails_open(project: Path) -> None:
    (project / ".kodelet" / "hooks" / "guard").write_text("#!/bin/sh\necho before_tool_call\n")
    (project / ".kodelet" / "hooks" / "guard").chmod(0o755)
    assert kodelet("codex", "install", cwd=project).returncode == 0
    data = json.loads(kodelet("codex", "status", "--json", cwd=project).stdout)
    project_scope = next(s for s in data["scopes"] if s["scope"] == "project")
    assert project_scope["events"] == ["UserPromptSubmit", "PreToolUse", "PostToolUse",
                                       "SubagentStop", "Stop"]  # fmt: skip
    assert "Codex lets a call through" in data["fails_open"]
    assert [h["name"] for h in data["hooks"]] == ["guard", "builtin:protect-kodelet"]
    (project / ".kodelet" / "config.toml").write_text("[hooks\n")
    text = kodelet("codex", "status", cwd=project).stdout
    assert "config error (every tool call is blocked until fixed)" in text
    assert "fails open: Codex lets a call through" in text


def test_agents_lists_where_kodelet_is_connected(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "qwen").write_text("#!/bin/sh\n")
    (bindir / "qwen").chmod(0o755)
    assert kodelet("codex", "install", cwd=tmp_path).returncode == 0
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}/usr/bin:/bin")
    data = json.loads(kodelet("agents", "--json", cwd=tmp_path).stdout)
    rows = {r["agent"]: r for r in data["agents"]}
    assert {"claude", "codex", "qwen"} <= set(rows)
    assert rows["qwen"]["binary"] == str(bindir / "qwen")
    assert rows["codex"]["binary"] is None
    connected = {s["scope"] for s in rows["codex"]["scopes"] if s["events"]}
    assert connected == {"project"}
    assert not any(s["events"] for s in rows["qwen"]["scopes"])


def test_codex_trust_is_recorded_for_kodelets_entries_and_taken_back(
    tmp_path: Path, isolated_home: Path
) -> None:
    """Codex runs no unreviewed hook; install records the review of kodelet's own entries
    (the hash Codex 0.169.0 computes, checked end to end in tests/e2e/test_codex.py) and
    uninstall removes exactly those records."""
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    before = (
        '# mine\nmodel = "o3"\n\n[hooks.state."/elsewhere/hooks.json:stop:0:0"]\n'
        'trusted_hash = "sha256:abc"\n'
    )
    config.write_text(before)
    dry = kodelet("codex", "install", "--dry-run", cwd=tmp_path)
    assert f'+[hooks.state."{tmp_path}/.codex/hooks.json:pre_tool_use:0:0"]' in dry.stdout
    assert config.read_text() == before
    proc = kodelet("codex", "install", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = config.read_text()
    assert text.startswith(before)
    assert text.count("trusted_hash") == 6
    status = json.loads(kodelet("codex", "status", "--json", cwd=tmp_path).stdout)
    assert next(s for s in status["scopes"] if s["scope"] == "project")["untrusted"] == []
    assert kodelet("codex", "uninstall", cwd=tmp_path).returncode == 0
    assert config.read_text() == before


def test_a_broken_codex_config_is_named_and_left_alone(tmp_path: Path, isolated_home: Path) -> None:
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("[model\n")
    proc = kodelet("codex", "install", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("kodelet: error: ") and "not valid TOML" in proc.stderr
    assert config.read_text() == "[model\n"


def test_readme_installs_one_guard_into_two_agents(tmp_path: Path, isolated_home: Path) -> None:
    """README's "Inside your agent" commands, pasted after its guardrail: the command each
    agent's file now runs blocks the guardrail's ``rm -rf`` in that agent's own form."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    guard = re.search(r"```bash\n(mkdir -p \.kodelet/hooks\n.*?)```", readme, re.S)
    section = readme.split("\n## Inside your agent\n", 1)[1]
    inside = re.search(r"```bash\n(.*?)```", section, re.S)
    assert guard and inside, "README lost its guardrail or its agents' commands"
    kodelet_cmd = f"{sys.executable} -m kodelet "
    script = (guard.group(1) + inside.group(1)).replace("kodelet ", kodelet_cmd)
    script = script.replace(f"{kodelet_cmd}codex uninstall", "true")  # keep it to check
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for agent, where, tool in [
        ("claude", ".claude/settings.json", "Bash"),
        ("codex", ".codex/hooks.json", "exec_command"),
    ]:
        data = json.loads((tmp_path / where).read_text())
        command = commands(data)["PreToolUse"][0]  # kodelet-hook, on this PATH
        call = {
            "session_id": "s",
            "cwd": str(tmp_path),
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {"command": "rm -rf /"},
            "tool_use_id": "t",
        }
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        proc = subprocess.run(command, shell=True, input=json.dumps(call), cwd=tmp_path,
                              env={**os.environ, "PATH": path}, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        specific = json.loads(proc.stdout)["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny", agent
        assert specific["permissionDecisionReason"] == "no rm -rf here", agent
