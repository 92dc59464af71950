"""Qwen Code (``@qwen-code/qwen-code``): Claude Code's hooks under Qwen's tool names.

Qwen Code reads Claude-shaped ``hooks`` from ``.qwen/settings.json`` (project) and
``~/.qwen/settings.json`` (user), sends Claude-shaped input and acts on Claude-shaped
answers; its tools have their own names and keys (``run_shell_command`` takes
``is_background``). As verified with 0.24.4: a PreToolUse hook's ``updatedInput`` is
never applied (only PermissionRequest hooks may rewrite, and ``--yolo`` asks none), so
a rewrite blocks the call and names the rewritten one; a PreToolUse hook's
``additionalContext`` is read and dropped; ``UserPromptSubmit`` also fires with an
empty prompt after each tool round. A hook command that crashes, is missing or times
out lets the call through: Qwen Code offers no setting to fail closed.
"""

from __future__ import annotations

from .base import Dialect

_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "Stop",
    "MessageDisplay",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
    "SessionDelete",
    "PermissionRequest",
    "PermissionDenied",
    "StopFailure",
    "TodoCreated",
    "TodoCompleted",
    "InstructionsLoaded",
)
_CLAUDE = {
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "UserPromptSubmit",
    "SessionStart",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
    "PermissionRequest",
}

QWEN = Dialect(
    name="qwen",
    title="Qwen Code",
    binary="qwen",
    package="@qwen-code/qwen-code",
    verified="0.24.4",
    config={"project": ".qwen/settings.json", "user": "~/.qwen/settings.json"},
    events={e: (e if e in _CLAUDE else None) for e in _EVENTS},
    tools={
        "run_shell_command": "Bash",
        "read_file": "Read",
        "write_file": "Write",
        "edit": "Edit",
        "glob": "Glob",
        "grep_search": "Grep",
        "web_fetch": "WebFetch",
        "todo_write": "TodoWrite",
        "agent": "Agent",
    },
    keys={"run_shell_command": (("is_background", "run_in_background"),)},
    fails_open=True,
    rewrites=False,
    settings_keys=("enabled", "disabled", "notifications"),
    start_vars=("QWEN_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
    shell_tool="run_shell_command",
    write_tool="write_file",
    cannot_apply=(
        (
            "before_tool_call",
            "a rewrite of the call: Qwen Code never applies one, so kodelet blocks the call"
            " and names the rewritten one for the model to make",
        ),
        ("before_tool_call", "added context: Qwen Code drops it before a tool call"),
    ),
)
