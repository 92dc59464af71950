"""Every test runs with HOME and KODELET_HOME in temp dirs: the real ~/.kodelet is never touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KODELET_HOME", str(home / ".kodelet"))
    for var in ("KODELET_NO_HOOKS", "KODELET_HOOK_TIMEOUT", "KODELET_NO_CACHE", "KODELET_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def kodelet_home(isolated_home: Path) -> Path:
    return Path(os.environ["KODELET_HOME"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with an empty ``.kodelet/hooks``."""
    root = tmp_path / "project"
    (root / ".kodelet" / "hooks").mkdir(parents=True)
    return root
