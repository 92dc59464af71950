"""Codex (``@openai/codex``): Claude Code's hook wire under Codex's own event set.

Codex reads command hooks from ``.codex/hooks.json`` (or ``[hooks]`` in
``config.toml``), project and user layers alike, sends Claude-shaped input and acts on
Claude-shaped answers. Its shell tool reaches hooks as ``Bash`` already (``exec_command``
and ``shell`` are listed for the inputs that still carry them); ``apply_patch`` is its
file-editing tool and has no Claude counterpart, so a guard sees it under that name.
A hook command that crashes, is missing or times out lets the call through: Codex
offers no setting to fail closed.
"""

from __future__ import annotations

from .base import Dialect

CODEX = Dialect(
    name="codex",
    title="Codex",
    binary="codex",
    package="@openai/codex",
    verified="0.169.0",
    config={"project": ".codex/hooks.json", "user": "~/.codex/hooks.json"},
    events={
        "SessionStart": "SessionStart",
        "SessionEnd": "SessionEnd",
        "UserPromptSubmit": "UserPromptSubmit",
        "PreToolUse": "PreToolUse",
        "PermissionRequest": "PermissionRequest",
        "PostToolUse": "PostToolUse",
        "PreCompact": "PreCompact",
        "PostCompact": None,
        "SubagentStart": "SubagentStart",
        "SubagentStop": "SubagentStop",
        "Stop": "Stop",
        "Notification": "Notification",
    },
    tools={"exec_command": "Bash", "shell": "Bash", "local_shell": "Bash"},
    fails_open=True,
)
