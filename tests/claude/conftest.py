"""Helpers for the Claude runner tests: real scripts in temp dirs, runners that get closed."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from kodelet.claude import HookMatcher, Runner


def script(directory: Path, name: str, text: str) -> Path:
    """An executable script (its first line is its interpreter)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)
    return path


MakeRunner = Callable[..., Runner]


@pytest.fixture
def make_runner(tmp_path: Path) -> Iterator[MakeRunner]:
    """Build runners rooted in a temp project; every one is closed after the test."""
    made: list[Runner] = []

    def make(hooks: Mapping[str, Sequence[HookMatcher]], **kwargs: Any) -> Runner:
        kwargs.setdefault("cwd", str(tmp_path))
        kwargs.setdefault("session_id", "sess-1")
        runner = Runner(hooks, **kwargs)
        made.append(runner)
        return runner

    yield make
    for runner in made:
        runner.close()


def bash_input(command: str = "ls", **extra: Any) -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": command}, **extra}
