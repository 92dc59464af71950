"""The Claude runner tests' fixture: runners rooted in a temp project, closed after."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from kodelet.claude import HookMatcher, Runner

from tests.kit.claude_runner import MakeRunner


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
