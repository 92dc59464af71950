"""`kodelet verify`: real installs (`kodelet AGENT install` in a temp project), real guards,
the installed entries run through /bin/sh as each agent runs them, and the exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kit.hooks import BLOCKER, NOTHING

BIN = str(Path(sys.executable).parent)
TRUST = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
"""Gemini CLI reads a project's file only in a folder it trusts: this shell says so."""


def kodelet(
    *args: str, cwd: Path, path: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``kodelet ARGS`` as the user types it: ``kodelet`` found on PATH (``path``, default
    this venv's bin and the system's), so the installed ``kodelet claude hook`` is too."""
    full = {**os.environ, "PATH": path or f"{BIN}:/usr/bin:/bin", **env}
    return subprocess.run(
        [sys.executable, "-m", "kodelet", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env=full,
    )


def guarded(root: Path, guard: str) -> Path:
    hook = root / ".kodelet" / "hooks" / "guard"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(guard)
    hook.chmod(0o700)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def report(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout.startswith("{"), (proc.stdout, proc.stderr)
    data = json.loads(proc.stdout)
    assert isinstance(data, dict)
    return data


def calls(data: dict[str, Any], agent: str) -> dict[str, dict[str, Any]]:
    row = next(r for r in data["agents"] if r["agent"] == agent)
    return {c["call"]: c for c in row["calls"]}


def test_a_guard_that_blocks_holds_and_verify_says_so(tmp_path: Path) -> None:
    root = guarded(tmp_path / "p", BLOCKER)
    assert kodelet("claude", "install", cwd=root).returncode == 0
    proc = kodelet("verify", "--expect-block", "rm -rf build", "--expect-allow", "ls -la", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "blocked   rm -rf build [expected blocked: ok]" in proc.stdout
    assert "no rm -rf in this project" in proc.stdout
    assert "allowed   ls -la [expected allowed: ok]" in proc.stdout
    assert "ok: every expectation holds" in proc.stdout
    data = report(kodelet("verify", "--json", "--expect-block", "rm -rf build", cwd=root))
    assert data["ok"] is True
    got = calls(data, "claude")
    assert got["rm -rf /"]["outcome"] == "blocked" and got["rm -rf /"]["held"] is None
    assert got["rm -rf build"] == {
        "call": "rm -rf build",
        "tool": "Bash",
        "builtin": False,
        "expect": "block",
        "outcome": "blocked",
        "reason": "no rm -rf in this project",
        "held": True,
    }


def test_a_guard_that_lets_it_through_fails_verify(tmp_path: Path) -> None:
    root = guarded(tmp_path / "p", NOTHING)
    assert kodelet("claude", "install", cwd=root).returncode == 0
    proc = kodelet("verify", "--expect-block", "rm -rf build", cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "allowed   rm -rf build [expected blocked: FAILS]" in proc.stdout
    assert "FAILED: 1 call(s) not as expected" in proc.stdout
    # Built-in calls are reported, never expected: with no expectation it exits 0.
    assert kodelet("verify", cwd=root).returncode == 0
    blocker = guarded(tmp_path / "b", BLOCKER)
    assert kodelet("claude", "install", cwd=blocker).returncode == 0
    proc = kodelet("verify", "--expect-allow", "rm -rf build", cwd=blocker)
    assert proc.returncode == 1
    assert "blocked   rm -rf build [expected allowed: FAILS]" in proc.stdout


def test_no_entry_installed_is_a_failure_with_the_fix(tmp_path: Path) -> None:
    root = guarded(tmp_path / "p", BLOCKER)
    proc = kodelet("verify", "--expect-block", "rm -rf build", cwd=root)
    assert proc.returncode == 1
    assert "NOT HELD: no kodelet entry runs before Claude Code's tool calls" in proc.stdout
    assert "fix: `kodelet claude install`" in proc.stdout
    data = report(kodelet("verify", "--json", "--agent", "gemini", cwd=root))
    assert data["ok"] is False
    assert data["agents"][0]["fix"].startswith("`kodelet gemini install`")
    bad = kodelet("verify", "--agent", "vim", cwd=root)
    assert bad.returncode == 2
    assert "unknown agent" in bad.stderr and "Traceback" not in bad.stderr


def test_an_agent_that_fails_open_is_shown_letting_the_call_through(tmp_path: Path) -> None:
    """``kodelet`` off PATH: Claude Code (its entry's check, exit 2), Gemini CLI (exit 127) and
    Copilot CLI (any non-zero exit) block; Codex and Qwen Code go ahead, and verify says so."""
    root = guarded(tmp_path / "p", BLOCKER)
    for agent in ("claude", "gemini", "codex", "qwen", "copilot"):
        assert kodelet(agent, "install", cwd=root).returncode == 0, agent
    proc = kodelet(
        "verify", "--json", "--expect-block", "rm -rf build", cwd=root, path="/usr/bin:/bin",
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )  # fmt: skip
    assert proc.returncode == 1
    data = report(proc)
    assert {r["agent"] for r in data["agents"]} == {"claude", "gemini", "codex", "qwen", "copilot"}
    outcome = {r["agent"]: calls(data, r["agent"])["rm -rf build"] for r in data["agents"]}
    for agent in ("claude", "gemini", "copilot"):
        assert outcome[agent]["outcome"] == "blocked", (agent, outcome[agent])
        assert outcome[agent]["held"] is True
    for agent, title in (("codex", "Codex"), ("qwen", "Qwen Code")):
        assert outcome[agent]["outcome"] == "allowed", (agent, outcome[agent])
        assert "exited with 127" in outcome[agent]["reason"]
        assert f"{title} goes ahead" in outcome[agent]["reason"]
    # Claude Code's entry checks for kodelet first: blocked with the reason naming the fix.
    assert "not on the PATH Claude Code starts hooks with" in outcome["claude"]["reason"]


def test_each_agent_reads_the_answer_in_its_own_form(tmp_path: Path) -> None:
    """The same guard through each agent's dialect: Gemini CLI's ``decision: deny``,
    Copilot CLI's and Codex's ``permissionDecision``, opencode's plugin ``block``; Codex
    has no file-write tool, so its write call is not put."""
    root = guarded(tmp_path / "p", BLOCKER)
    for agent in ("gemini", "codex", "copilot", "opencode"):
        assert kodelet(agent, "install", cwd=root).returncode == 0, agent
    trusted = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    data = report(
        kodelet("verify", "--json", "--expect-block", "rm -rf build", cwd=root, **trusted)
    )
    assert data["ok"] is True, data
    for row in data["agents"]:
        got = {c["call"]: c for c in row["calls"]}
        assert got["rm -rf build"]["outcome"] == "blocked", row
        assert got["rm -rf build"]["reason"].endswith("no rm -rf in this project"), row
        writes = [c for c in got if c.startswith("Write ")]
        assert len(writes) == (0 if row["agent"] == "codex" else 1), row


def test_the_hook_runs_from_this_folder_with_the_agents_project_variable(
    tmp_path: Path,
) -> None:
    """The guard sees what the agent gives it: the current folder, CLAUDE_PROJECT_DIR
    for Claude Code (a surrounding session's is not lent), GEMINI_PROJECT_DIR for Gemini."""
    spy = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call ;;
  run) cat > /dev/null
       printf '%s|%s|%s\\n' "$PWD" "${CLAUDE_PROJECT_DIR:-none}" "${GEMINI_PROJECT_DIR:-none}" \\
         >> "$SPY_LOG" ;;
esac
"""
    root = guarded(tmp_path / "p", spy)
    log = tmp_path / "spy.log"
    for agent in ("claude", "gemini"):
        assert kodelet(agent, "install", cwd=root).returncode == 0
    elsewhere = str(tmp_path / "other-session")
    for agent in ("claude", "gemini"):
        proc = kodelet(
            "verify", "--agent", agent, cwd=root, SPY_LOG=str(log), CLAUDE_PROJECT_DIR=elsewhere,
            GEMINI_CLI_TRUST_WORKSPACE="true",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = set(log.read_text().splitlines())
    assert seen == {f"{root}|{root}|none", f"{root}|{root}|{root}"}, seen


def test_from_a_subfolder_the_project_entry_of_claude_and_gemini_does_not_hold(
    tmp_path: Path,
) -> None:
    root = guarded(tmp_path / "p", BLOCKER)
    deep = root / "src" / "deep"
    deep.mkdir(parents=True)
    for agent in ("claude", "gemini", "codex"):
        assert kodelet(agent, "install", cwd=root).returncode == 0
    data = report(kodelet("verify", "--json", "--expect-block", "rm -rf build", cwd=deep))
    assert data["ok"] is False
    rows = {r["agent"]: r for r in data["agents"]}
    for agent in ("claude", "gemini"):
        assert "reads only when started in" in rows[agent]["problem"], rows[agent]
        assert rows[agent]["fix"] == f"`kodelet {agent} install --scope user`"
        assert rows[agent]["calls"] == []
    assert rows["codex"]["problem"] is None  # Codex reads the project's file from below


def test_from_a_subfolder_the_user_entry_holds(tmp_path: Path) -> None:
    """Claude Code started in ``src/deep`` calls a user-scope entry with
    ``CLAUDE_PROJECT_DIR=src/deep``: the project is still the one above it."""
    root = guarded(tmp_path / "p", BLOCKER)
    deep = root / "src" / "deep"
    deep.mkdir(parents=True)
    assert kodelet("claude", "install", "--scope", "user", cwd=root).returncode == 0
    proc = kodelet("verify", "--agent", "claude", "--expect-block", "rm -rf build", cwd=deep)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("transport", ["command", "http"])
def test_claude_code_entries_of_either_transport_are_run(tmp_path: Path, transport: str) -> None:
    """A local-scope install: the lean client by absolute path, or (HTTP) a POST to the
    warm kodelet, which this test starts and the fixture stops."""
    root = guarded(tmp_path / "p", BLOCKER)
    args = ["--transport", transport] if transport == "http" else []
    assert kodelet("claude", "install", "--scope", "local", *args, cwd=root).returncode == 0
    env = {"KODELET_DAEMON": "1"} if transport == "http" else {}
    if transport == "http":
        started = kodelet("daemon", "start", cwd=root, **env)
        assert started.returncode == 0, started.stdout + started.stderr
    data = report(kodelet("verify", "--json", "--expect-block", "rm -rf x", cwd=root, **env))
    row = data["agents"][0]
    assert row["entries"][0]["scope"] == "local"
    assert (row["entries"][0]["url"] is not None) == (transport == "http")
    assert calls(data, "claude")["rm -rf x"]["outcome"] == "blocked", data
    assert data["ok"] is True


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_status_and_install_say_a_project_entry_does_not_hold_from_a_subfolder(
    tmp_path: Path, agent: str
) -> None:
    root = guarded(tmp_path / "p", BLOCKER)
    deep = root / "src" / "deep"
    deep.mkdir(parents=True)
    installed = kodelet(agent, "install", cwd=deep, **TRUST)
    assert installed.returncode == 0, installed.stderr
    assert f"only when started in {root}" in installed.stdout
    assert "--scope user holds from every folder" in installed.stdout
    at_root = kodelet(agent, "status", cwd=root, **TRUST)
    assert at_root.returncode == 0, at_root.stdout + at_root.stderr
    assert "NOT HELD" not in at_root.stdout
    below = kodelet(agent, "status", cwd=deep, **TRUST)
    assert below.returncode == 1, below.stdout + below.stderr
    assert "NOT HELD here: kodelet is installed for" in below.stdout
    assert f"`kodelet {agent} install --scope user`" in below.stdout
    data = report(kodelet(agent, "status", "--json", cwd=deep, **TRUST))
    assert "reads only when started in" in data["not_held_here"]
    codex = kodelet("codex", "install", cwd=deep, **TRUST)
    assert "only when started" not in codex.stdout
    assert kodelet("codex", "status", cwd=deep, **TRUST).returncode == 0


def test_status_lists_a_guard_that_will_not_run_and_exits_1(tmp_path: Path) -> None:
    root = guarded(tmp_path / "p", BLOCKER)
    assert kodelet("claude", "install", cwd=root).returncode == 0
    assert kodelet("claude", "status", cwd=root).returncode == 0
    guard = root / ".kodelet" / "hooks" / "guard"
    guard.chmod(0o600)  # a forgotten chmod +x: the guard silently does nothing
    for agent in ("claude", "gemini"):
        proc = kodelet(agent, "status", cwd=root)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "kodelet hooks that will NOT run:" in proc.stdout
        assert "guard: " in proc.stdout and "(a guard that does not hold)" in proc.stdout
        assert f"fix: chmod +x {guard}" in proc.stdout
    data = report(kodelet("claude", "status", "--json", cwd=root))
    assert [(r["name"], r["blocking"], r["fix"]) for r in data["not_running"]] == [
        ("guard", True, f"chmod +x {guard}")
    ]
    # A note kept beside the hooks is no hook, and holds nothing back.
    guard.chmod(0o700)
    (root / ".kodelet" / "hooks" / "README").write_text("our guards\n")
    assert kodelet("claude", "status", cwd=root).returncode == 0


def test_live_without_the_agent_says_what_is_missing(tmp_path: Path) -> None:
    root = guarded(tmp_path / "p", BLOCKER)
    for agent in ("claude", "codex"):
        assert kodelet(agent, "install", cwd=root).returncode == 0
    proc = kodelet("verify", "--live", "--agent", "claude", cwd=root, path=f"{BIN}:/usr/bin:/bin")
    assert proc.returncode == 1
    assert "--live: claude is not on PATH" in proc.stdout
    proc = kodelet("verify", "--live", "--agent", "codex", cwd=root)
    assert proc.returncode == 1
    assert "--live drives claude, gemini only, not codex" in proc.stdout


def test_status_names_answers_the_agent_cannot_apply(tmp_path: Path) -> None:
    root = guarded(tmp_path / "p", BLOCKER)
    after = root / ".kodelet" / "hooks" / "redact"
    after.write_text(BLOCKER.replace("before_tool_call", "after_tool_call"))
    after.chmod(0o700)
    qwen = report(kodelet("qwen", "status", "--json", cwd=root))
    assert [(f["name"], f["answer"].split(":")[0]) for f in qwen["cannot_apply"]] == [
        ("guard", "a rewrite of the call"),
        ("redact", "a rewritten tool output"),
        ("redact", "a rewritten error of a failed tool call"),
        ("guard", "added context"),
    ]
    gemini = kodelet("gemini", "status", cwd=root)
    assert "answers Gemini CLI cannot apply as asked:" in gemini.stdout
    assert "redact: a rewritten tool output: Gemini CLI cannot replace a result" in gemini.stdout
    copilot = report(kodelet("copilot", "status", "--json", cwd=root))
    assert copilot["cannot_apply"] == []


def test_gemini_does_not_read_the_project_file_in_a_folder_it_does_not_trust(
    tmp_path: Path, isolated_home: Path
) -> None:
    root = guarded(tmp_path / "p", BLOCKER)
    assert kodelet("gemini", "install", cwd=root).returncode == 0
    proc = kodelet("verify", "--agent", "gemini", "--json", "--expect-block", "rm -rf x", cwd=root)
    assert proc.returncode == 1
    data = report(proc)
    row = data["agents"][0]
    assert "no kodelet entry runs" in row["problem"]
    assert "Gemini CLI does not trust" in row["entries"][0]["why_not"]
    assert calls(data, "gemini")["rm -rf x"]["outcome"] == "allowed"
    trusted = isolated_home / ".gemini" / "trustedFolders.json"
    trusted.parent.mkdir(parents=True, exist_ok=True)
    trusted.write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    proc = kodelet("verify", "--agent", "gemini", "--expect-block", "rm -rf x", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    trusted.write_text(json.dumps({str(root): "TRUST_FOLDER", str(root / "sub"): "DO_NOT_TRUST"}))
    (root / "sub").mkdir()
    below = kodelet("verify", "--agent", "gemini", "--expect-block", "rm -rf x", cwd=root / "sub")
    assert below.returncode == 1


def test_status_exits_1_when_the_agent_runs_none_of_kodelets_entries(
    tmp_path: Path, isolated_home: Path
) -> None:
    """Gemini CLI in a folder it does not trust, Codex without its trust records: the
    entries are there and will not run."""
    root = guarded(tmp_path / "p", BLOCKER)
    for agent in ("gemini", "codex"):
        assert kodelet(agent, "install", cwd=root).returncode == 0
    gemini = kodelet("gemini", "status", cwd=root)
    assert gemini.returncode == 1, gemini.stdout
    assert "NOT HELD here:" in gemini.stdout and "Gemini CLI does not trust" in gemini.stdout
    assert kodelet("gemini", "status", cwd=root, GEMINI_CLI_TRUST_WORKSPACE="true").returncode == 0
    assert kodelet("codex", "status", cwd=root).returncode == 0
    config = isolated_home / ".codex" / "config.toml"
    config.write_text(config.read_text().split("[hooks")[0])
    codex = report(kodelet("codex", "status", "--json", cwd=root))
    assert "not trusted by Codex" in codex["not_held_here"]
    assert kodelet("codex", "status", cwd=root).returncode == 1


def test_status_tells_a_guard_that_fails_closed_from_one_that_does_not_hold(
    tmp_path: Path,
) -> None:
    """A guard whose interpreter is missing is stood in for (every call it guards is
    blocked): it holds, and status exits 0; one not executable is no hook: exit 1."""
    root = guarded(tmp_path / "p", BLOCKER)
    guard = root / ".kodelet" / "hooks" / "guard"
    guard.write_text("#!/nonexistent/interpreter\n")
    assert kodelet("claude", "install", cwd=root).returncode == 0
    proc = kodelet("claude", "status", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "guard: " in proc.stdout
    assert "(fails closed: every call it guards is blocked until fixed)" in proc.stdout
    (row,) = report(kodelet("claude", "status", "--json", cwd=root))["not_running"]
    assert (row["stand_in"], row["blocking"]) == (True, False)
    guard.chmod(0o600)
    assert kodelet("claude", "status", cwd=root).returncode == 1


def test_an_entry_runs_for_the_tools_its_matcher_names_as_claude_code_reads_it(
    tmp_path: Path,
) -> None:
    """``Write | Bash`` is a list of names to Claude Code (each trimmed), and a regular
    expression is searched in the tool's name: both entries run for ``Bash``."""
    root = guarded(tmp_path / "p", BLOCKER)
    assert kodelet("claude", "install", cwd=root).returncode == 0
    path = root / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    for matcher in ("Write | Bash", "^Ba"):
        for group in data["hooks"]["PreToolUse"]:
            group["matcher"] = matcher
        path.write_text(json.dumps(data))
        proc = kodelet("verify", "--agent", "claude", "--expect-block", "rm -rf build", cwd=root)
        assert proc.returncode == 0, (matcher, proc.stdout + proc.stderr)
        assert "blocked   rm -rf build [expected blocked: ok]" in proc.stdout, matcher
