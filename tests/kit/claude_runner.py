"""What the Claude runner tests share: a runner factory's type and Bash inputs (their
scripts are ``kodelet.testing.write_hook``'s)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kodelet.claude import Runner

MakeRunner = Callable[..., Runner]


def bash_input(command: str = "ls", **extra: Any) -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": command}, **extra}
