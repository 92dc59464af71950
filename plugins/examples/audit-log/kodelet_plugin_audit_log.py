"""An audit logger as a native kodelet plugin: the seeds' bash audit logger, in Python.

Every ``after_tool_call``, ``after_turn`` and ``agent_stop`` becomes one JSON
line in ``<global>/audit.log`` (global = ``$KODELET_HOME``, else ``~/.kodelet``).
An audit log must never take the agent down with it: a full disk or an
unwritable file is logged as a warning and the event goes on.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kodelet import hookimpl
from kodelet.wire import converter

log = logging.getLogger("kodelet_plugin_audit_log")


def default_path() -> Path:
    """Resolved at each write, so a changed ``$KODELET_HOME`` is honoured."""
    home = os.environ.get("KODELET_HOME")
    root = Path(home) if home else Path.home() / ".kodelet"
    return root / "audit.log"


class AuditLog:
    """Where to write: ``[plugin.audit-log] path = "..."``, else the path given to the
    constructor, else ``<global>/audit.log``."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.default = None if path is None else Path(path)
        self.path = self.default

    @hookimpl
    def configure(self, config: dict[str, Any]) -> None:
        path = config.get("path")
        if path is not None and not (isinstance(path, str) and path):
            raise ValueError("[plugin.audit-log] path: expected a file path")
        self.path = Path(path).expanduser() if path else self.default

    def write(self, event: str, fields: dict[str, Any]) -> None:
        """Append one line with a single ``write`` on an ``O_APPEND`` descriptor, so
        lines from concurrent agents never interleave. Never raises."""
        record = {"time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "event": str(event)}
        record.update({k: converter.unstructure(v) for k, v in fields.items() if v is not None})
        if not record.get("recipe_name"):
            record.pop("recipe_name", None)
        path = self.path or default_path()
        try:
            line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
            if self.path is None:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except (OSError, ValueError, TypeError) as exc:
            log.warning("audit log %s: cannot write: %s", path, exc)

    @hookimpl
    def after_tool_call(
        self,
        event: str,
        conv_id: str,
        cwd: str,
        invoked_by: str,
        recipe_name: str,
        tool_name: str,
        tool_input: dict[str, Any],
        tool_output: Any,
        tool_user_id: str,
    ) -> None:
        self.write(
            event,
            {
                "conv_id": conv_id,
                "cwd": cwd,
                "invoked_by": invoked_by,
                "recipe_name": recipe_name,
                "tool_name": tool_name,
                "tool_input": tool_input,
                "tool_output": tool_output,
                "tool_user_id": tool_user_id,
            },
        )

    @hookimpl
    def after_turn(
        self,
        event: str,
        conv_id: str,
        cwd: str,
        invoked_by: str,
        recipe_name: str,
        turn_number: int,
        tools_used: bool,
        usage: Any,
    ) -> None:
        self.write(
            event,
            {
                "conv_id": conv_id,
                "cwd": cwd,
                "invoked_by": invoked_by,
                "recipe_name": recipe_name,
                "turn_number": turn_number,
                "tools_used": tools_used,
                "usage": usage,
            },
        )

    @hookimpl
    def agent_stop(
        self,
        event: str,
        conv_id: str,
        cwd: str,
        invoked_by: str,
        recipe_name: str,
        messages: list[Any],
        usage: Any,
        invoked_recipe: str,
    ) -> None:
        self.write(
            event,
            {
                "conv_id": conv_id,
                "cwd": cwd,
                "invoked_by": invoked_by,
                "recipe_name": recipe_name,
                "message_count": len(messages),
                "usage": usage,
                "invoked_recipe": invoked_recipe or None,
            },
        )
