"""A security guardrail as a native kodelet plugin.

Blocks the shell commands the seeds' example guardrail blocks, with the same
reasons, and refuses user messages that carry obvious secrets before they are
sent to a model. Everything it matches is configurable in ``[plugin.guardrail]``.

The entry point names the class, not the module: kodelet makes one instance
per runtime, so what ``configure`` stores never leaks between runtimes (or
between tests, which build their own ``Guardrail()``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kodelet import BeforeToolCallResult, UserMessageSendResult, hookimpl

BLOCKED_COMMANDS = ("rm -rf", "sudo", ":(){:|:&};:")
SHELL_PIPES = ("| bash", "| sh")
SECRETS = {
    "AWS access key id": r"AKIA[0-9A-Z]{16}",
    "private key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
}


def _strings(config: Mapping[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = config.get(key, list(default))
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"[plugin.guardrail] {key}: expected a list of non-empty strings")
    return tuple(value)


def _patterns(config: Mapping[str, Any]) -> dict[str, re.Pattern[str]]:
    value = config.get("secrets", SECRETS)
    if not isinstance(value, Mapping):
        raise ValueError("[plugin.guardrail] secrets: expected a table of name = regex")
    compiled: dict[str, re.Pattern[str]] = {}
    for name, pattern in value.items():
        if not isinstance(pattern, str):
            raise ValueError(f"[plugin.guardrail] secrets.{name}: expected a regex string")
        try:
            compiled[name] = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"[plugin.guardrail] secrets.{name}: bad regex: {exc}") from None
    return compiled


class Guardrail:
    """One guardrail with its settings; the defaults guard before any configure."""

    def __init__(self) -> None:
        self.tools: tuple[str, ...] = ("bash",)
        self.blocked_commands = BLOCKED_COMMANDS
        self.shell_pipes = SHELL_PIPES
        self.secrets = _patterns({})

    @hookimpl
    def configure(self, config: dict[str, Any]) -> None:
        """Apply ``[plugin.guardrail]``. Everything is checked before anything changes,
        so a bad table leaves the previous settings guarding (and shows as this
        plugin's error in ``kodelet plugins list``)."""
        unknown = set(config) - {"tools", "blocked_commands", "shell_pipes", "secrets"}
        if unknown:
            raise ValueError(f"[plugin.guardrail]: unknown key(s): {', '.join(sorted(unknown))}")
        tools = _strings(config, "tools", ("bash",))
        commands = _strings(config, "blocked_commands", BLOCKED_COMMANDS)
        pipes = _strings(config, "shell_pipes", SHELL_PIPES)
        secrets = _patterns(config)
        self.tools, self.blocked_commands, self.shell_pipes = tools, commands, pipes
        self.secrets = secrets

    @hookimpl
    def before_tool_call(
        self, tool_name: str, tool_input: dict[str, Any]
    ) -> BeforeToolCallResult | None:
        command = tool_input.get("command")
        if tool_name not in self.tools or not isinstance(command, str):
            return None
        for blocked in self.blocked_commands:
            if blocked in command:
                return BeforeToolCallResult(
                    blocked=True, reason=f"Security policy: '{blocked}' is not allowed"
                )
        for pipe in self.shell_pipes:
            if pipe in command:
                return BeforeToolCallResult(
                    blocked=True, reason="Security policy: piping to shell is not allowed"
                )
        return None

    @hookimpl
    def user_message_send(self, message: str) -> UserMessageSendResult | None:
        for name, pattern in self.secrets.items():
            if pattern.search(message):
                # The reason names the kind of secret, never the secret itself.
                return UserMessageSendResult(
                    blocked=True, reason=f"Security policy: message contains a secret ({name})"
                )
        return None
