"""Every test runs with HOME, KODELET_HOME and KODELET_MANAGED_DIR in temp dirs: the real
~/.kodelet and /etc/kodelet are never touched. Warm kodelets are off unless a test turns
them on, and any a test started (in its own runtime directory) is stopped when it ends:
nothing is left running, and the session fails, naming them, if a test left any process
of its own behind."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.kit")

from tests.kit import processes  # noqa: E402  (after the rewrite is registered)

# The installs tests' wheel house, built once per session for all their modules.
pytest_plugins = ["tests.kit.installs"]

# How long processes of the run still exiting at the session's end (a warm kodelet told
# to stop, a killed hook's session) may take before they count as left behind.
SETTLE = 30.0


def pytest_configure(config: pytest.Config) -> None:
    """Mark every process this run starts: each inherits the marker, whoever its parent
    ends up being. A nested run gets its own."""
    os.environ[processes.RUN_MARKER] = uuid.uuid4().hex


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a test left a process of its own running, naming each one, and
    kill them all: nothing of a test run outlives it."""
    run = os.environ.get(processes.RUN_MARKER)
    if not run:
        return
    if processes.wait_for(lambda: not processes.strays(run), SETTLE):
        return
    left = processes.kill_strays(run)
    if not left:  # gone between the two looks
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"{len(left)} process(es) left running by the tests (killed now):"]
    lines += [f"  {stray}" for stray in left]
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_sep("=", "processes left behind", red=True)
        for line in lines:
            reporter.write_line(line, red=True)
    else:
        print("\n".join(lines))
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
    # The machine's managed rules (/etc/kodelet) are never read by a test.
    monkeypatch.setenv("KODELET_MANAGED_DIR", str(tmp_path_factory.mktemp("managed")))
    return home


@pytest.fixture(autouse=True)
def warm_dir(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Iterator[Path]:
    """A runtime directory of the test's own for warm kodelets (short: a socket path
    must fit in 108 bytes), and every warm kodelet in it stopped afterwards: the HTTP
    transport's records go first, as an uninstall removes them, or a warm kodelet
    holding their ports would restart rather than stop."""
    top = Path(tempfile.mkdtemp(prefix="kw", dir="/tmp"))
    directory = top / "run"
    monkeypatch.setenv("KODELET_DAEMON_DIR", str(directory))
    yield directory
    from kodelet.warm import control

    for home in {os.environ.get("KODELET_HOME") or "", str(isolated_home / ".kodelet")} - {""}:
        shutil.rmtree(Path(home) / "warm" / "http", ignore_errors=True)
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
