"""Persistent executable hooks: one long-running ``<exe> serve`` instead of a process per call.

Spawning a process per event is what makes executable hooks slow: a Python
hook pays tens of milliseconds of interpreter start-up on every tool call. A
hook that answered ``<event> jsonl`` to ``hook`` is instead started once as
``<exe> serve`` and fed one JSON payload per line on stdin, answering one JSON
result per line on stdout (``{}`` for no action).

The failure semantics are those of a per-call hook, call by call: a call that
hangs past its timeout, a server that dies mid-call, an answer that is not
JSON, all fail that one call (and are traced as such); the server is then
killed with its whole process group and started again on next use. A server
that keeps failing is restarted with exponential backoff; calls made while it
backs off fail at once instead of waiting. stderr lines go to the log, and
only its last 4 KiB are kept, as for per-call hooks.

The exchange is synchronous: a server handles one call at a time. Concurrent
calls do not queue behind it: each takes a free server, and another is started
(up to :data:`SERVERS` per hook) when all are busy, so a server that hangs holds
only its own call. The async API runs that same exchange in a worker thread: one
code path, one set of semantics. Cancelling the awaiting task wakes that thread's
selector (a pipe per server), which kills the server's group at once instead of
waiting out the call's timeout.

Servers are stopped by :meth:`PersistentHook.close` (``Runtime.close`` and the
runtime's context manager call it) and, failing that, by a ``weakref.finalize``
per hook, which runs when the hook is garbage collected or at interpreter exit.
The finalizer holds only the server handle, never the hook, so no module-level
registry is needed and a forgotten runtime does not leak processes; it does
nothing in a forked child, whose exit must not kill its parent's servers. A
server's group is also in the runtime's :class:`~.process.ProcessGroups`, when
it has one, so a SIGTERM to the host reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import selectors
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from ..config import MAX_TIMEOUT
from ..errors import HookFailure
from ..kinds import Protocol
from ..process import (
    STDERR_TAIL,
    STDOUT_CAP,
    ProcessGroups,
    kill_group,
    spawn_options,
    starting,
)
from .executable import ExecutableHook, parse_answer
from .interpreter import command, explain

log = logging.getLogger("kodelet.persistent")

PROTOCOL = Protocol.JSONL
STOP_GRACE = 0.5
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0
SERVERS = 4
"""Servers one hook may run at once, for concurrent calls; past it calls wait for one."""
_CHUNK = 65536


def backoff(failures: int) -> float:
    """Delay before the next start after ``failures`` failures in a row.

    The first restart is immediate, so one crash or hang costs only the call it
    happened in; a server that fails again and again is left alone longer."""
    if failures <= 1:
        return 0.0
    return float(min(BACKOFF_FIRST * 2 ** (failures - 2), BACKOFF_MAX))


EMPTY_LINE = "answered with an empty line (expected JSON; {} for no action)"


class _Broken(Exception):
    """The server can no longer be trusted to answer in step; the call fails with this."""


class _Cancel:
    """One async call's cancellation: set from the event loop, seen by the worker thread
    in its selector through the hook's wake pipe, so the exchange stops at once. A
    plain flag: one writer, one reader, and the wake pipe's write orders it."""

    __slots__ = ("cancelled", "slot")

    def __init__(self) -> None:
        self.cancelled = False
        self.slot: _Slot | None = None  # the server's slot the call took

    def set(self) -> None:
        self.cancelled = True

    def is_set(self) -> bool:
        return self.cancelled


class _Server:
    """One running ``<exe> serve`` process and the bytes read from it so far.

    stderr is read in the same selector loop as stdout, in chunks, never by a
    thread: a server whose escaped child holds stderr open cannot pin a thread,
    and one printing without newlines costs the last STDERR_TAIL bytes, no more.
    Lines are logged as they are read, during calls (between calls they wait in
    the pipe; a server that fills it waits until the next call drains it)."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        cwd: str | None,
        env: Mapping[str, str],
        groups: ProcessGroups | None = None,
        wake: int = -1,
    ) -> None:
        self.name = name
        self.cwd = cwd
        with starting(groups):
            self.proc = subprocess.Popen(argv, close_fds=True, bufsize=0, **spawn_options(cwd, env))
            if groups is not None:
                groups.add(self.proc.pid)
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._groups = groups
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._err = self.proc.stderr.fileno()
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._buf = bytearray()
        # stdout, stderr and the hook's wake pipe stay registered for the server's life;
        # stdin only while a payload is too big for the pipe to take at once.
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._err, selectors.EVENT_READ)
        self._sel.register(self._out, selectors.EVENT_READ)
        self._wake = wake
        if wake >= 0:
            self._sel.register(wake, selectors.EVENT_READ)
        self._tail = bytearray()  # the last STDERR_TAIL bytes, for failure notes
        self._line = bytearray()  # a stderr line not finished yet, for the log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _drain_stderr(self) -> None:
        """Read what stderr holds now, without waiting; log whole lines."""
        while True:
            try:
                chunk = os.read(self._err, _CHUNK)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                with contextlib.suppress(KeyError, ValueError):
                    self._sel.unregister(self._err)
                self._log_line(bytes(self._line))
                self._line.clear()
                return
            self._tail += chunk
            del self._tail[:-STDERR_TAIL]
            self._line += chunk
            *lines, rest = self._line.split(b"\n")
            for line in lines:
                self._log_line(line)
            self._line[:] = rest[-STDERR_TAIL:]
            if len(rest) > STDERR_TAIL:
                self._log_line(bytes(self._line) + b"...")
                self._line.clear()

    def _log_line(self, raw: bytes | bytearray) -> None:
        line = raw.decode("utf-8", "replace").rstrip()
        if line:
            log.info("hook %s: %s", self.name, line)

    def stderr_note(self) -> str:
        self._drain_stderr()
        tail = self._tail.decode("utf-8", "replace").strip()
        lines = [ln for ln in tail.splitlines() if ln.strip()]
        return f": {' | '.join(lines[-3:])[-300:]}" if lines else ""

    def _stray_output(self) -> bool:
        """Whether the server printed something between calls (it is then out of step)."""
        if self._buf:
            return True
        try:
            chunk = os.read(self._out, _CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            return True
        self._buf += chunk
        return True  # data, or EOF: either way the next answer cannot be trusted

    def exchange(self, line: bytes, timeout: float, cancel: _Cancel | None = None) -> bytes:
        """Send one payload line and return the one answer line (without its newline)."""
        deadline = time.monotonic() + min(timeout, MAX_TIMEOUT)
        if self._stray_output():
            raise _Broken(self._why_stray())
        view = self._write(memoryview(line))
        sel = self._sel
        if view:
            sel.register(self._in, selectors.EVENT_WRITE)
        wake = self._wake
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Broken(f"timed out after {timeout:g}s")
                if cancel is not None and cancel.is_set():
                    raise _Broken("cancelled")
                events = sel.select(remaining)
                if len(events) > 1:  # stderr first: a line printed before the answer is logged
                    events.sort(key=lambda e: e[0].fd != self._err)
                for key, _ in events:
                    fd = key.fd
                    if fd == self._err:
                        self._drain_stderr()
                    elif fd == wake:
                        with contextlib.suppress(OSError):
                            os.read(wake, 512)
                    elif fd == self._in:
                        view = self._write(view)
                        if not view:
                            sel.unregister(self._in)
                    else:
                        answer = self._read_answer(deadline, writing=bool(view))
                        if answer is not None:
                            return answer
        finally:
            if view:
                with contextlib.suppress(KeyError, ValueError):
                    sel.unregister(self._in)

    def _write(self, view: memoryview) -> memoryview:
        """Write what the pipe takes now; what is left to write."""
        try:
            n = os.write(self._in, view[:_CHUNK])
        except BlockingIOError:
            return view
        except OSError:  # the server is gone: its exit says why, when stdout closes
            return view[:0]
        return view[n:]

    def _read_answer(self, deadline: float, *, writing: bool) -> bytes | None:
        """Read what stdout holds; the answer line once it is whole."""
        try:
            chunk = os.read(self._out, _CHUNK)
        except BlockingIOError:
            return None
        if not chunk:
            raise _Broken(self._why_gone(deadline))
        self._buf += chunk
        end = self._buf.find(b"\n")
        if end >= 0:
            answer = bytes(self._buf[:end])
            del self._buf[: end + 1]
            if writing:
                raise _Broken("answered before reading the whole payload")
            return answer
        if len(self._buf) > STDOUT_CAP:
            raise _Broken(f"output exceeded {STDOUT_CAP} bytes")
        return None

    def leftover(self) -> str | None:
        """What the server printed after its answer line, if anything (it is then out of step)."""
        if not self._buf.strip():
            self._buf.clear()
            return None
        return bytes(self._buf[:80]).decode("utf-8", "replace")

    def _why_stray(self) -> str:
        if not self._buf:
            return self._why_gone(time.monotonic() + 0.5)
        snippet = bytes(self._buf[:80]).decode("utf-8", "replace")
        return f"printed output between calls: {snippet!r}"

    def _why_gone(self, deadline: float) -> str:
        """The server closed its stdout: describe its exit as a per-call failure would."""
        try:
            code = self.proc.wait(timeout=max(0.05, min(STOP_GRACE, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            return "closed its output without answering"
        note = self.stderr_note()
        if code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = str(-code)
            return f"killed by signal {sig}" + note
        if code:
            return f"exited with status {code}" + note
        return "exited without answering" + note

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Close stdin (a well-behaved server exits on EOF), then kill the whole group."""
        proc = self.proc
        if proc.returncode is None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            if grace > 0:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=grace)
        kill_group(proc.pid)
        with contextlib.suppress(ChildProcessError):
            proc.wait()
        if self._groups is not None:
            self._groups.discard(proc.pid)
        self._drain_stderr()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._sel.close()


class _Slot:
    """One of the hook's servers and its wake pipe, shared with the finalizer (which must
    not hold the hook). Only the process that started a server stops it: a forked
    child exiting must not kill its parent's server."""

    def __init__(self) -> None:
        self.server: _Server | None = None
        self.busy = False  # a call holds it (changed under the hook's condition)
        self.owner = os.getpid()
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)

    def stop(self, grace: float = STOP_GRACE) -> None:
        server, self.server = self.server, None
        if server is not None and os.getpid() == self.owner:
            server.stop(grace)

    def close(self, grace: float = STOP_GRACE) -> None:
        self.stop(grace)
        for fd in (self.wake_r, self.wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.wake_r = self.wake_w = -1

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.wake_w, b"x")


def _close_all(slots: list[_Slot], grace: float) -> None:
    for slot in list(slots):
        slot.close(grace)


class PersistentHook(ExecutableHook):
    """An executable hook served by one long-running process (see the module docstring)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)  # ExecutableHook's parameters
        self._free = threading.Condition()
        self._slots = [_Slot()]
        self._failures = 0
        self._retry_at = 0.0
        self._closed = False
        self._finalizer = weakref.finalize(self, _close_all, self._slots, STOP_GRACE)
        self.starts = 0

    @property
    def pid(self) -> int | None:
        """The first server's process id, if it is running."""
        server = self._slots[0].server
        return server.pid if server is not None else None

    def _take(self, cancel: _Cancel | None, wait: bool = True) -> _Slot | None:
        """A server's slot no call holds, a new one when all are busy and there may be
        more; else, with ``wait``, the first to come free (None without)."""
        with self._free:
            while True:
                slot = next((s for s in self._slots if not s.busy), None)
                if slot is None and len(self._slots) < SERVERS:
                    slot = _Slot()
                    self._slots.append(slot)
                if slot is not None:
                    slot.busy = True
                    return slot
                if not wait:
                    return None
                if cancel is not None and cancel.is_set():
                    raise HookFailure("cancelled")
                self._free.wait(0.05 if cancel is not None else None)

    def _give_back(self, slot: _Slot) -> None:
        with self._free:
            slot.busy = False
            self._free.notify_all()

    def _server(self, slot: _Slot, cwd: str | None) -> _Server:
        server = slot.server
        if server is not None and server.cwd != cwd:
            slot.stop()  # a payload from another directory: same start-up as per-call
            server = None
        if server is not None and not server.alive():
            note = server.stderr_note()
            slot.stop(0.0)
            server = None
            self._failed(f"server exited between calls{note}")
        if server is not None:
            return server
        wait = self._retry_at - time.monotonic()
        if wait > 0:
            raise HookFailure(
                f"server failed {self._failures} times in a row; next restart in {wait:.1f}s"
            )
        try:
            argv = command(self.file, "serve")
            server = _Server(self.name, argv, cwd, self._env, self.groups, slot.wake_r)
        except OSError as exc:
            self._failed(str(exc))
            raise HookFailure(f"cannot run {self.path}: {exc.strerror or exc}") from None
        self.starts += 1
        slot.server = server
        return server

    def prestart(self, cwd: str) -> None:
        """Start a server for calls made in ``cwd`` unless one runs or calls hold them
        all. A server that fails to start here counts for nothing: the first call starts
        it again, and fails as that call's own failure."""
        slot = self._take(None, wait=False)
        if slot is None:
            return
        try:
            if not self._closed:
                self._server(slot, cwd)
        except HookFailure:
            self._failures, self._retry_at = 0, 0.0
        finally:
            self._give_back(slot)

    def _failed(self, why: str) -> None:
        self._failures += 1
        self._retry_at = time.monotonic() + backoff(self._failures)
        log.warning("hook %s: server stopped: %s", self.name, why)

    def run(self, payload: Mapping[str, Any], *, timeout: float) -> Any:
        """Send the payload to the server; the parsed JSON answer, or None for ``{}``."""
        return self._call(self._encode(payload) + b"\n", self._cwd(payload), timeout, None)

    def _call(self, line: bytes, cwd: str | None, timeout: float, cancel: _Cancel | None) -> Any:
        slot = self._take(cancel)
        assert slot is not None
        if cancel is not None:
            cancel.slot = slot
        try:
            if self._closed:
                raise HookFailure("hook is closed")
            if cancel is not None and cancel.is_set():
                raise HookFailure("cancelled")
            server = self._server(slot, cwd)
            try:
                answer = server.exchange(line, timeout, cancel)
            except _Broken as exc:
                slot.stop(0.0)
                self._failed(str(exc))
                raise HookFailure(explain(str(exc), self.file)) from None
            except BaseException:
                slot.stop(0.0)  # interrupted mid-exchange: it is out of step
                raise
            try:
                result = parse_answer(answer, empty=EMPTY_LINE)
                extra = server.leftover()
                if extra is not None:
                    raise HookFailure(f"answered with more than one line: {extra!r}")
            except HookFailure as exc:
                slot.stop(0.0)  # whatever it printed, it is no longer in step
                self._failed(str(exc))
                raise
            self._failures = 0
            return result
        finally:
            self._give_back(slot)

    async def arun(self, payload: Mapping[str, Any], *, timeout: float) -> Any:
        """The same exchange in a worker thread. Cancelling the awaiting task wakes the
        thread's selector: the server's group is killed and reaped, and the thread has
        finished, before ``CancelledError`` propagates."""
        line = self._encode(payload) + b"\n"
        cancel = _Cancel()
        loop = asyncio.get_running_loop()
        call = functools.partial(self._call, line, self._cwd(payload), timeout, cancel)
        future = loop.run_in_executor(None, call)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.set()
            if cancel.slot is not None:
                cancel.slot.wake()
            while not future.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({future})
            if not future.cancelled():
                future.exception()  # the call's own failure is moot: the task was cancelled
            raise

    def close(self) -> None:
        """Stop the servers once no call holds them; later calls fail instead of starting
        a new one."""
        self._closed = True
        with self._free:
            while any(s.busy for s in self._slots):
                self._free.wait()
        self._finalizer()

    def __repr__(self) -> str:
        return f"<PersistentHook {self.name} ({self.event.value}) {self.path}>"
