"""``demo-guard``: the demo's native plugin. Made for the demo session, not for real work.

It shows, on the shipped session, what a native plugin can do: refuse a
message, block a call, rewrite a call's input, and keep the agent going with a
follow-up. State lives on the instance, one per runtime, as docs/PLUGINS.md
asks of real plugins.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ...markers import hookimpl
from ...payloads import StructuredToolResult
from ...results import AgentStopResult, BeforeToolCallResult, UserMessageSendResult

AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
EDIT_TOOLS = ("file_edit", "file_write")
TEST_TIMEOUT = "timeout 300"


def _deletes_root(command: str) -> bool:
    """``rm`` with a recursive flag and ``/`` among its arguments (``rm -rf / build/``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words or words[0] != "rm":
        return False
    flags = "".join(w[1:] for w in words[1:] if w.startswith("-") and not w.startswith("--"))
    recursive = "r" in flags.lower() or "--recursive" in words
    return recursive and "/" in words[1:]


def _runs_tests(command: str) -> bool:
    return "pytest" in command.split()


class DemoGuard:
    def __init__(self) -> None:
        self.untested: list[str] = []

    @hookimpl
    def user_message_send(self, message: str) -> UserMessageSendResult | None:
        if AWS_KEY_ID.search(message):
            return UserMessageSendResult(
                blocked=True,
                reason="demo-guard: the message holds an AWS access key; keep keys in .env",
            )
        return None

    @hookimpl
    def before_tool_call(
        self, tool_name: str, tool_input: dict[str, Any]
    ) -> BeforeToolCallResult | None:
        command = tool_input.get("command")
        if tool_name != "bash" or not isinstance(command, str):
            return None
        if _deletes_root(command):
            return BeforeToolCallResult(
                blocked=True, reason="demo-guard: rm -r with / among its arguments"
            )
        if _runs_tests(command) and not command.startswith(TEST_TIMEOUT):
            timed = f"{TEST_TIMEOUT} {command}"
            return BeforeToolCallResult(input={**tool_input, "command": timed})
        return None

    @hookimpl
    def after_tool_call(
        self, tool_name: str, tool_input: dict[str, Any], tool_output: StructuredToolResult
    ) -> None:
        if tool_name in EDIT_TOOLS and tool_output.success:
            path = str(tool_input.get("file_path", "?"))
            if path not in self.untested:
                self.untested.append(path)
        elif tool_name == "bash" and _runs_tests(str(tool_input.get("command", ""))):
            self.untested.clear()

    @hookimpl
    def agent_stop(self, invoked_by: str) -> AgentStopResult | None:
        if invoked_by != "main" or not self.untested:
            return None
        changed = ", ".join(self.untested)
        self.untested.clear()  # once per set of changes: a live agent must not loop
        return AgentStopResult(
            follow_up_messages=[f"You changed {changed} after the last test run: run the tests."]
        )
