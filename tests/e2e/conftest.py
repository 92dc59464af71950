"""Fixtures for the end-to-end tests: the real Claude Code, a project, kodelet connected."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e import claude_code


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """Fails (never skips) when the pinned binary cannot be had: e2e must prove something."""
    try:
        return claude_code.install()
    except (claude_code.InstallError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"cannot install Claude Code {claude_code.VERSION}: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def venv_bin() -> Path:
    """The bin directory of the interpreter running the tests, where ``kodelet`` is."""
    bindir = Path(sys.executable).parent
    if not (bindir / "kodelet").is_file():
        pytest.fail(f"kodelet is not installed beside {sys.executable}", pytrace=False)
    return bindir


@pytest.fixture
def cc_project(tmp_path: Path) -> Path:
    """A git repository with an empty ``.kodelet/hooks``."""
    root = tmp_path / "proj"
    (root / ".kodelet" / "hooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root
