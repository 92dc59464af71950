"""GitHub Copilot CLI (``@github/copilot``): Claude-shaped hooks under PascalCase names.

Copilot CLI reads hook files from ``.github/hooks/*.json`` (project; loaded only in a
folder the user trusts) and ``$COPILOT_HOME/hooks/`` (user, ``~/.copilot/hooks/``).
Under its own camelCase events (``preToolUse``, ...) it sends ``{toolName, toolArgs}``
without naming the event; under Claude Code's PascalCase names it sends Claude's
snake_case input with Claude's tool names (``Bash``, ``Read``, ``Write``, ``Edit``) but
its own input keys (``path``, ``file_text``, ``old_str``), so kodelet installs
PascalCase entries. It acts on a ``permissionDecision`` (top level or in
``hookSpecificOutput``), ``updatedInput``, ``decision: block`` and top-level
``additionalContext`` and ``modifiedResult``. Any non-zero exit of a ``PreToolUse``
hook, a crash or a missing command included, denies the call; a timeout lets it through.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .base import Answer, Dialect, Ran, settings_json

_FILE = (("path", "file_path"),)


@attrs.frozen(eq=False)
class CopilotDialect(Dialect):
    """Copilot's tool results and its answers' context fields are its own."""

    def to_claude(self, data: Mapping[str, Any]) -> dict[str, Any]:
        out = super().to_claude(data)
        result = out.get("tool_result")
        if out.get("hook_event_name") == "PostToolUse" and isinstance(result, dict):
            out.setdefault("tool_response", result.get("text_result_for_llm"))
        return out

    def say(self, answer: Answer, data: Mapping[str, Any]) -> dict[str, Any]:
        out = super().say(attrs.evolve(answer, context="", output=None, withheld=""), data)
        if answer.context:
            out["additionalContext"] = answer.context
        if answer.output is not None or answer.withheld:
            text = answer.output.text() if answer.output is not None else answer.withheld
            out["modifiedResult"] = {"resultType": "success", "textResultForLlm": text}
        return out

    def outcome(self, ran: Ran, blocks_on_failure: bool = False) -> tuple[str, str]:
        """Any non-zero exit denies the call; a timeout lets it through."""
        if ran.failure.startswith("timed out"):
            return "allowed", f"the hook {ran.failure}; Copilot CLI goes ahead"
        if ran.code != 0:
            return "blocked", f"the hook failed ({ran.why()}); Copilot CLI denies the call"
        return self.read_stdout(ran.stdout)

    def read(self, doc: Mapping[str, Any]) -> tuple[str, str]:
        """A ``permissionDecision`` counts at the top level too."""
        specific = doc.get("hookSpecificOutput")
        specific = dict(specific) if isinstance(specific, dict) else {}
        if specific.get("permissionDecision") is None:
            specific["permissionDecision"] = doc.get("permissionDecision")
            reason = doc.get("permissionDecisionReason")
            specific["permissionDecisionReason"] = reason or specific.get(
                "permissionDecisionReason"
            )
        return super().read({**doc, "hookSpecificOutput": specific})

    def reads_project(
        self,
        folder: Path,
        env: Mapping[str, str],
        argv: Sequence[str] | None,
        data: Mapping[str, Any],
    ) -> bool:
        """Copilot CLI 1.0.102 loads ``.github/hooks`` of ``folder`` (its repository root,
        or the folder it starts in outside one: ``COPILOT_PROJECT_DIR``) only in a folder
        it trusts: ``COPILOT_ALLOW_ALL=true``, or both that folder and the one the
        session runs in (the input's ``cwd``) listed in ``trustedFolders`` of its
        ``config.json`` (``trusted_folders`` until it rewrites the file); and not when
        its ``settings.json`` switches hooks off by name (``disabledHooks``). A file it
        cannot parse leaves kodelet unsure."""
        settings = settings_json(self.user_path("~/.copilot/settings.json", env), self.what)
        if settings is None or settings.get("disabledHooks"):
            return False
        if env.get("COPILOT_ALLOW_ALL") == "true":
            return True
        config = settings_json(self.user_path("~/.copilot/config.json", env), self.what) or {}
        cwd = data.get("cwd")
        lists = [config[k] for k in ("trustedFolders", "trusted_folders") if k in config]
        if not lists or not isinstance(cwd, str):
            return False
        wanted = {os.path.realpath(folder), os.path.realpath(cwd)}
        return all(
            isinstance(listed, list)
            and wanted <= {os.path.realpath(f) for f in listed if isinstance(f, str) and f}
            for listed in lists
        )


COPILOT = CopilotDialect(
    name="copilot",
    title="Copilot CLI",
    binary="copilot",
    package="@github/copilot",
    verified="1.0.102",
    config={"project": ".github/hooks/kodelet.json", "user": "~/.copilot/hooks/kodelet.json"},
    events={
        "PreToolUse": "PreToolUse",
        "PostToolUse": "PostToolUse",
        "PostToolUseFailure": "PostToolUseFailure",
        "UserPromptSubmit": "UserPromptSubmit",
        "Stop": "Stop",
        "SubagentStart": "SubagentStart",
        "SubagentStop": "SubagentStop",
        "SessionStart": "SessionStart",
        "SessionEnd": "SessionEnd",
        "PreCompact": "PreCompact",
        "Notification": "Notification",
        "PermissionRequest": None,
    },
    tools={
        "bash": "Bash",
        "view": "Read",
        "create": "Write",
        "edit": "Edit",
        "grep": "Grep",
        "glob": "Glob",
        "task": "Task",
    },
    keys={
        "Read": _FILE,
        "Write": (*_FILE, ("file_text", "content")),
        "Edit": (*_FILE, ("old_str", "old_string"), ("new_str", "new_string")),
        "view": _FILE,
        "create": (*_FILE, ("file_text", "content")),
        "edit": (*_FILE, ("old_str", "old_string"), ("new_str", "new_string")),
    },
    fails_open=False,
    home_env="COPILOT_HOME",
    # Its repository root (or start folder), whose .github/hooks it read.
    project_env="COPILOT_PROJECT_DIR",
    sure_when=(
        "Copilot CLI trusts the folder (COPILOT_ALLOW_ALL=true, or the folder in"
        " trustedFolders of its config.json) and `kodelet` is on its PATH"
    ),
    # Copilot's transcript is its own event log, not the one kodelet reads for a stop.
    claude_transcript=False,
    exit_1_blocks=True,
    # Its PascalCase entries see Claude Code's tool names (Bash, Write), with its own keys.
    hook_input={"transcript_path": ""},
    notes=(
        "Copilot CLI loads a project's .github/hooks only in a folder you trust"
        " (COPILOT_ALLOW_ALL=true trusts the working directory); --scope user always loads",
        "a hook that times out lets the call through in Copilot CLI",
    ),
)
