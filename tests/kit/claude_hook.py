"""``kodelet claude hook`` as Claude Code runs it: a real process fed a hook input shaped
like Claude Code's, a guard hook that records what it saw, and the JSON answer read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "BROKEN_PRE",
    "POST",
    "PRE",
    "PROMPT",
    "STOP",
    "answered",
    "claude_input",
    "hook",
    "seen",
]

PRE = """#!/bin/bash
[ "$1" = hook ] && { echo before_tool_call; exit 0; }
payload=$(cat)
printf '%s' "$payload" > .kodelet/seen-before_tool_call.json
case "$payload" in
  *'rm -rf'*) echo '{"blocked": true, "reason": "rm -rf is not allowed"}' ;;
  *'sudo '*) echo '{"input": {"command": "echo no sudo here"}}' ;;
  *'"file_write"'*) echo '{"input": {"file_path": "/tmp/x", "text": "safe"}}' ;;
  *'git push'*) echo '{"ask": true, "reason": "pushing needs a yes"}' ;;
  *'curl '*) echo '{"ask": true, "reason": "network", "input": {"command": "curl -sS x"}}' ;;
esac
"""

POST = """#!/bin/bash
[ "$1" = hook ] && { echo after_tool_call; exit 0; }
payload=$(cat)
printf '%s' "$payload" > .kodelet/seen-after_tool_call.json
case "$payload" in
  *SECRET*) echo '{"output": {"toolName": "bash", "success": true, "error": "redacted"}}' ;;
esac
"""

PROMPT = """#!/bin/bash
[ "$1" = hook ] && { echo user_message_send; exit 0; }
payload=$(cat)
printf '%s' "$payload" > .kodelet/seen-user_message_send.json
case "$payload" in
  *password*) echo '{"blocked": true, "reason": "no passwords in prompts"}' ;;
esac
"""

STOP = """#!/bin/bash
[ "$1" = hook ] && { echo agent_stop; exit 0; }
payload=$(cat)
printf '%s' "$payload" > .kodelet/seen-agent_stop.json
echo '{"follow_up_messages": ["run the tests", "then commit"]}'
"""

BROKEN_PRE = """#!/bin/bash
[ "$1" = hook ] && { echo before_tool_call; exit 0; }
echo "guard crashed" >&2
exit 3
"""


def hook(
    data: Any, *args: str, cwd: Path | None = None, raw: str | None = None
) -> subprocess.CompletedProcess[str]:
    text = raw if raw is not None else json.dumps(data)
    return subprocess.run(
        [sys.executable, "-m", "kodelet", "claude", "hook", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def claude_input(project: Path, event: str, **fields: Any) -> dict[str, Any]:
    """A hook input as Claude Code writes it: the common fields, then the event's own."""
    return {
        "session_id": "a1b2c3d4-session",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def answered(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def seen(project: Path, event: str) -> Any:
    return json.loads((project / ".kodelet" / f"seen-{event}.json").read_text())
