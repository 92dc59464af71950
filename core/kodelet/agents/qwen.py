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

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .base import Answer, Dialect, settings_json

REPLACED = "kodelet hooks replaced this tool's result with:\n"

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


@attrs.frozen(eq=False)
class QwenDialect(Dialect):
    """What makes Qwen Code skip a project's ``.qwen/settings.json``."""

    def say(self, answer: Answer, data: Mapping[str, Any]) -> dict[str, Any]:
        """A replaced tool output: Qwen Code 0.24.4 reads no ``updatedToolOutput``, and
        its added context goes beside the result; a PostToolUse ``continue: false`` makes
        the call an error whose message is the stop reason, in the result's place. So the
        rewritten text is that reason, and the original never reaches the model."""
        if answer.output is None and not answer.withheld:
            return super().say(answer, data)
        new = answer.output.text() if answer.output is not None else answer.withheld
        out = super().say(attrs.evolve(answer, output=None, withheld=""), data)
        out.update({"continue": False, "stopReason": REPLACED + (new or "(nothing)")})
        return out

    def reads_project(
        self,
        folder: Path,
        env: Mapping[str, str],
        argv: Sequence[str] | None,
        data: Mapping[str, Any],
    ) -> bool:
        """Qwen Code 0.24.4 reads ``.qwen/settings.json`` of the folder it starts in (the
        ``cwd`` it tells hooks as ``QWEN_PROJECT_DIR``), except: in the home folder
        (that file is the user's); with ``--worktree`` (it moves to another folder);
        when folder trust is on in the user's or the system's settings (then only a
        trusted folder's is read); when those settings disable hooks by name. A
        settings file it cannot parse (comments other than whole ``//`` lines) leaves
        kodelet unsure too."""
        if argv is None or any(w == "--worktree" or w.startswith("--worktree=") for w in argv):
            return False
        home = env.get("HOME") or str(Path.home())
        if os.path.realpath(folder) == os.path.realpath(home):
            return False
        system = env.get("QWEN_CODE_SYSTEM_SETTINGS_PATH") or "/etc/qwen-code/settings.json"
        defaults = env.get("QWEN_CODE_SYSTEM_DEFAULTS_PATH") or os.path.join(
            os.path.dirname(system), "system-defaults.json"
        )
        for path in (self.user_path(self.config["user"], env), Path(system), Path(defaults)):
            settings = settings_json(path, self.what)
            if settings is None:
                return False
            security = settings.get("security")
            trust = security.get("folderTrust") if isinstance(security, dict) else None
            if isinstance(trust, dict) and trust.get("enabled") not in (None, False):
                return False
            hooks = settings.get("hooks")
            if isinstance(hooks, dict) and hooks.get("disabled"):
                return False
        return True


QWEN = QwenDialect(
    name="qwen",
    title="Qwen Code",
    binary="qwen",
    package="@qwen-code/qwen-code",
    verified="0.24.4",
    config={"project": ".qwen/settings.json", "user": "~/.qwen/settings.json"},
    events={e: (e if e in _CLAUDE else None) for e in _EVENTS},
    tools={
        "run_shell_command": "Bash",
        "monitor": "Monitor",
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
    home_env="QWEN_HOME",
    # The folder it starts in, whose .qwen/settings.json it read.
    project_env="QWEN_PROJECT_DIR",
    sure_when=(
        "folder trust is off in the user's and system settings and `kodelet` is on its PATH"
    ),
    process_names=("qwen", "cli.js", "cli-entry.js"),
    start_vars=("QWEN_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
    shell_tool="run_shell_command",
    write_tool="write_file",
    cannot_apply=(
        (
            "before_tool_call",
            "a rewrite of the call: Qwen Code never applies one, so kodelet blocks the call"
            " and names the rewritten one for the model to make",
        ),
        (
            "after_tool_call",
            "a rewritten tool output: Qwen Code cannot replace a result, so kodelet stops the"
            " call (continue: false): the model gets the rewrite as the call's error, never"
            " the original",
        ),
        (
            "after_tool_call",
            "a rewritten error of a failed tool call: Qwen Code can neither replace nor withhold"
            " it, so the model gets the original error (a redaction does not hold there)",
        ),
        ("before_tool_call", "added context: Qwen Code drops it before a tool call"),
    ),
)
