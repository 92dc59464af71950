"""ADR 025's ``lint_reminder`` hook as a native kodelet plugin.

When the agent is about to stop and the conversation shows file edits, it is
asked to run the linter first. Only the main agent is reminded: a sub-agent's
stop is not the end of the user's task, and reminding it too would make every
delegated edit lint twice.
"""

from __future__ import annotations

from typing import Any

from kodelet import AgentStopResult, Message, hookimpl

MESSAGE = "Please run the linter to check for any issues."
EDIT_TOOLS = ("file_edit", "file_write")


class LintReminder:
    """``[plugin.lint-reminder]``: ``message`` and ``tools`` (the edit tools to look for)."""

    def __init__(self) -> None:
        self.message = MESSAGE
        self.tools = EDIT_TOOLS

    @hookimpl
    def configure(self, config: dict[str, Any]) -> None:
        message = config.get("message", MESSAGE)
        tools = config.get("tools", list(EDIT_TOOLS))
        if not isinstance(message, str) or not message.strip():
            raise ValueError("[plugin.lint-reminder] message: expected a non-empty string")
        if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
            raise ValueError("[plugin.lint-reminder] tools: expected a list of tool names")
        self.message, self.tools = message, tuple(tools)

    @hookimpl
    def agent_stop(self, invoked_by: str, messages: list[Message]) -> AgentStopResult | None:
        if invoked_by != "main":
            return None
        if any(tool in m.content for m in messages for tool in self.tools):
            return AgentStopResult(result="continue", follow_up_messages=[self.message])
        return None
