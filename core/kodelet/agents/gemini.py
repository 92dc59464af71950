"""Gemini CLI (``@google/gemini-cli``): command hooks of its own shape.

Gemini CLI reads ``hooks`` from ``.gemini/settings.json`` (project, run only in a
trusted folder) and ``~/.gemini/settings.json`` (user), in Claude Code's nested
``matcher``/``hooks`` layout, under its own events (``BeforeTool``, ``AfterTool``,
``BeforeAgent``, ``AfterAgent``, ...). Its input is Claude-like (``session_id``,
``cwd``, ``tool_name``, ``tool_input``) but its answer is not: a block is a top-level
``{"decision": "deny", "reason": ...}``, a rewrite ``hookSpecificOutput.tool_input``,
added context ``hookSpecificOutput.additionalContext``; Claude's
``permissionDecision`` is ignored. Exit code 1 is a warning that lets the call through,
any other non-zero code blocks with stderr as the reason, so a hook command that is not
found (127) blocks; one that crashes on a signal or times out lets the call through.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .base import NO_OBJECTION, PRE_TOOL, PROMPT, Answer, Dialect, Ran, last_line

REPLACED = "kodelet hooks replaced this tool's result with:\n"


@attrs.frozen(eq=False)
class GeminiDialect(Dialect):
    """Gemini's input is Claude's with other names; its answer is its own."""

    def to_claude(self, data: Mapping[str, Any]) -> dict[str, Any]:
        out = super().to_claude(data)
        event = out.get("hook_event_name")
        if event == "PostToolUse":
            response = out.get("tool_response")
            if isinstance(response, dict):
                error = response.get("error")
                if error:
                    out["hook_event_name"] = "PostToolUseFailure"
                    message = error.get("message") if isinstance(error, dict) else error
                    out["error"] = str(message or "tool failed")
                    out.pop("tool_response", None)
                else:
                    out["tool_response"] = _text(response.get("llmContent"))
        elif event == "Stop" and isinstance(out.get("prompt_response"), str):
            out.setdefault("last_assistant_message", out["prompt_response"])
        return out

    def say(self, answer: Answer, data: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"systemMessage": answer.message} if answer.message else {}
        if answer.event == PRE_TOOL and answer.blocked:
            out.update(decision="deny", reason=answer.reason)
        elif answer.event == PROMPT and answer.blocked:
            out.update(decision="block", reason=answer.reason)
        elif answer.follow_up:
            out.update(decision="block", reason=answer.follow_up)
        extra: dict[str, Any] = {}
        if answer.input is not None:
            extra["tool_input"] = self._input(data.get("tool_name"), answer.input, to_claude=False)
        context = [answer.context] if answer.context else []
        new = answer.output.text() if answer.output is not None else answer.withheld
        if answer.output is not None or answer.withheld:
            # Gemini CLI cannot replace a tool's result, and added context goes beside the
            # original. A blocking AfterTool answer is what keeps the original from the
            # model: Gemini CLI 0.61.0 sends "Tool result blocked: <reason>" in its place,
            # so the reason carries the rewrite (and any context, which it would drop).
            reason = "\n\n".join([REPLACED + (new or "(nothing)"), *context])
            out.update(decision="deny", reason=reason)
            context = []
        if context:
            extra["additionalContext"] = "\n\n".join(context)
        if extra:
            event = data.get("hook_event_name")
            out["hookSpecificOutput"] = {"hookEventName": event, **extra} if event else extra
        return out

    def outcome(self, ran: Ran, blocks_on_failure: bool = False) -> tuple[str, str]:
        """Exit 1 warns and any other non-zero exit blocks with stderr as the reason; a
        hook that crashed or timed out lets the call through."""
        if ran.code is None:
            return "allowed", f"the hook failed ({ran.why()}); Gemini CLI goes ahead"
        if ran.code == 1:
            return "allowed", f"the hook warned ({ran.why()}); Gemini CLI goes ahead"
        if ran.code != 0:
            return "blocked", last_line(ran.stderr) or f"blocked (exit {ran.code})"
        return self.read_stdout(ran.stdout)

    def read(self, doc: Mapping[str, Any]) -> tuple[str, str]:
        if doc.get("continue") is False:
            return "blocked", str(doc.get("stopReason") or "the hook stopped the agent")
        decision = doc.get("decision")
        reason = str(doc.get("reason") or "")
        if decision in ("deny", "block"):
            return "blocked", reason or "denied (no reason given)"
        if decision == "ask":
            return "asks", reason or "asks the user"
        specific = doc.get("hookSpecificOutput")
        rewrite = specific.get("tool_input") if isinstance(specific, dict) else None
        if isinstance(rewrite, dict):
            return "rewritten", f"runs with {json.dumps(rewrite, ensure_ascii=False)} merged in"
        return "allowed", reason or NO_OBJECTION

    def trusts(self, folder: Path, env: Mapping[str, str]) -> bool:
        """Gemini CLI 0.61.0, started in ``folder``, trusts it and so reads the project's
        ``.gemini/settings.json``, hooks included: as its ``checkPathTrust`` decides
        from the environment, the user's ``security.folderTrust.enabled`` and the longest
        matching rule of ``trustedFolders.json`` (no rule: not trusted)."""
        if env.get("GEMINI_RESTRICTED_MODE") == "true":
            return False
        if env.get("GEMINI_CLI_TRUST_WORKSPACE") in ("true", "false"):
            return env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
        home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"
        settings = _json_file(home / "settings.json")
        security = settings.get("security") if isinstance(settings.get("security"), dict) else {}
        trust = security.get("folderTrust") if isinstance(security, dict) else None
        if isinstance(trust, dict) and trust.get("enabled") is False:
            return True
        rules_file = env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or home / "trustedFolders.json"
        where = os.path.realpath(folder)
        best, level = -1, None
        for rule, value in _json_file(Path(rules_file)).items():
            root = os.path.dirname(rule) if value == "TRUST_PARENT" else rule
            root = os.path.realpath(root)
            inside = where == root or where.startswith(root.rstrip(os.sep) + os.sep)
            if inside and len(rule) > best:
                best, level = len(rule), value
        return level in ("TRUST_FOLDER", "TRUST_PARENT")


def _text(content: Any) -> Any:
    """A tool's ``llmContent`` as its text when it is text parts only (Gemini's
    ``[{"text": ...}]``), so that ``metadata.output`` is that text; else unchanged."""
    parts = content if isinstance(content, list) and content else None
    if parts and all(isinstance(p, dict) and set(p) == {"text"} for p in parts):
        return "".join(str(p["text"]) for p in parts)
    return content


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


GEMINI = GeminiDialect(
    name="gemini",
    title="Gemini CLI",
    asks=False,
    binary="gemini",
    package="@google/gemini-cli",
    verified="0.61.0",
    config={"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"},
    events={
        "BeforeTool": "PreToolUse",
        "AfterTool": "PostToolUse",
        "BeforeAgent": "UserPromptSubmit",
        "AfterAgent": "Stop",
        "SessionStart": "SessionStart",
        "SessionEnd": "SessionEnd",
        "PreCompress": "PreCompact",
        "Notification": "Notification",
        "BeforeModel": None,
        "AfterModel": None,
        "BeforeToolSelection": None,
    },
    tools={
        "run_shell_command": "Bash",
        "read_file": "Read",
        "write_file": "Write",
        "replace": "Edit",
        "glob": "Glob",
        "grep_search": "Grep",
        "web_fetch": "WebFetch",
        "google_web_search": "WebSearch",
        "write_todos": "TodoWrite",
        "invoke_agent": "Agent",
    },
    keys={
        "run_shell_command": (("is_background", "run_in_background"),),
        "replace": (("allow_multiple", "replace_all"),),
        "glob": (("dir_path", "path"),),
        "grep_search": (("dir_path", "path"), ("include_pattern", "glob")),
    },
    fails_open=True,
    claude_transcript=False,
    # Gemini CLI sets Claude Code's variable for its hooks too.
    project_env="CLAUDE_PROJECT_DIR",
    project_trust_env="GEMINI_CLI_TRUST_WORKSPACE",
    sure_when="GEMINI_CLI_TRUST_WORKSPACE=true and `kodelet` is on its PATH",
    project_where_started=True,
    start_vars=("GEMINI_PROJECT_DIR", "GEMINI_CWD", "CLAUDE_PROJECT_DIR"),
    shell_tool="run_shell_command",
    write_tool="write_file",
    hook_input={"transcript_path": ""},
    cannot_apply=(
        (
            "after_tool_call",
            "a rewritten tool output: Gemini CLI cannot replace a result, so kodelet"
            ' withholds it (decision deny): the model gets "Tool result blocked:" and the'
            " rewritten text as the reason, never the original",
        ),
        ("before_tool_call", "added context: Gemini CLI takes none before a tool call"),
    ),
    notes=(
        "Gemini CLI reads a project's .gemini/settings.json, hooks included, only in a"
        " trusted folder (trust it in gemini, or GEMINI_CLI_TRUST_WORKSPACE=true);"
        " --scope user always loads",
    ),
)
