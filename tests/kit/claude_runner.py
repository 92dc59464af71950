"""What the Claude runner tests share: real scripts in temp dirs and Bash inputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kodelet.claude import Runner


def script(directory: Path, name: str, text: str) -> Path:
    """An executable script (its first line is its interpreter)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)
    return path


MakeRunner = Callable[..., Runner]


def bash_input(command: str = "ls", **extra: Any) -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": command}, **extra}
