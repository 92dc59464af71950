"""Fault injection: hooks that misbehave in the ways real programs do. Whatever a hook
does, the host gets control back in bounded time and memory, the failure is that
hook's alone (recorded in the trace, treated as no action), and nothing it started
is left holding the host."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kodelet import load_runtime
from kodelet.events import Event
from kodelet.markers import hookimpl
from kodelet.payloads import BasePayload, UserMessageSendPayload
from kodelet.process import STDOUT_CAP
from kodelet.runtime import Runtime
from kodelet.testing import discovered, write_hook
from kodelet.trace import Dispatch, Outcome

from tests.kit import processes
from tests.kit.processes import alive, wait_for

MiB = 1024 * 1024


def hook(body: str, event: Event = Event.USER_MESSAGE_SEND) -> str:
    return (
        "#!/bin/sh\n"
        f'if [ "$1" = hook ]; then echo {event.value}; exit 0; fi\n'
        "cat >/dev/null\n"
        f"{body}\n"
    )


def msg() -> UserMessageSendPayload:
    return UserMessageSendPayload(message="hello")


def dispatch(rt: Runtime, payload: BasePayload, mode: str) -> Dispatch:
    if mode == "sync":
        return rt.dispatch(payload)

    async def go() -> Dispatch:
        return await rt.adispatch(payload)

    return asyncio.run(go())


def fails_open(project: Path) -> None:
    """``[hooks] fail_closed = false``: for tests of what a failure does to the other
    hooks, which a fail-closed block would stop (tests/test_fail_closed.py has those)."""
    (project / ".kodelet" / "config.toml").write_text("[hooks]\nfail_closed = false\n")


def runtime(project: Path, timeout: float = 5.0, **kw: Any) -> Runtime:
    return load_runtime(cwd=project, entry_points=False, timeout=timeout, **kw)


# -- /proc helpers ----------------------------------------------------------------


def still_alive(pids: list[int], settle: float = 2.0) -> list[int]:
    wait_for(lambda: not any(alive(p) for p in pids), settle)
    return [p for p in pids if alive(p)]


def live_in_group(pgid: int, settle: float = 2.0) -> list[int]:
    """Live members of a process group, after giving SIGKILLs already sent time to land."""
    wait_for(lambda: not _group(pgid), settle)
    return _group(pgid)


def _group(pgid: int) -> list[int]:
    out = []
    for pid in processes.pids():
        st = processes.stat(pid)
        if st is not None and st.pgid == pgid and st.state not in ("Z", "X"):
            out.append(pid)
    return out


def my_children() -> list[int]:
    me = os.getpid()
    return [p for p in processes.pids() if (st := processes.stat(p)) is not None and st.ppid == me]


def read_pids(path: Path, count: int, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists():
            pids = [int(x) for x in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.01)
    raise AssertionError(f"hook did not write {count} pids to {path}")


def kill_quietly(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def rss_kib(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    before = set(my_children())
    yield
    left = [p for p in my_children() if p not in before and alive(p)]
    assert left == [], f"child processes left behind: {left}"


# -- signals ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("body", "signame"),
    [
        ("kill -TERM $$", "SIGTERM"),
        ("kill -KILL $$", "SIGKILL"),
        ("kill -SEGV $$", "SIGSEGV"),
        ("echo '{\"blocked\": true}'; kill -ABRT $$", "SIGABRT"),
    ],
)
def test_hook_killed_by_a_signal(project: Path, mode: str, body: str, signame: str) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "a-dies", hook(body))
    write_hook(hooks, "b-fine", hook("echo '{}'"))
    fails_open(project)
    with runtime(project) as rt:
        d = dispatch(rt, msg(), mode)
    assert d.result.blocked is False, "a half-printed answer from a killed hook is not used"
    assert [(r.name, r.outcome, r.error) for r in d.trace] == [
        ("a-dies", Outcome.ERROR, f"killed by signal {signame}"),
        ("b-fine", Outcome.NO_ACTION, None),
    ]


def test_hook_killed_from_outside_while_running(project: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    write_hook(project / ".kodelet" / "hooks", "victim", hook(f"echo $$ > '{pidfile}'; sleep 30"))

    async def go() -> Dispatch:
        with runtime(project) as rt:
            task = asyncio.ensure_future(rt.adispatch(msg()))
            while not pidfile.exists() or not pidfile.read_text().strip():
                await asyncio.sleep(0.01)
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
            return await task

    d = asyncio.run(go())
    assert d.trace[0].error == "killed by signal SIGKILL"


# -- stdout games -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("body", ["exec >&-; sleep 30", "exec >&- 2>&-; sleep 30"])
def test_hook_closes_stdout_and_keeps_running(
    project: Path, tmp_path: Path, mode: str, body: str
) -> None:
    pidfile = tmp_path / "pid"
    write_hook(project / ".kodelet" / "hooks", "mute", hook(f"echo $$ > '{pidfile}'; {body}"))
    with runtime(project, timeout=0.5) as rt:
        started = time.monotonic()
        d = dispatch(rt, msg(), mode)
        elapsed = time.monotonic() - started
    assert d.trace[0].error == "timed out after 0.5s"
    assert elapsed < 3
    (pid,) = read_pids(pidfile, 1)
    assert still_alive([pid]) == []
    assert live_in_group(pid) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_hook_forking_a_daemon_that_holds_stdout(project: Path, tmp_path: Path, mode: str) -> None:
    pids = tmp_path / "pids"
    body = (
        f"echo $$ >> '{pids}'\n"
        f"sleep 300 & echo $! >> '{pids}'\n"
        'echo \'{"blocked": true, "reason": "nope"}\'\n'
    )
    write_hook(project / ".kodelet" / "hooks", "forker", hook(body))
    with runtime(project, timeout=20) as rt:
        started = time.monotonic()
        d = dispatch(rt, msg(), mode)
        elapsed = time.monotonic() - started
    assert (d.result.blocked, d.result.reason) == (True, "nope")
    assert elapsed < 5, "the host waited for the daemon instead of the hook"
    hook_pid, daemon = read_pids(pids, 2)
    assert still_alive([daemon]) == [], "a child holding the hook's pipes dies with its group"
    assert live_in_group(hook_pid) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_hook_forking_a_daemon_that_leaves_its_session(
    project: Path, tmp_path: Path, mode: str
) -> None:
    pids = tmp_path / "pids"
    body = (
        f"setsid sh -c 'echo $$ >> \"{pids}\"; exec sleep 300' &\n"
        f"while [ ! -s '{pids}' ]; do sleep 0.01; done\n"
        'echo \'{"blocked": true, "reason": "nope"}\'\n'
    )
    write_hook(project / ".kodelet" / "hooks", "escaper", hook(body))
    try:
        with runtime(project, timeout=20) as rt:
            started = time.monotonic()
            d = dispatch(rt, msg(), mode)
            elapsed = time.monotonic() - started
        assert (d.result.blocked, d.result.reason) == (True, "nope")
        assert elapsed < 5, "a daemon out of reach must still not hold the host"
    finally:
        kill_quietly(read_pids(pids, 1))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_fire_and_forget_child_with_its_own_output_is_left_alone(
    project: Path, tmp_path: Path, mode: str
) -> None:
    pids = tmp_path / "pids"
    body = f"sleep 300 >/dev/null 2>&1 </dev/null & echo $! >> '{pids}'\necho '{{}}'"
    write_hook(project / ".kodelet" / "hooks", "notifier", hook(body))
    try:
        with runtime(project) as rt:
            started = time.monotonic()
            d = dispatch(rt, msg(), mode)
            assert time.monotonic() - started < 2
        assert d.trace[0].outcome is Outcome.NO_ACTION
        (child,) = read_pids(pids, 1)
        assert alive(child), "a background notifier that let go of the hook's pipes keeps running"
    finally:
        kill_quietly(read_pids(pids, 1))


# -- memory ------------------------------------------------------------------------


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_hook_printing_a_gigabyte(project: Path, mode: str, stream: str) -> None:
    redirect = "" if stream == "stdout" else " >&2"
    write_hook(
        project / ".kodelet" / "hooks",
        "flood",
        hook(f"head -c {1024**3} /dev/zero{redirect}; echo '{{}}'"),
    )
    with runtime(project, timeout=60) as rt:
        dispatch(rt, msg(), mode)  # warm up code paths before measuring
        before = rss_kib()
        peak_reset = _reset_peak()
        started = time.monotonic()
        d = dispatch(rt, msg(), mode)
        elapsed = time.monotonic() - started
        after = rss_kib("VmHWM" if peak_reset else "VmRSS")
    growth_mib = (after - before) / 1024
    assert growth_mib < 50, f"host grew {growth_mib:.1f} MiB"
    if stream == "stdout":
        assert d.trace[0].error == f"output exceeded {STDOUT_CAP} bytes"
        assert elapsed < 10, "the hook was stopped at the cap, not read to the end"
    else:
        assert d.trace[0].outcome is Outcome.NO_ACTION


# -- names, files that change under us ---------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_hook_with_non_utf8_name_and_output(project: Path, tmp_path: Path, mode: str) -> None:
    hooks = project / ".kodelet" / "hooks"
    marker = tmp_path / "ran"
    raw_name = os.fsdecode(b"guard-\xff\xfe")
    write_hook(hooks, raw_name, hook(f"touch '{marker}'; printf '\\377\\376{{}}'"))
    with runtime(project) as rt:
        (found,) = discovered(rt)
        assert found.status == "active"
        assert found.name == "guard-\\xff\\xfe"
        assert os.fsencode(found.path).endswith(b"guard-\xff\xfe")
        d = dispatch(rt, msg(), mode)
    assert marker.exists()
    (rec,) = d.trace
    assert rec.name == "guard-\\xff\\xfe"
    assert rec.error == "output is not UTF-8"
    json.dumps([r.to_json() for r in d.trace], ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("change", ["deleted", "directory", "not-executable"])
def test_hook_changed_between_discovery_and_run(project: Path, mode: str, change: str) -> None:
    hooks = project / ".kodelet" / "hooks"
    path = write_hook(hooks, "a-vanishing", hook("echo '{\"blocked\": true}'"))
    write_hook(hooks, "b-steady", hook("echo '{}'"))
    fails_open(project)
    with runtime(project) as rt:
        assert [e.name for e in rt.hooks(Event.USER_MESSAGE_SEND)] == ["a-vanishing", "b-steady"]
        if change == "not-executable":
            path.chmod(0o644)
        else:
            path.unlink()
            if change == "directory":
                path.mkdir()
        d = dispatch(rt, msg(), mode)
    expected = "No such file or directory" if change == "deleted" else "Permission denied"
    assert d.result.blocked is False
    first, second = d.trace
    assert first.outcome is Outcome.ERROR
    assert first.error == f"cannot run {path}: {expected}"
    assert (second.name, second.outcome) == ("b-steady", Outcome.NO_ACTION)


# -- native impls --------------------------------------------------------------------


class Sleeper:
    def __init__(self, seconds: float, answer: Any = None) -> None:
        self.seconds, self.answer = seconds, answer

    @hookimpl
    def user_message_send(self) -> Any:
        time.sleep(self.seconds)
        return self.answer


class AsyncSleeper(Sleeper):
    @hookimpl
    async def user_message_send(self) -> Any:  # type: ignore[override]
        await asyncio.sleep(self.seconds)
        return self.answer


def natives(project: Path, *plugins: tuple[str, Any], **kw: Any) -> Runtime:
    return load_runtime(
        cwd=project,
        entry_points=False,
        builtins=False,
        executables=False,
        plugins=list(plugins),
        **kw,
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("cls", [Sleeper, AsyncSleeper])
def test_slow_native_is_traced_and_logged(
    project: Path, caplog: pytest.LogCaptureFixture, mode: str, cls: type[Sleeper]
) -> None:
    answer = {"blocked": True, "reason": "too late"}
    with (
        natives(project, ("dawdler", cls(0.3, answer)), slow_after=0.1) as rt,
        caplog.at_level(logging.WARNING, logger="kodelet.runtime"),
    ):
        d = dispatch(rt, msg(), mode)
    (rec,) = d.trace
    assert rec.outcome is Outcome.BLOCKED
    assert rec.detail is not None and rec.detail.startswith("slow: 0.3")
    assert rec.detail.endswith("; too late")
    assert d.result.blocked is True
    assert any("hook dawdler is slow" in r.getMessage() for r in caplog.records)


def test_fast_native_is_not_slow_and_default_threshold(project: Path) -> None:
    with natives(project, ("quick", Sleeper(0.0))) as rt:
        assert rt.slow_after == 1.0
        (rec,) = rt.dispatch(msg()).trace
    assert rec.detail is None


class Odd(BaseException):
    pass


class OddExit(BaseException):
    """Looks like an exit but is not SystemExit."""


def raiser(exc: BaseException) -> Any:
    class Raiser:
        @hookimpl
        def user_message_send(self) -> None:
            raise exc

    return Raiser()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "exc",
    [
        Odd("x"),
        OddExit(),
        GeneratorExit(),
        asyncio.CancelledError(),
        StopIteration(),
        MemoryError(),
    ],
    ids=lambda e: type(e).__name__,
)
def test_native_raising_base_exceptions_is_only_its_failure(
    project: Path, mode: str, exc: BaseException
) -> None:
    after: list[str] = []

    class After:
        @hookimpl
        def user_message_send(self) -> None:
            after.append("ran")

    fails_open(project)
    with natives(project, ("after", After()), ("bad", raiser(exc))) as rt:
        d = dispatch(rt, msg(), mode)
    assert [(r.name, r.outcome) for r in d.trace] == [
        ("bad", Outcome.ERROR),
        ("after", Outcome.NO_ACTION),
    ]
    assert d.trace[0].error is not None
    assert d.trace[0].error.startswith(type(exc).__name__)
    assert after == ["ran"]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "exc", [KeyboardInterrupt(), SystemExit(3)], ids=lambda e: type(e).__name__
)
def test_keyboard_interrupt_and_system_exit_still_propagate(
    project: Path, mode: str, exc: BaseException
) -> None:
    with natives(project, ("bad", raiser(exc))) as rt, pytest.raises(type(exc)):
        dispatch(rt, msg(), mode)


# -- cancellation --------------------------------------------------------------------


def test_cancelled_async_dispatch_leaves_no_processes(project: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    body = (
        f"echo $$ >> '{pids}'\n"
        f"sleep 300 & echo $! >> '{pids}'\n"
        f"sh -c 'sleep 300; :' & echo $! >> '{pids}'\n"
        "sleep 300\n"
    )
    write_hook(project / ".kodelet" / "hooks", "stuck", hook(body))

    async def go() -> None:
        with runtime(project, timeout=120) as rt:
            task = asyncio.ensure_future(rt.adispatch(msg()))
            while len(pids.read_text().split() if pids.exists() else []) < 3:
                await asyncio.sleep(0.01)
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - started < 2

    asyncio.run(go())
    hook_pid, *children = read_pids(pids, 3)
    assert still_alive([hook_pid, *children]) == []
    assert live_in_group(hook_pid) == []


def test_cancelled_async_dispatch_of_an_async_native_propagates(project: Path) -> None:
    class Waiter:
        @hookimpl
        async def user_message_send(self) -> None:
            await asyncio.sleep(300)

    async def go() -> None:
        with natives(project, ("waiter", Waiter())) as rt:
            task = asyncio.ensure_future(rt.adispatch(msg()))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(go())


def test_async_dispatch_under_wait_for_timeout_cleans_up(project: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    write_hook(project / ".kodelet" / "hooks", "stuck", hook(f"echo $$ > '{pidfile}'; sleep 300"))

    async def go() -> None:
        with runtime(project, timeout=120) as rt, pytest.raises(TimeoutError):
            await asyncio.wait_for(rt.adispatch(msg()), 0.5)

    asyncio.run(go())
    (pid,) = read_pids(pidfile, 1)
    assert still_alive([pid]) == []
    assert live_in_group(pid) == []
