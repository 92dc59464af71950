"""Every test runs with HOME and KODELET_HOME in temp dirs: the real ~/.kodelet is never
touched. Warm kodelets are off unless a test turns them on, and any a test started (in
its own runtime directory) is stopped when it ends: nothing is left running."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
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
    monkeypatch.setenv("KODELET_DAEMON", "0")
    return home


@pytest.fixture(autouse=True)
def warm_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime directory of the test's own for warm kodelets (short: a socket path
    must fit in 108 bytes), and every warm kodelet in it stopped afterwards."""
    top = Path(tempfile.mkdtemp(prefix="kw", dir="/tmp"))
    directory = top / "run"
    monkeypatch.setenv("KODELET_DAEMON_DIR", str(directory))
    yield directory
    from kodelet.warm import control

    control.stop_all({**os.environ, "KODELET_DAEMON_DIR": str(directory)})
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def kodelet_home(isolated_home: Path) -> Path:
    return Path(os.environ["KODELET_HOME"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with an empty ``.kodelet/hooks``."""
    root = tmp_path / "project"
    (root / ".kodelet" / "hooks").mkdir(parents=True)
    return root
