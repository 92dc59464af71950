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
backs off fail at once instead of waiting. stderr lines go to the log.

The exchange is synchronous, guarded by one lock per hook so concurrent
dispatches take turns. The async API runs that same exchange in a worker
thread (``asyncio.to_thread``): one code path, one set of semantics, and the
per-call timeout still bounds the thread if the awaiting task is cancelled.

Servers are stopped by :meth:`PersistentHook.close` (``Runtime.close`` and the
runtime's context manager call it) and, failing that, by a ``weakref.finalize``
per hook, which runs when the hook is garbage collected or at interpreter exit.
The finalizer holds only the server handle, never the hook, so no module-level
registry is needed and a forgotten runtime does not leak processes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import selectors
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import HookFailure
from ..events import Event
from ..kinds import Protocol
from .executable import ExecutableHook, parse_answer
from .process import STDOUT_CAP, kill_group

log = logging.getLogger("kodelet.persistent")

PROTOCOL = Protocol.JSONL
STOP_GRACE = 0.5
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0
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


class _Server:
    """One running ``<exe> serve`` process and the bytes read from it so far."""

    def __init__(self, name: str, argv: list[str], cwd: str | None, env: Mapping[str, str]) -> None:
        self.name = name
        self.cwd = cwd
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
            bufsize=0,
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._buf = bytearray()
        self._sel = selectors.DefaultSelector()
        self._tail: collections.deque[str] = collections.deque(maxlen=20)
        self._pump = threading.Thread(
            target=self._read_stderr, name=f"kodelet-stderr-{name}", daemon=True
        )
        self._pump.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip()
                if line:
                    self._tail.append(line)
                    log.info("hook %s: %s", self.name, line)

    def stderr_note(self) -> str:
        self._pump.join(0.2)
        lines = list(self._tail)
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

    def exchange(self, line: bytes, timeout: float) -> bytes:
        """Send one payload line and return the one answer line (without its newline)."""
        deadline = time.monotonic() + timeout
        if self._stray_output():
            raise _Broken(self._why_stray())
        view = memoryview(line)
        sel = self._sel
        sel.register(self._out, selectors.EVENT_READ)
        sel.register(self._in, selectors.EVENT_WRITE)
        writing = True
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Broken(f"timed out after {timeout:g}s")
                for key, _ in sel.select(remaining):
                    if key.fd == self._in:
                        try:
                            n = os.write(self._in, view[:_CHUNK])
                        except BlockingIOError:
                            continue
                        except OSError:  # the server is gone: its exit says why
                            n, view = 0, view[:0]
                        view = view[n:]
                        if not view and writing:
                            sel.unregister(self._in)
                            writing = False
                        continue
                    try:
                        chunk = os.read(self._out, _CHUNK)
                    except BlockingIOError:
                        continue
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
        finally:
            for fd in (self._out, self._in):
                with contextlib.suppress(KeyError, ValueError):
                    sel.unregister(fd)

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
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._pump.join(0.5)
        with contextlib.suppress(OSError):
            if proc.stderr is not None:
                proc.stderr.close()
        self._sel.close()


class _Slot:
    """The hook's current server, shared with the finalizer (which must not hold the hook)."""

    def __init__(self) -> None:
        self.server: _Server | None = None

    def stop(self, grace: float = STOP_GRACE) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.stop(grace)


class PersistentHook(ExecutableHook):
    """An executable hook served by one long-running process (see the module docstring)."""

    def __init__(
        self,
        name: str,
        path: Path,
        event: Event,
        *,
        plugin_root: Path | None = None,
        default_cwd: str = "",
        env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            name, path, event, plugin_root=plugin_root, default_cwd=default_cwd, env=env
        )
        self._lock = threading.Lock()
        self._slot = _Slot()
        self._failures = 0
        self._retry_at = 0.0
        self._closed = False
        self._finalizer = weakref.finalize(self, self._slot.stop, STOP_GRACE)
        self.starts = 0

    @property
    def pid(self) -> int | None:
        """The running server's process id, if one is running."""
        server = self._slot.server
        return server.pid if server is not None else None

    def _server(self, cwd: str | None) -> _Server:
        server = self._slot.server
        if server is not None and server.cwd != cwd:
            self._slot.stop()  # a payload from another directory: same start-up as per-call
            server = None
        if server is not None and not server.alive():
            note = server.stderr_note()
            self._slot.stop(0.0)
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
            server = _Server(self.name, [str(self.path), "serve"], cwd, self._env)
        except OSError as exc:
            self._failed(str(exc))
            raise HookFailure(f"cannot run {self.path}: {exc.strerror or exc}") from None
        self.starts += 1
        self._slot.server = server
        return server

    def _failed(self, why: str) -> None:
        self._failures += 1
        self._retry_at = time.monotonic() + backoff(self._failures)
        log.warning("hook %s: server stopped: %s", self.name, why)

    def run(self, payload: Mapping[str, Any], *, timeout: float) -> Any:
        """Send the payload to the server; the parsed JSON answer, or None for ``{}``."""
        line = self._encode(payload) + b"\n"
        with self._lock:
            if self._closed:
                raise HookFailure("hook is closed")
            server = self._server(self._cwd(payload))
            try:
                answer = server.exchange(line, timeout)
            except _Broken as exc:
                self._slot.stop(0.0)
                self._failed(str(exc))
                raise HookFailure(str(exc)) from None
            try:
                result = parse_answer(answer, empty=EMPTY_LINE)
                extra = server.leftover()
                if extra is not None:
                    raise HookFailure(f"answered with more than one line: {extra!r}")
            except HookFailure as exc:
                self._slot.stop(0.0)  # whatever it printed, it is no longer in step
                self._failed(str(exc))
                raise
            self._failures = 0
            return result

    async def arun(self, payload: Mapping[str, Any], *, timeout: float) -> Any:
        return await asyncio.to_thread(self.run, payload, timeout=timeout)

    def close(self) -> None:
        """Stop the server; later calls fail instead of starting a new one."""
        self._closed = True
        with self._lock:
            self._finalizer()

    def __repr__(self) -> str:
        return f"<PersistentHook {self.name} ({self.event.value}) {self.path}>"
