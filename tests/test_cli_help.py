"""Help as a user sees it: printed once, and flags shown without a value."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import typer.main
from kodelet.cli.app import app


def kodelet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kodelet", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("group", [[], ["plugins"], ["hooks"], ["config"]])
def test_a_bare_group_prints_its_help_once(group: list[str]) -> None:
    done = kodelet(*group)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Usage:") == 1, done.stdout
    assert done.stdout == kodelet(*group, "--help").stdout
    assert done.stderr == ""


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            paths += _command_paths(sub, (*path, name))
    return paths


def test_no_flag_is_shown_as_taking_a_value() -> None:
    paths = _command_paths(typer.main.get_command(app))
    assert ("hooks", "run") in paths and ("replay",) in paths
    with ThreadPoolExecutor(4) as pool:
        helps = pool.map(lambda path: kodelet(*path, "--help").stdout, paths)
    for path, text in zip(paths, helps, strict=True):
        assert "Usage: " in text, path
        assert "<bool>" not in text, (path, text)
    replay = kodelet("replay", "--help").stdout
    assert re.search(r"^ +--json +Print the report", replay, re.M), replay
