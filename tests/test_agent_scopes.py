"""kodelet installed at two scopes of one agent runs every hook once per event.

Each test installs with the real ``python -m kodelet AGENT install`` and then does what
the agent does for one event: it runs every command its hook files hold for that event
through ``/bin/sh -c``, with the environment the agent gives hooks. A recording hook
counts how many times kodelet's hooks ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet.testing import write_hook

from tests.kit.cli import run_kodelet as kodelet

RECORD = """#!/bin/sh
[ "$1" = hook ] && { echo before_tool_call; exit 0; }
cat >> "$(dirname "$0")/../ran.log"; echo >> "$(dirname "$0")/../ran.log"
case "$(tail -n 2 "$(dirname "$0")/../ran.log")" in
  *'rm -rf'*) echo '{"blocked": true, "reason": "no rm -rf"}' ;;
esac
"""


@pytest.fixture
def guarded(project: Path) -> Path:
    write_hook(project / ".kodelet" / "hooks", "record", RECORD)
    return project


def commands(path: Path, event: str) -> list[str]:
    data = json.loads(path.read_text())
    return [h["command"] for g in data["hooks"].get(event, []) for h in g["hooks"]]


def agent_env(project: Path, **extra: str) -> dict[str, str]:
    """What the agent gives its hooks: its project folder, and a PATH where the
    project file's ``kodelet`` is this test's."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"
    env["CLAUDE_PROJECT_DIR"] = str(project)
    env.update(extra)
    return env


def fire(project: Path, files: list[Path], call: dict[str, Any], env: dict[str, str],
         *argv: str) -> list[subprocess.CompletedProcess[str]]:  # fmt: skip
    """Every entry of ``files`` for the call's event, as the agent runs each one;
    ``argv`` is what the agent's own command line holds (``sh -c CMD NAME ARGS``)."""
    done = []
    for path in files:
        for command in commands(path, call["hook_event_name"]):
            done.append(
                subprocess.run(
                    ["/bin/sh", "-c", command, *argv],
                    input=json.dumps(call),
                    cwd=project,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            )
    return done


def kodelet_status(project: Path, agent: str, *args: str) -> Any:
    """``kodelet AGENT status`` where the agent's ``kodelet`` is on PATH."""
    return kodelet(agent, "status", *args, cwd=project, env=agent_env(project))


def runs(project: Path) -> int:
    log = project / ".kodelet" / "ran.log"
    return sum(1 for line in log.read_text().splitlines() if line.strip()) if log.exists() else 0


def pre_tool(project: Path, command: str, tool: str = "Bash") -> dict[str, Any]:
    return {
        "session_id": "s",
        "transcript_path": "",
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": {"command": command},
        "tool_use_id": "t",
    }


def claude_files(project: Path, home: Path) -> list[Path]:
    return [project / ".claude" / "settings.json", home / ".claude" / "settings.json"]


def test_claude_at_project_and_user_scope_runs_each_hook_once(
    guarded: Path, isolated_home: Path
) -> None:
    for scope in ("project", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    done = fire(guarded, claude_files(guarded, isolated_home), pre_tool(guarded, "rm -rf /"),
                agent_env(guarded))  # fmt: skip
    assert len(done) == 2 and all(d.returncode == 0 for d in done), [d.stderr for d in done]
    assert runs(guarded) == 1
    answers = [json.loads(d.stdout) for d in done if d.stdout.strip()]
    assert [a["hookSpecificOutput"]["permissionDecision"] for a in answers] == ["deny"]

    status = kodelet_status(guarded, "claude")
    assert "does the work: yes (one run per event)" in status.stdout
    assert "does the work: no, the project entry does (this one stands down)" in status.stdout
    scopes = {
        s["scope"]: s
        for s in json.loads(kodelet_status(guarded, "claude", "--json").stdout)["scopes"]
    }
    assert (scopes["project"]["works"], scopes["user"]["works"]) == (True, False)


def test_the_user_entry_runs_when_the_project_entry_cannot(
    guarded: Path, isolated_home: Path
) -> None:
    """No ``kodelet`` on the agent's PATH: the project entry fails (and blocks, through
    ``onFailure``); the user entry still guards the call rather than standing down."""
    for scope in ("project", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    env = agent_env(guarded, PATH="/usr/bin:/bin")
    done = fire(guarded, claude_files(guarded, isolated_home), pre_tool(guarded, "rm -rf /"), env)
    assert runs(guarded) == 1
    assert any("no rm -rf" in d.stdout for d in done)
    status = kodelet("claude", "status", cwd=guarded, env={"PATH": "/usr/bin:/bin"}).stdout
    assert "does the work: no, kodelet cannot be sure it runs here, so the user entry does" in (
        status
    )


def test_an_agent_told_to_skip_the_project_settings_keeps_the_user_entry(
    guarded: Path, isolated_home: Path
) -> None:
    """``claude --setting-sources user`` reads no project file: the user entry must not
    stand down for an entry Claude Code never runs."""
    for scope in ("project", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    user = [isolated_home / ".claude" / "settings.json"]
    done = fire(guarded, user, pre_tool(guarded, "rm -rf /"), agent_env(guarded),
                "claude", "--setting-sources", "user")  # fmt: skip
    assert runs(guarded) == 1
    assert "no rm -rf" in done[0].stdout
    stood_down = fire(guarded, user, pre_tool(guarded, "ls"), agent_env(guarded),
                      "claude", "--setting-sources", "user,project")  # fmt: skip
    assert runs(guarded) == 1 and stood_down[0].stdout == ""


def test_a_project_entry_in_another_folder_does_not_stand_the_user_entry_down(
    guarded: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """The project file that counts is the one the agent read (its project folder), not
    one a checkout planted in some folder below."""
    assert kodelet("claude", "install", "--scope", "user", cwd=guarded).returncode == 0
    entry = {"type": "command", "command": "kodelet claude hook", "onFailure": "block"}
    planted = guarded / "vendor" / ".claude" / "settings.json"
    planted.parent.mkdir(parents=True)
    planted.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [entry]}]}}))
    user = [isolated_home / ".claude" / "settings.json"]
    fire(guarded, user, pre_tool(guarded, "ls"), agent_env(guarded))
    assert runs(guarded) == 1


def test_local_and_user_entries_leave_the_work_to_one(guarded: Path, isolated_home: Path) -> None:
    for scope in ("local", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    files = [guarded / ".claude" / "settings.local.json", *claude_files(guarded, isolated_home)[1:]]
    fire(guarded, files, pre_tool(guarded, "ls"), agent_env(guarded))
    assert runs(guarded) == 1


def test_gemini_at_both_scopes_in_a_trusted_folder_runs_once(
    guarded: Path, isolated_home: Path
) -> None:
    for scope in ("project", "user"):
        assert kodelet("gemini", "install", "--scope", scope, cwd=guarded).returncode == 0
    files = [guarded / ".gemini" / "settings.json", isolated_home / ".gemini" / "settings.json"]
    call = {**pre_tool(guarded, "ls", "run_shell_command"), "hook_event_name": "BeforeTool"}
    fire(guarded, files, call, agent_env(guarded, GEMINI_CLI_TRUST_WORKSPACE="true"))
    assert runs(guarded) == 1
    # Without that trust Gemini CLI may not read the project file: both run, as before.
    fire(guarded, files, call, agent_env(guarded))
    assert runs(guarded) == 3


def test_the_warm_kodelet_stands_a_user_entry_down_as_in_process(
    guarded: Path, isolated_home: Path
) -> None:
    from kodelet.warm import control

    (guarded / ".git").mkdir()
    for scope in ("project", "user"):
        assert kodelet("claude", "install", "--scope", scope, cwd=guarded).returncode == 0
    env = {k: v for k, v in agent_env(guarded).items() if k != "KODELET_DAEMON"}
    try:
        for n in range(1, 4):
            fire(guarded, claude_files(guarded, isolated_home), pre_tool(guarded, "ls"), env)
            assert runs(guarded) == n
    finally:
        control.stop_all(env)


@pytest.mark.parametrize("command", ["./kodelet claude hook", "kodelet claude hook"])
def test_a_kodelet_planted_in_the_checkout_never_stands_the_user_entry_down(
    guarded: Path, isolated_home: Path, command: str
) -> None:
    """A cloned repository writes ``.claude/settings.json`` and can ship an executable
    ``kodelet`` that lets everything through: its entry is not this kodelet, so the
    user's entry keeps guarding, even with the project folder on PATH."""
    assert kodelet("claude", "install", "--scope", "user", cwd=guarded).returncode == 0
    fake = guarded / "kodelet"
    fake.write_text("#!/bin/sh\ncat > /dev/null\n")
    fake.chmod(0o755)
    entry = {"type": "command", "command": command, "onFailure": "block"}
    (guarded / ".claude").mkdir()
    planted = guarded / ".claude" / "settings.json"
    planted.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [entry]}]}}))
    env = agent_env(guarded)
    env["PATH"] = f"{guarded}{os.pathsep}{env['PATH']}"
    done = fire(guarded, claude_files(guarded, isolated_home), pre_tool(guarded, "rm -rf /"), env)
    assert runs(guarded) == 1
    assert any("no rm -rf" in d.stdout for d in done)
