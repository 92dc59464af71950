"""Codex (``@openai/codex``): Claude Code's hook wire under Codex's own rules.

Codex reads command hooks from ``.codex/hooks.json`` (or ``[hooks]`` in
``config.toml``), project and user layers alike, sends Claude-shaped input and acts on
Claude-shaped answers, checked against a schema that refuses what it does not support
(the whole answer is then dropped and the call goes ahead). Its shell tool
(``exec_command``) reaches hooks as ``Bash`` already; ``exec_command`` and ``shell`` are
listed for inputs that still carry them. ``apply_patch`` is its file-editing tool and
has no Claude counterpart, so a guard sees it under that name. A hook command that
crashes, is missing or times out lets the call through: Codex offers no setting to fail
closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Dialect


class CodexDialect(Dialect):
    """Codex 0.169.0 refuses, as an invalid answer, ``updatedInput`` without
    ``permissionDecision: "allow"``, a PreToolUse ``ask``, and any replaced tool
    output: each is said the way Codex takes it."""

    def from_claude(
        self, answer: Mapping[str, Any] | None, code: int, data: Mapping[str, Any]
    ) -> tuple[str, int]:
        specific = answer.get("hookSpecificOutput") if answer else None
        if answer is None or not isinstance(specific, dict):
            return super().from_claude(answer, code, data)
        specific = dict(specific)
        decision = specific.get("permissionDecision")
        if decision == "ask":  # nobody to ask: kodelet's ask without an approver blocks
            specific["permissionDecision"] = "deny"
        replaced = [
            specific.pop(k) for k in ("updatedToolOutput", "updatedMCPToolOutput") if k in specific
        ]
        if replaced:
            import json

            from ..claude.mapping import REWRITTEN

            note = REWRITTEN + json.dumps(replaced[0], ensure_ascii=False)
            context = specific.get("additionalContext")
            specific["additionalContext"] = f"{context}\n\n{note}" if context else note
        return super().from_claude({**answer, "hookSpecificOutput": specific}, code, data)


CODEX = CodexDialect(
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
        "Interrupt": None,
    },
    tools={"exec_command": "Bash", "shell": "Bash", "local_shell": "Bash"},
    fails_open=True,
    rewrite_allows=True,
    home_env="CODEX_HOME",
)
