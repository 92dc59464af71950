"""Codex's interactive shells: refused at ``exec_command``, since what is typed into one
with ``write_stdin`` reaches no hook (tests/e2e/test_codex.py shows it in the real Codex).

The reader is checked on command lines, the refusal through the real bridge
(``python -m kodelet claude hook --agent codex``) on inputs shaped as Codex 0.169.0
sends them, with a real bash guard in the project.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents.interactive import opens_interactive
from kodelet.testing import write_hook

from tests.kit.cli import bridge

OPENS = [
    "bash",
    "/bin/zsh -l",
    "sh -i",
    "bash -s",
    "bash --norc --noprofile",
    "exec bash",
    "env -i TERM=xterm bash",
    "timeout 600 python3",
    "FOO=$HOME bash",
    "cd sub && bash",
    "echo ready; python3 -i",
    "python3",
    "python3.12 -q",
    "python3 -",
    "python3 -i script.py",
    "python3 -m code",
    "node",
    "node --interactive",
    "deno",
    "irb",
    "$SHELL",
    "$(command -v bash)",
    "cat | bash",
    "bash < /dev/tty",
    "echo $(bash)",
    "bash -c 'exec python3'",
    "script -q /dev/null",
    "sudo -i",
    "su",
    "tmux",
    "ssh example.com",
    "sqlite3 app.db",
    "psql mydb",
    "gdb ./a.out",
    "case $1 in a) bash;; esac",
    "python3 -c 'import pty; pty.spawn(\"/bin/bash\")'",
    "perl -e 'exec \"bash\"'",
    'node -e \'require("child_process").spawn("sh", {stdio: "inherit"})\'',
    "expect -c 'spawn ssh example.com; interact'",
    "script -qc bash /dev/null",
    "su -c bash",
]
PASSES = [
    "ls -la",
    "rm -rf victim",
    "echo bash",
    "bash -lc 'ls'",
    "bash script.sh",
    "sh -c 'make test'",
    "python3 script.py",
    "python3 -c 'print(1)'",
    "python3 -m pytest -q",
    "python3 - <<'EOF'\nprint(1)\nEOF",
    "bash <<< 'ls'",
    "python3 < input.py",
    "node app.js",
    "node -e 'console.log(1)'",
    "deno run main.ts",
    "npm test",
    "git status",
    "script -qc 'ls' /dev/null",
    "su -c 'make install'",
    "grep -rn bash scripts/",
    "tmux new-session -d 'make'",
    "ssh example.com uptime",
    "sqlite3 app.db 'select 1'",
    "psql -c 'select 1' mydb",
    '"$PYTHON" script.py',
    "case $1 in a) ls;; esac",
]


@pytest.mark.parametrize("command", OPENS)
def test_a_command_that_opens_a_shell_or_repl_is_named(command: str) -> None:
    assert opens_interactive(command) is not None


@pytest.mark.parametrize("command", PASSES)
def test_a_command_given_its_code_is_not(command: str) -> None:
    assert opens_interactive(command) is None


def test_a_command_given_as_words_is_read_too() -> None:
    assert opens_interactive(["bash", "-i"]) is not None
    assert opens_interactive(["bash", "-lc", "ls"]) is None


GUARD = """#!/bin/bash
[ "$1" = hook ] && { echo before_tool_call; exit 0; }
cat > .kodelet/seen.json
"""


@pytest.fixture
def guarded(project: Path) -> Path:
    write_hook(project / ".kodelet" / "hooks", "guard", GUARD)
    return project


def shell_call(project: Path, command: str, tool: str = "Bash") -> dict[str, Any]:
    """Codex 0.169.0's PreToolUse for ``exec_command``: the command alone, no ``tty``."""
    return {
        "session_id": "s-1",
        "transcript_path": "",
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": {"command": command},
        "tool_use_id": "call_1",
        "turn_id": "t-1",
        "model": "gpt",
        "permission_mode": "bypassPermissions",
    }


def answered(project: Path, command: str, agent: str = "codex") -> dict[str, Any]:
    proc = bridge(shell_call(project, command), "--agent", agent, cwd=project)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return out.get("hookSpecificOutput", {})


def test_codex_refuses_an_interactive_shell_with_what_to_do_instead(guarded: Path) -> None:
    specific = answered(guarded, "bash")
    assert specific["permissionDecision"] == "deny"
    reason = specific["permissionDecisionReason"]
    assert "write_stdin reaches no hook" in reason
    assert "as its own exec_command call" in reason
    assert not (guarded / ".kodelet" / "seen.json").exists()  # refused before any hook


def test_codex_lets_a_command_given_its_code_through_to_the_hooks(guarded: Path) -> None:
    assert answered(guarded, "python3 -c 'print(1)'") == {}
    seen = json.loads((guarded / ".kodelet" / "seen.json").read_text())
    assert seen["tool_input"] == {"command": "python3 -c 'print(1)'"}


def test_other_agents_are_not_refused_an_interactive_shell(guarded: Path) -> None:
    assert answered(guarded, "bash", agent="claude") == {}


def test_the_project_config_opts_out(guarded: Path) -> None:
    (guarded / ".kodelet" / "config.toml").write_text('[codex]\ninteractive_shells = "allow"\n')
    assert answered(guarded, "bash") == {}
    assert json.loads((guarded / ".kodelet" / "seen.json").read_text())["tool_name"] == "bash"


def test_a_mistyped_opt_out_is_a_config_error_that_blocks(guarded: Path) -> None:
    (guarded / ".kodelet" / "config.toml").write_text('[codex]\ninteractive_shells = "yes"\n')
    specific = answered(guarded, "ls")
    assert specific["permissionDecision"] == "deny"
    assert (
        'codex.interactive_shells: expected "refuse" or "allow"'
        in (specific["permissionDecisionReason"])
    )
