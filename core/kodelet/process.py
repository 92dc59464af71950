"""Running one hook process safely, sync and async, with the same guarantees.

Hooks are arbitrary programs. Whatever they do, the host must get control back:
stdin is fed without deadlocking a hook that never reads, stdout is capped,
and on timeout the hook's whole process group is killed, so a ``sleep 600 &``
left behind by a bash hook does not hold the agent hostage.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, Required, TypedDict, Unpack

import attrs

from .config import MAX_TIMEOUT
from .errors import KodeletError

STDOUT_CAP = 1024 * 1024
STDERR_TAIL = 4096
# After the hook itself exits, how long a leftover child may keep its pipes open.
EXIT_GRACE = 0.2
_CHUNK = 65536


@attrs.frozen(kw_only=True)
class ProcessResult:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    overflow: bool = False
    duration: float = 0.0
    stdout_cap: int = STDOUT_CAP

    @classmethod
    def of(
        cls,
        returncode: int | None,
        out: bytearray,
        err: bytearray,
        timed_out: bool,
        overflow: bool,
        start: float,
        stdout_cap: int,
    ) -> ProcessResult:
        """What a run read, sync or asyncio: stdout cut at the cap, time since ``start``."""
        return cls(
            returncode=returncode,
            stdout=bytes(out[:stdout_cap]) if overflow else bytes(out),
            stderr=bytes(err),
            timed_out=timed_out,
            overflow=overflow,
            duration=time.monotonic() - start,
            stdout_cap=stdout_cap,
        )

    def failure(self, timeout: float) -> str | None:
        """Why this run counts as the hook's failure, or None if it succeeded."""
        if self.timed_out:
            return f"timed out after {timeout:g}s"
        if self.overflow:
            return f"output exceeded {self.stdout_cap} bytes"
        if self.returncode is not None and self.returncode < 0:
            try:
                sig = signal.Signals(-self.returncode).name
            except ValueError:
                sig = str(-self.returncode)
            return f"killed by signal {sig}" + self.stderr_note()
        if self.returncode:
            return f"exited with status {self.returncode}" + self.stderr_note()
        return None

    def stderr_note(self) -> str:
        tail = self.stderr.decode("utf-8", "replace").strip()
        if not tail:
            return ""
        lines = tail.splitlines()
        return f": {' | '.join(lines[-3:])[-300:]}"


class SpawnError(KodeletError, OSError):
    """The hook could not be started at all (deleted, not executable, bad cwd)."""


def spawn_options(cwd: str | None, env: Mapping[str, str]) -> dict[str, Any]:
    """How every hook process starts, per call or persistent, sync or asyncio: a pipe
    for each stream, only the environment given, and a session of its own, so that
    :func:`kill_group` reaches everything it started."""
    return {
        "stdin": subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "cwd": cwd,
        "env": dict(env),
        "start_new_session": True,
    }


def kill_group(pid: int) -> None:
    """SIGKILL a hook's whole session: its children die with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class ProcessGroups:
    """The process groups of one runtime's hooks that are alive right now.

    A runtime owns one and hands it to whatever starts hook processes; each
    process is in it from its start until it is reaped. :meth:`kill_all` is what
    a SIGTERM or SIGHUP to the host must do before the host dies (see
    :func:`killing_on_signals`), so no hook, per-call or persistent, is left
    running orphaned. No lock: the sets are changed and copied by single C-level
    operations, and :meth:`kill_all` runs inside a signal handler, where waiting
    on a lock the interrupted code holds would deadlock.

    A hook exists from its fork on but is here only once ``add`` has run; a SIGTERM
    handled in between killed every group but that one and ended the host, leaving
    the new hook orphaned (a loaded machine widens the window enough to see it). So
    each start runs inside :meth:`starting`, the handler asks :meth:`hold` first, and
    a signal that came during a start is sent again when the last start ends."""

    def __init__(self) -> None:
        self._pids: set[int] = set()
        self._owner = os.getpid()
        self._starts: set[object] = set()
        self._held: list[int] = []

    def add(self, pid: int) -> None:
        self._pids.add(pid)

    def discard(self, pid: int) -> None:
        self._pids.discard(pid)

    def __len__(self) -> int:
        return len(self._pids)

    def kill_all(self) -> None:
        """SIGKILL every live group; in a forked child, whose groups these are not, nothing."""
        if os.getpid() != self._owner:
            return
        for pid in list(self._pids):
            kill_group(pid)

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Around starting one hook process and adding it here: a SIGTERM or SIGHUP to
        the host meanwhile is handled once the process is tracked."""
        token = object()
        self._starts.add(token)
        try:
            yield
        finally:
            self._starts.discard(token)
            while self._held and not self._starts:
                with contextlib.suppress(IndexError):
                    os.kill(os.getpid(), self._held.pop())

    def hold(self, signum: int) -> bool:
        """Whether ``signum`` must wait for a start under way (it is then sent again
        when the start ends); never in a forked child, whose starts these are not."""
        if os.getpid() != self._owner:
            return False
        self._held.append(signum)  # first, so a start ending meanwhile sends it again
        if self._starts:
            return True
        with contextlib.suppress(ValueError):
            self._held.remove(signum)
        return False


def starting(groups: ProcessGroups | None) -> contextlib.AbstractContextManager[None]:
    """``groups.starting()``; nothing to hold for a process no one tracks."""
    return contextlib.nullcontext() if groups is None else groups.starting()


HOST_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Killable(Protocol):
    """What :func:`killing_on_signals` kills: a :class:`ProcessGroups`, or a runtime."""

    def kill_all(self) -> None: ...

    def hold(self, signum: int) -> bool:
        """Whether a hook start is under way (:meth:`ProcessGroups.hold`)."""


@contextlib.contextmanager
def killing_on_signals(
    groups: Killable, signals: Sequence[signal.Signals] = HOST_SIGNALS
) -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP kill every hook group in ``groups`` first, then
    do what they did before (the previous handler, or the default: the host dies).

    A signal handler is process-wide state, and this is the one place kodelet
    installs one; nothing else could work, since the default action of these
    signals ends the process without running any Python code (no ``finally``, no
    finalizer), and hooks run in sessions of their own, out of reach of the
    signal sent to the host's group. A signal the host ignores (``nohup``) stays
    ignored. Only the main thread can install handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        if groups.hold(signum):
            return  # a hook is being started: handled again once its group is tracked
        groups.kill_all()
        before = previous.get(signum, signal.SIG_DFL)
        if callable(before):
            before(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for sig in signals:
        old = signal.getsignal(sig)
        if old is signal.SIG_IGN or old is None:
            continue
        previous[sig] = old
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for signum, before in previous.items():
            if signal.getsignal(signum) is handler:
                signal.signal(signum, before)


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """``proc.wait(timeout)``, woken by the exit itself: ``Popen.wait`` with a timeout
    polls with sleeps that grow to 50 ms, which would add milliseconds to every hook."""
    if proc.poll() is not None:
        return
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        proc.wait(timeout=timeout)
        return
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            if not sel.select(timeout):
                raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    proc.wait()


def _spawn_error(argv: Sequence[str], exc: OSError, cwd: str | None) -> SpawnError:
    if cwd is not None and not os.path.isdir(cwd):
        return SpawnError(
            exc.errno, f"cannot run {argv[0]}: working directory {cwd} does not exist"
        )
    return SpawnError(exc.errno, f"cannot run {argv[0]}: {exc.strerror or exc}")


class ProcessOptions(TypedDict, total=False):
    """How one hook process runs, the same for :func:`run_process` and :func:`arun_process`:
    where, with what environment, for how long, how much stdout is kept, and the
    :class:`ProcessGroups` that holds its group while it runs."""

    cwd: Required[str | None]
    env: Required[Mapping[str, str]]
    timeout: Required[float]
    stdout_cap: int
    groups: ProcessGroups | None


def _started(pid: int, groups: ProcessGroups | None) -> tuple[bytearray, bytearray]:
    """A hook process just spawned, sync or asyncio: its group is tracked from now on.
    Returns the buffers its stdout and stderr are read into."""
    if groups is not None:
        groups.add(pid)
    return bytearray(), bytearray()


def run_process(
    argv: Sequence[str], data: bytes, **options: Unpack[ProcessOptions]
) -> ProcessResult:
    """Run one hook process with ``data`` on its stdin."""
    start = time.monotonic()
    cwd, env, groups = options["cwd"], options["env"], options.get("groups")
    timeout, stdout_cap = options["timeout"], options.get("stdout_cap", STDOUT_CAP)
    deadline = start + min(timeout, MAX_TIMEOUT)
    with starting(groups):
        try:
            proc = subprocess.Popen(list(argv), close_fds=True, **spawn_options(cwd, env))
        except OSError as exc:
            raise _spawn_error(argv, exc, cwd) from None
        out, err = _started(proc.pid, groups)
    assert proc.stdin and proc.stdout and proc.stderr
    timed_out = overflow = False
    view = memoryview(data)
    sel = selectors.DefaultSelector()
    try:
        if view:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        exited_at: float | None = None
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            wait = deadline - now
            if exited_at is not None:
                wait = min(wait, exited_at + EXIT_GRACE - now)
                if wait <= 0:
                    break  # the hook is done; a leftover child holds its pipes
            for key, _ in sel.select(min(wait, 0.05) if exited_at is None else wait):
                fobj = key.fileobj
                if fobj is proc.stdin:
                    try:
                        n = os.write(proc.stdin.fileno(), view[:_CHUNK])
                    except (BrokenPipeError, ConnectionResetError):
                        n, view = 0, view[:0]
                    except BlockingIOError:
                        continue
                    view = view[n:]
                    if not view:
                        sel.unregister(proc.stdin)
                        with contextlib.suppress(OSError):
                            proc.stdin.close()
                    continue
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    sel.unregister(fobj)
                elif fobj is proc.stdout:
                    out += chunk
                    if len(out) > stdout_cap:
                        overflow = True
                        break
                else:
                    err += chunk
                    del err[:-STDERR_TAIL]
            if overflow:
                break
        if timed_out or overflow or (exited_at is not None and sel.get_map()):
            kill_group(proc.pid)
        remaining = max(0.0, deadline - time.monotonic())
        try:
            if timed_out or overflow:
                proc.wait()
            else:
                _wait_exit(proc, remaining)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc.pid)
            proc.wait()
    except BaseException:
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        sel.close()
        for f in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                f.close()
        if groups is not None:
            groups.discard(proc.pid)
    return ProcessResult.of(proc.returncode, out, err, timed_out, overflow, start, stdout_cap)


@attrs.frozen(kw_only=True)
class Job:
    """One process of a :func:`run_batch`; it gets no input (stdin is ``/dev/null``)."""

    argv: tuple[str, ...]
    cwd: str | None
    env: Mapping[str, str]


class _Running:
    """A batch process in flight and what has been read from it so far."""

    __slots__ = (
        "deadline",
        "done",
        "err",
        "exited_at",
        "index",
        "out",
        "overflow",
        "pidfd",
        "pipes",
        "proc",
        "start",
        "timed_out",
    )

    def __init__(self, index: int, proc: subprocess.Popen[bytes], start: float, timeout: float):
        self.index = index
        self.proc = proc
        self.start = start
        self.deadline = start + timeout
        self.out = bytearray()
        self.err = bytearray()
        self.pipes = 2
        self.pidfd: int | None = None
        self.exited_at: float | None = None
        self.timed_out = False
        self.overflow = False
        self.done = False


def run_batch(
    jobs: Sequence[Job],
    *,
    timeout: float,
    stdout_cap: int = STDOUT_CAP,
    limit: int = 16,
    groups: ProcessGroups | None = None,
) -> list[ProcessResult | SpawnError]:
    """Run many short processes at once from this thread, each as :func:`run_process` would.

    A thread per process costs more CPU than the cheapest processes themselves
    (a bash script answers in about a millisecond), so every process is started
    here and all of them are read in one selector loop. Each keeps its own
    ``timeout`` from its own start, the same stdout cap and exit grace, and has
    its process group killed when it overruns; at most ``limit`` run at once, so
    a thousand jobs never become a thousand processes. Every process is reaped
    before this returns, whatever happens. Results come in the order of ``jobs``.
    """
    timeout = min(timeout, MAX_TIMEOUT)
    results: list[ProcessResult | SpawnError | None] = [None] * len(jobs)
    waiting = collections.deque(range(len(jobs)))
    running: set[_Running] = set()
    sel = selectors.DefaultSelector()
    devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    limit = max(1, limit)

    def close(run: _Running) -> None:
        for fobj in (run.proc.stdout, run.proc.stderr):
            assert fobj is not None
            if not fobj.closed:
                with contextlib.suppress(KeyError, ValueError):
                    sel.unregister(fobj)
                fobj.close()
        if run.pidfd is not None:
            with contextlib.suppress(KeyError, ValueError):
                sel.unregister(run.pidfd)
            os.close(run.pidfd)
            run.pidfd = None

    def finish(run: _Running) -> None:
        if run.timed_out or run.overflow or run.pipes:
            kill_group(run.proc.pid)
        run.proc.wait()
        if groups is not None:
            groups.discard(run.proc.pid)
        close(run)
        run.done = True
        running.discard(run)
        out = run.out
        results[run.index] = ProcessResult(
            returncode=run.proc.returncode,
            stdout=bytes(out[:stdout_cap]) if run.overflow else bytes(out),
            stderr=bytes(run.err),
            timed_out=run.timed_out,
            overflow=run.overflow,
            duration=time.monotonic() - run.start,
            stdout_cap=stdout_cap,
        )

    def spawn(index: int) -> _Running:
        job = jobs[index]
        start = time.monotonic()
        with starting(groups):
            try:
                proc = subprocess.Popen(
                    list(job.argv),
                    stdin=devnull,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=job.cwd,
                    env=job.env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise _spawn_error(job.argv, exc, job.cwd) from None
            if groups is not None:
                groups.add(proc.pid)
        run = _Running(index, proc, start, timeout)
        assert proc.stdout and proc.stderr
        try:
            for fobj, kind in ((proc.stdout, "out"), (proc.stderr, "err")):
                os.set_blocking(fobj.fileno(), False)
                sel.register(fobj, selectors.EVENT_READ, (run, kind))
        except BaseException:
            kill_group(proc.pid)
            proc.wait()
            if groups is not None:
                groups.discard(proc.pid)
            close(run)
            raise
        return run

    def watch_exit(run: _Running) -> None:
        """Its pipes are closed: reap it now, or be woken when it exits (pidfd)."""
        if run.proc.poll() is not None:
            finish(run)
            return
        try:
            pidfd = os.pidfd_open(run.proc.pid)
        except (AttributeError, OSError):
            return  # noticed by polling
        run.pidfd = pidfd
        sel.register(pidfd, selectors.EVENT_READ, (run, "exit"))

    # Exits are noticed when a process's pipes close; one that exits while a
    # leftover child holds them is noticed by polling, as run_process does.
    tick = 0.05
    next_check = 0.0
    try:
        while waiting or running:
            while waiting and len(running) < limit:
                index = waiting.popleft()
                try:
                    running.add(spawn(index))
                except SpawnError as exc:
                    results[index] = exc
            if not running:
                continue
            now = time.monotonic()
            if now >= next_check:
                next_check = now + tick
                for run in list(running):
                    if run.exited_at is None and run.pidfd is None and run.proc.poll() is not None:
                        run.exited_at = now
                    if run.exited_at is not None and not run.pipes:
                        finish(run)
                    elif now >= run.deadline:
                        run.timed_out = True
                        finish(run)
                    elif run.exited_at is not None and now >= run.exited_at + EXIT_GRACE:
                        finish(run)  # the process is done; a leftover child holds its pipes
                    else:
                        next_check = min(next_check, run.deadline)
                        if run.exited_at is not None:
                            next_check = min(next_check, run.exited_at + EXIT_GRACE)
                if not running:
                    continue
            for key, _ in sel.select(max(0.0, next_check - now)):
                run, kind = key.data
                if run.done:
                    continue
                if kind == "exit":
                    run.proc.wait()
                    run.exited_at = time.monotonic()
                    if run.pipes:
                        next_check = min(next_check, run.exited_at + EXIT_GRACE)
                    else:
                        finish(run)
                    continue
                try:
                    chunk = os.read(key.fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    pipe = run.proc.stdout if kind == "out" else run.proc.stderr
                    assert pipe is not None
                    sel.unregister(pipe)
                    pipe.close()
                    run.pipes -= 1
                    if not run.pipes:
                        watch_exit(run)
                elif kind == "out":
                    run.out += chunk
                    if len(run.out) > stdout_cap:
                        run.overflow = True
                        finish(run)
                else:
                    run.err += chunk
                    del run.err[:-STDERR_TAIL]
    except BaseException:
        for run in list(running):
            kill_group(run.proc.pid)
            run.proc.wait()
            if groups is not None:
                groups.discard(run.proc.pid)
            close(run)
        raise
    finally:
        sel.close()
        os.close(devnull)
    done: list[ProcessResult | SpawnError] = []
    for result in results:
        assert result is not None
        done.append(result)
    return done


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Until the hook itself has exited.

    ``Process.wait`` also waits for every pipe to close, so a child the hook left
    behind holding stdout would make a finished hook look hung until the timeout
    (the sync side gives such a hook :data:`EXIT_GRACE`, and so must this one)."""
    waiter = asyncio.ensure_future(proc.wait())
    delay = 0.002
    try:
        while proc.returncode is None and not waiter.done():
            await asyncio.wait({waiter}, timeout=delay)
            delay = min(delay * 2, 0.05)
    finally:
        waiter.cancel()


async def arun_process(
    argv: Sequence[str],
    data: bytes,
    *,
    on_output: Callable[[str, bytes], None] | None = None,
    **options: Unpack[ProcessOptions],
) -> ProcessResult:
    """:func:`run_process` for asyncio; cancelling it kills and reaps the group first.
    ``on_output("stdout" | "stderr", chunk)`` sees each chunk as it is read, for hosts
    that show a hook's progress while it runs."""
    start = time.monotonic()
    cwd, env, groups = options["cwd"], options["env"], options.get("groups")
    timeout, stdout_cap = options["timeout"], options.get("stdout_cap", STDOUT_CAP)
    timeout = min(timeout, MAX_TIMEOUT)
    with starting(groups):
        try:
            proc = await asyncio.create_subprocess_exec(*argv, **spawn_options(cwd, env))
        except OSError as exc:
            raise _spawn_error(argv, exc, cwd) from None
        out, err = _started(proc.pid, groups)
    assert proc.stdin and proc.stdout and proc.stderr
    state = {"overflow": False}

    async def feed() -> None:
        assert proc.stdin
        try:
            if data:
                proc.stdin.write(data)
                await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with contextlib.suppress(Exception):
                proc.stdin.close()

    async def read_out() -> None:
        assert proc.stdout
        while chunk := await proc.stdout.read(_CHUNK):
            out.extend(chunk)
            if on_output is not None:
                on_output("stdout", chunk)
            if len(out) > stdout_cap:
                state["overflow"] = True
                kill_group(proc.pid)
                return

    async def read_err() -> None:
        assert proc.stderr
        while chunk := await proc.stderr.read(_CHUNK):
            err.extend(chunk)
            del err[:-STDERR_TAIL]
            if on_output is not None:
                on_output("stderr", chunk)

    io_tasks = [asyncio.ensure_future(t) for t in (feed(), read_out(), read_err())]
    timed_out = False
    try:
        try:
            await asyncio.wait_for(_exited(proc), timeout)
        except TimeoutError:
            timed_out = True
        if not timed_out:
            remaining = max(0.0, start + timeout - time.monotonic())
            _, pending = await asyncio.wait(io_tasks, timeout=min(EXIT_GRACE, remaining))
            if pending:
                kill_group(proc.pid)
        else:
            kill_group(proc.pid)
    except BaseException:
        kill_group(proc.pid)
        for t in io_tasks:
            t.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.shield(proc.wait())
        raise
    finally:
        for t in io_tasks:
            t.cancel()
        await asyncio.gather(*io_tasks, return_exceptions=True)
        if proc.returncode is None:
            kill_group(proc.pid)
            await proc.wait()
        if groups is not None:
            groups.discard(proc.pid)
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
    overflow = state["overflow"]
    return ProcessResult.of(proc.returncode, out, err, timed_out, overflow, start, stdout_cap)
