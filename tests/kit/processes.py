"""Processes a test starts, seen through /proc: whether one still runs, waiting on a fact
with a generous bound, killing whole sessions, and finding what a test run left behind.

Every process the suite starts carries ``RUN_MARKER=<this run's id>`` in its environment
(tests/conftest.py sets it before the first test), so what a test left running is found
even after it was orphaned, and nothing outside this run is ever touched."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

# Not KODELET_*: every KODELET_* variable is a setting, and part of a warm kodelet's key.
RUN_MARKER = "PYTEST_KODELET_RUN"

# A host or CLI under test must meet SIGTERM and SIGHUP as an agent sends them; a test
# run under nohup (or any runner that ignores SIGHUP) would hand its children SIG_IGN.
_DEFAULT_SIGNALS = (
    "import os, signal, sys\n"
    "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


class Stat(NamedTuple):
    state: str
    ppid: int
    pgid: int
    sid: int


class Stray(NamedTuple):
    """A process of this run still running: what it is and which test started it."""

    pid: int
    command: str
    test: str

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command}) started by {self.test or 'an unknown test'}"


def stat(pid: int) -> Stat | None:
    raw = _read(pid, "stat")
    if raw is None:
        return None
    fields = raw[raw.rindex(b")") + 2 :].split()
    return Stat(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]))


def alive(pid: int) -> bool:
    """Running: neither gone nor a zombie waiting to be reaped."""
    st = stat(pid)
    return st is not None and st.state not in ("Z", "X")


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0) -> Any:
    """``predicate()``'s value once it came true within ``timeout`` seconds, else False.
    The bound is for a loaded machine: it is what a broken run waits, not what a passing
    one does."""
    deadline = time.monotonic() + timeout
    while True:
        if value := predicate():
            return value
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def with_default_signals(argv: Sequence[str]) -> list[str]:
    """``argv`` run with SIGTERM, SIGHUP and SIGINT at their default action (exec'd in
    place: the pid is the program's), whatever the test run itself ignores."""
    return [sys.executable, "-c", _DEFAULT_SIGNALS, *argv]


def _read(pid: int, name: str) -> bytes | None:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def _variables(pid: int) -> list[bytes]:
    """``pid``'s environment as it started, ``NAME=value`` each (empty if unreadable)."""
    raw = _read(pid, "environ")
    return raw.split(b"\0") if raw else []


def _marked(pid: int, run: str) -> bool:
    """Whether ``pid`` carries the run's marker: one bytes comparison per variable, as the
    session's check makes it for every process on the machine, again until none is left."""
    return bool(run) and f"{RUN_MARKER}={run}".encode() in _variables(pid)


def _current_test(pid: int) -> str:
    for item in _variables(pid):
        name, _, value = item.partition(b"=")
        if name == b"PYTEST_CURRENT_TEST":
            return value.decode("utf-8", "replace")
    return ""


def _command(pid: int) -> str:
    raw = _read(pid, "cmdline")
    if raw is None:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:300] or "?"


def pids() -> list[int]:
    """Every process id on the machine."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def ours(pid: int, run: str | None = None) -> bool:
    """Whether ``pid`` was started by this test run (it carries the run's marker)."""
    return _marked(pid, run if run is not None else os.environ.get(RUN_MARKER, ""))


def strays(run: str) -> list[Stray]:
    """Every process of the run ``run`` still running, except this one: those carrying
    its marker, and this process's descendants (whose environment a test may have set
    from scratch)."""
    me = os.getpid()
    stats = {pid: st for pid in pids() if (st := stat(pid)) is not None}
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        children.setdefault(st.ppid, []).append(pid)
    descendants: set[int] = set()
    todo = list(children.get(me, []))
    while todo:
        pid = todo.pop()
        if pid not in descendants:
            descendants.add(pid)
            todo.extend(children.get(pid, []))
    found = []
    for pid, st in sorted(stats.items()):
        if pid == me or st.state in ("Z", "X"):
            continue
        if pid in descendants or _marked(pid, run):
            found.append(Stray(pid, _command(pid), _current_test(pid)))
    return found


def _kill(pids: Sequence[int], timeout: float) -> None:
    """SIGKILL ``pids`` and wait (up to ``timeout``) until none runs."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout)


def kill_strays(run: str, rounds: int = 20) -> list[Stray]:
    """SIGKILL every process of the run but this one, again until none is left (one may
    fork while its parent dies). Returns the ones found first."""
    first = strays(run)
    left = first
    for _ in range(rounds):
        if not left:
            break
        _kill([s.pid for s in left], 10)
        left = strays(run)
    return first


def kill_sessions(roots: Iterable[int], timeout: float = 60.0) -> bool:
    """SIGKILL everything of this run in the sessions of ``roots`` (a hook and all it
    started, a ``git clone`` with its ssh); never the test run's own session. Returns
    whether all of it was gone within ``timeout``."""
    mine = os.getsid(0)
    sessions = set()
    for pid in roots:
        st = stat(pid)
        if st is not None and st.sid != mine and ours(pid):
            sessions.add(st.sid)

    def members() -> list[int]:
        return [
            pid
            for pid in pids()
            if (st := stat(pid)) is not None
            and st.sid in sessions
            and st.state not in ("Z", "X")
            and ours(pid)
        ]

    for _ in range(20):
        left = members()
        if not left:
            return True
        _kill(left, timeout / 20)
    return not members()
