"""Claude Code's settings as the tests write them: a settings file of hooks, one command
entry, a script under ``.claude/hooks``, a hook that refuses ``rm -rf`` the way Claude
Code's own hooks do (exit 2), and which of a settings file's hooks are kodelet's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from kodelet.testing import write_hook

NO_RM = """#!/bin/bash
cmd=$(jq -r '.tool_input.command // ""')
case "$cmd" in *"rm -rf"*) echo "no rm -rf here" >&2; exit 2;; esac
exit 0
"""


def settings(path: Path, hooks: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))
    return path


def command(cmd: str, matcher: str | None = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"hooks": [{"type": "command", "command": cmd, **extra}]}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


def script(project: Path, name: str, text: str) -> str:
    return str(write_hook(project / ".claude" / "hooks", name, text))


def project_settings(project: Path) -> Path:
    return project / ".claude" / "settings.json"


def our_commands(data: dict[str, Any]) -> dict[str, list[str]]:
    return {
        event: [h["command"] for g in groups for h in g["hooks"] if "claude hook" in h["command"]]
        for event, groups in data.get("hooks", {}).items()
    }


def pre_tool(project: Path, command: str = "rm -rf /") -> dict[str, Any]:
    """One Claude Code ``PreToolUse`` input for its ``Bash`` tool, as Claude Code sends it."""
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "transcript_path": "",
        "cwd": str(project),
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "toolu_1",
    }


def reason(done: subprocess.CompletedProcess[Any]) -> str | None:
    """The permission reason of a hook command's ``PreToolUse`` answer; None when the call
    may go ahead (no output)."""
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return None
    return str(json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"])
