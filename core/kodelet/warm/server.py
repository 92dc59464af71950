"""The warm kodelet: one process per project and user, answering hook calls from a
runtime it keeps loaded (``python -m kodelet.warm.server --project DIR``).

It answers exactly as the in-process bridge does: the same
:func:`kodelet.agents.bridge.answer`, handed a runtime that is already loaded
instead of one loaded per call. Before each call it compares the
:mod:`.fingerprint` of what defines that runtime and reloads on any change.

Only its user reaches it: the socket is 0600 in a 0700 directory this user owns
(one planted by someone else is refused), and each connection's peer credentials
are checked. One runs per project (a lock held for its lifetime); it exits after
``KODELET_DAEMON_IDLE`` seconds without a call (default 1800), when its project
directory is gone, or when its own code was replaced on disk; its hook processes
are killed when it exits. Calls are served concurrently: a hook that hangs holds
only its own call, until its timeout. A call runs only once its client confirmed,
after the acknowledgement, that it still waits (:func:`.protocol.call`): a client
that gave up on a stopped or overloaded warm kodelet answered the call itself, and
the warm kodelet never runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import json
import logging
import os
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from . import protocol
from .fingerprint import RACY, Fingerprint, files, fingerprint, written_since
from .modules import forget, loaded, own_tops

__all__ = ["Server", "main"]

log = logging.getLogger("kodelet.warm")

IDLE = 1800.0
TICK = 1.0
KEPT = 8
SESSIONS = 4096
"""HTTP sessions whose project is remembered, the least recently seen forgotten first."""
PATIENCE = 60.0
"""Seconds a connection may take to send its request and its GO: a client stopped
midway holds one thread that long, never the warm kodelet."""
"""Runtimes kept per transcript (Claude hooks of plugin repositories see theirs)."""


class Lent:
    """A runtime and the calls using it; closed when retired and no call holds it."""

    def __init__(self, runtime: Any, slot: str, sees_transcript: bool) -> None:
        self.runtime = runtime
        self.slot = slot
        self.sees_transcript = sees_transcript
        self.users = 0
        self.retired = False


class Server:
    def __init__(self, project: Path, env: Mapping[str, str], idle: float = IDLE) -> None:
        self.project = project
        self.env = dict(env)
        self.idle = idle
        self.name = protocol.key(str(project), self.env)
        self.directory = Path(protocol.runtime_dir(self.env))
        self.socket_path = self.directory / f"{self.name}.sock"
        self.identity = protocol.identity()
        self.started = time.time()
        self.last_call = time.monotonic()
        self.calls = 0
        self.reloads = 0
        self.loads = 0
        self.last_reload: float | None = None
        self.active = 0
        self.abandoned = 0
        self._lock = threading.Lock()
        self._runtimes: dict[str, Lent] = {}
        self._fingerprint: Fingerprint | None = None
        self._modules = Fingerprint()
        self._tops: set[str] = set()
        self._own: set[str] = set()
        self._scanned = 0
        """When ``sys.modules`` was last looked at for the plugins' modules (ns)."""
        self._sessions: dict[str, str] = {}
        self._stop = threading.Event()
        self.warmed = threading.Event()
        """Set once the start's warm-up (:meth:`warm_up`) is over, done or failed."""
        self._own_code = os.stat(protocol.__file__).st_mtime_ns
        self.http_states: dict[str, str] = {}
        """Per record scope (local, user): its URL once answered, else why not."""
        self._httpds: dict[str, Any] = {}
        self._http_open = True
        self._http_lock = threading.Lock()
        from ..places import Places

        self.places = Places.resolve(project, None, self.env)

    # -- runtimes -------------------------------------------------------------------

    def _check(self) -> None:
        """Reload when anything that defines the runtime changed since the last check;
        the native plugins' modules are forgotten, so the reload imports them anew.

        A plugin's module imported since the last check (while a runtime loaded, or
        at a call) was read from disk after that check: it is watched from now on,
        unless its file changed since then, when what was read is not known."""
        now = fingerprint(self.places, self.env, self._fingerprint)
        with self._lock:
            since, self._scanned = self._scanned - int(RACY * 1e9), time.time_ns()
            new = {n: f for n, f in loaded(self._tops).items() if n not in self._own}
            self._own |= new.keys()
            code = sorted({f for f in new.values() if f} - set(self._modules.paths()))
            modules = files(self._modules.paths())
            if self._fingerprint is None:
                self._fingerprint = now
                return
            changed = (
                self._fingerprint.changed(now)
                or self._modules.changed(modules)
                or written_since(code, since)
            )
            if changed is None:
                self._fingerprint, self._modules = now, modules + files(code)
                return
            log.info("reloading: %s changed", changed)
            for lent in self._runtimes.values():
                self._retire(lent)
            self._runtimes.clear()
            forget(self._own)
            self._tops, self._own = set(), set()
            self._fingerprint = now
            self._modules = Fingerprint()
            self.reloads += 1
            self.last_reload = time.time()

    def _retire(self, lent: Lent) -> None:
        lent.retired = True
        if lent.users == 0:
            lent.runtime.close()

    def lender(self, env: Mapping[str, str]) -> Any:
        """The :data:`~kodelet.agents.bridge.RuntimeSource` of calls made with
        ``env``: the kept runtime for this project's calls. A call whose input names
        another project (its ``cwd`` lies in another one) gets a runtime loaded for it
        alone, as in-process, so every call is answered by its own project's guards."""

        @contextlib.contextmanager
        def lend(call: Any, no_hooks: bool | None) -> Iterator[Any]:
            if Path(call.project) == self.project:
                with self.runtime(call.hook_input.transcript_path, no_hooks) as runtime:
                    yield runtime
                return
            from ..agents.bridge import fresh_runtime

            with fresh_runtime(call, no_hooks, env) as runtime:
                yield runtime

        return lend

    @contextlib.contextmanager
    def runtime(self, transcript: str, no_hooks: bool | None) -> Iterator[Any]:
        """The kept runtime whose Claude hooks see ``transcript``, held while inside. A
        runtime with no Claude hooks sees no transcript: one serves every session."""
        shared = f"{bool(no_hooks)}\0"
        with self._lock:
            lent = self._runtimes.get(shared + transcript) or self._runtimes.get(shared)
            if lent is None or (lent.sees_transcript and lent.slot != shared + transcript):
                lent = self._load(shared, no_hooks, transcript)
            lent.users += 1
        try:
            yield lent.runtime
        finally:
            with self._lock:
                lent.users -= 1
                if lent.retired and lent.users == 0:
                    lent.runtime.close()

    def _load(self, shared: str, no_hooks: bool | None, transcript: str) -> Lent:
        from ..assembly import CLAUDE_ADAPTER, load_runtime

        runtime = load_runtime(
            cwd=self.project,
            no_hooks=no_hooks,
            env=self.env,
            claude="plugins",
            transcript_path=transcript,
        )
        self.loads += 1
        sees = CLAUDE_ADAPTER in runtime.adapters
        slot = shared + transcript if sees else shared
        if len(self._runtimes) >= KEPT:
            oldest = next(iter(self._runtimes))
            self._retire(self._runtimes.pop(oldest))
        lent = self._runtimes[slot] = Lent(runtime, slot, sees)
        self._tops |= own_tops(runtime.plugins)  # their modules: watched from the next check
        code = {p.path for p in runtime.plugins if p.path}
        self._modules = self._modules + files(sorted(code - set(self._modules.paths())))
        return lent

    def warm_up(self) -> None:
        """Build the project's runtime and start its hook servers before the first call
        comes, not during it: the second call was still paying for them."""
        try:
            self._check()
            with self.runtime("", None) as runtime:
                runtime.warm_up(str(self.project))
        except Exception:  # the first call loads it again and reports what fails
            log.exception("warm-up failed")
        finally:
            self.warmed.set()

    def kill_all(self) -> None:
        for lent in list(self._runtimes.values()):
            with contextlib.suppress(Exception):
                lent.runtime.kill_all()

    # -- calls ----------------------------------------------------------------------

    def handle(self, conn: socket.socket) -> None:
        """One connection: the request read whole, acknowledged, and run only once its
        client says it still waits (:func:`~.protocol.call`); a client that gave up
        meanwhile (it found this process stopped or too slow, and answered the call
        itself) gets nothing run for it."""
        with conn:
            try:
                if protocol.peer_uid(conn) != os.getuid():
                    log.warning("refused a connection from another user")
                    return
                conn.settimeout(PATIENCE)
                data = protocol.read_frame(conn, protocol.INPUT_CAP + (1 << 16))
                req, refusal = self.take(data)
                if req is None:
                    conn.sendall(refusal)
                    return
                try:
                    conn.sendall(protocol.ACK)
                    go = conn.recv(1)
                except OSError:
                    go = b""
                if go != protocol.GO:
                    with self._lock:
                        self.abandoned += 1
                    log.info("a client gave its call up before it was taken; not run")
                    return
                conn.settimeout(None)
                conn.sendall(self.respond(req, peer_pid(conn)))
            except Exception:
                log.exception("a call failed")

    def take(self, data: bytes) -> tuple[protocol.Request | None, bytes]:
        """The request ``data`` holds, or the reply that refuses it (nothing of it runs)."""
        try:
            req = protocol.Request(data)
        except ValueError as exc:
            return None, self._reply(f"refused: {exc}", 2)
        if req.ident != self.identity:
            return None, self._reply("refused: another kodelet version", 2)
        if req.op not in ("status", "stop", "dispatch", "claude-hook"):
            return None, self._reply(f"refused: unknown op {req.op!r}", 2)
        return req, b""

    def respond(self, req: protocol.Request, caller: int | None = None) -> bytes:
        if req.op == "status":
            self._serve_http()
            return self._reply("ok", 0, json.dumps(self.status()).encode())
        if req.op == "stop":
            self._stop.set()
            return self._reply("ok", 0)
        if req.op == "dispatch":
            return self._dispatch(req.args, req.body)
        return self._claude_hook(req, caller)

    def _reply(self, status: str, code: int, out: bytes = b"", err: bytes = b"") -> bytes:
        return protocol.reply(status, code, out, err, self.identity)

    def _claude_hook(self, req: protocol.Request, caller: int | None) -> bytes:
        env = dict(self.env)
        if req.pinned:
            env["CLAUDE_PROJECT_DIR"] = req.pinned
        else:
            env.pop("CLAUDE_PROJECT_DIR", None)
        args = [
            os.path.join(req.cwd, a) if prev == "--trace-file" else a
            for prev, a in zip(["", *req.args], req.args, strict=False)
        ]
        out, code, err = self.answer(req.body, args, env, caller)
        return self._reply("ok", code, out.encode(), err.encode())

    @contextlib.contextmanager
    def _call(self) -> Iterator[None]:
        """One call: counted as running (no idle exit meanwhile), the runtime reloaded
        first if what defines it changed, counted as answered when it returns."""
        with self._lock:
            self.active += 1
            self.last_call = time.monotonic()
        try:
            self._check()
            yield
            with self._lock:
                self.calls += 1
        finally:
            with self._lock:
                self.active -= 1
                self.last_call = time.monotonic()

    def _dispatch(self, args: list[str], raw: bytes) -> bytes:
        """``kodelet hooks run --daemon``: one kodelet payload (wire JSON) through the kept
        runtime; the merged result and the trace as JSON."""
        from ..events import parse_event
        from ..wire import payload_from_wire, result_to_wire

        try:
            event, transcript = parse_event(args[0]), args[1] if len(args) > 1 else ""
            with self._call():
                payload = payload_from_wire(event, json.loads(raw), strict=True)
                with self.runtime(transcript, None) as runtime:
                    done = runtime.dispatch(payload)
        except (ValueError, LookupError) as exc:
            return self._reply("ok", 2, b"", f"invalid payload: {exc}".encode())
        out = {
            "result": result_to_wire(event, done.result),
            "trace": [rec.to_json() for rec in done.trace],
        }
        return self._reply("ok", 0, json.dumps(out, ensure_ascii=False).encode())

    def answer(
        self, raw: bytes, args: list[str], env: dict[str, str], caller: int | None = None
    ) -> tuple[str, int, str]:
        """(stdout, exit code, stderr) of ``kodelet claude hook`` for one input, from the
        kept runtime; ``caller`` is the hook command's process, when known."""
        from ..agents.bridge import answer

        err = io.StringIO()
        with self._call():
            lend = self.lender(env)
            out, code = answer(raw, args, stderr=err, env=env, runtimes=lend, caller=caller)
        return out, code, err.getvalue()

    def answer_http(self, raw: bytes) -> tuple[str, int]:
        """An HTTP call carries no environment, so no ``CLAUDE_PROJECT_DIR``: a session
        is pinned to the project of its first call's cwd, as Claude Code pins it for
        command hooks, so the model's ``cd`` (into a nested repository, say) moves no
        guard."""
        env = {k: v for k, v in self.env.items() if k != "CLAUDE_PROJECT_DIR"}
        project = self.session_project(raw, env)
        if project is not None:
            env["CLAUDE_PROJECT_DIR"] = project
        out, code, err = self.answer(raw, [], env)
        if err:
            log.info("%s", err.rstrip())
        return out, code

    def session_project(self, raw: bytes, env: Mapping[str, str]) -> str | None:
        """The project of the input's session: the one its first call was in. None for
        an input without a session or a cwd (the bridge says what is wrong with it)."""
        try:
            data = json.loads(raw)
            session, cwd = data["session_id"], data["cwd"]
        except (ValueError, TypeError, KeyError):
            return None
        if not (isinstance(session, str) and session and isinstance(cwd, str) and cwd):
            return None
        with self._lock:
            project = self._sessions.pop(session, None)
            if project is None:
                project = protocol.find_project(cwd, env)
            self._sessions[session] = project  # the most recent last
            while len(self._sessions) > SESSIONS:
                del self._sessions[next(iter(self._sessions))]
        return project

    def status(self) -> dict[str, Any]:
        return {
            "project": str(self.project),
            "pid": os.getpid(),
            "started": self.started,
            "age": round(time.time() - self.started, 1),
            "calls": self.calls,
            "abandoned": self.abandoned,
            "reloads": self.reloads,
            "loads": self.loads,
            "last_reload": self.last_reload,
            "socket": str(self.socket_path),
            "log": str(self.directory / f"{self.name}.log"),
            "version": protocol.VERSION,
            "http": self.http_states.get("local"),
            "http_user": self.http_states.get("user"),
            "warmed": self.warmed.is_set(),
        }

    # -- life -----------------------------------------------------------------------

    def _should_exit(self) -> str | None:
        if self._stop.is_set():
            return "asked to stop"
        if not self.project.is_dir():
            return "its project directory is gone"
        try:
            if os.stat(protocol.__file__).st_mtime_ns != self._own_code:
                return "kodelet was replaced on disk"
        except OSError:
            return "kodelet was removed"
        with self._lock:
            idle = self.active == 0 and time.monotonic() - self.last_call > self.idle
        return f"idle for {self.idle:g} s" if idle else None

    def _bind(self) -> socket.socket:
        path = str(self.socket_path)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
                raise SystemExit(f"kodelet: warm: {path} is not this user's socket; refused")
            os.unlink(path)  # stale: the lock is ours, so no warm kodelet listens on it
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        sock.listen(64)
        sock.settimeout(TICK)
        return sock

    def _serve_http(self) -> None:
        """Listen over HTTP on each port a record gives and nothing of ours listens on
        yet: ``install --transport http`` may come while this warm kodelet runs, and
        its SessionStart entry asks for the status before any call comes over HTTP."""
        with self._http_lock:
            for scope in ("local", "user") if self._http_open else ():
                if scope not in self._httpds:
                    self._bind_http(scope)

    def _bind_http(self, scope: str) -> None:
        """The loopback HTTP listener of ``scope``'s record (local: this project's; user:
        every project's, answered per call's cwd), if ``install`` made one."""
        from . import http

        record = http.load(self.places, scope)
        if record is None:
            return
        try:
            self._httpds[scope], _ = http.bind(record, self.answer_http)
        except OSError as exc:
            # The user's port is held by the first of the user's warm kodelets to start.
            held = scope == "user" and http.held_by_kodelet(record)
            state = record.url if held else f"port {record.port} unavailable: {exc.strerror}"
            if not held:
                log.error("HTTP transport: %s", state)
            self.http_states[scope] = state
            return
        self.http_states[scope] = record.url
        self.idle = float("inf")  # Claude Code cannot fall back: HTTP must stay answered
        log.info("HTTP transport on %s", record.url)

    def serve(self) -> int:
        protocol.private_dir(str(self.directory), create=True)
        lock_path = self.directory / f"{self.name}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return 0  # another warm kodelet holds this project
        signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
        signal.signal(signal.SIGHUP, lambda *_: self._stop.set())
        sock = None
        inode = None
        warming: threading.Thread | None = None
        try:
            self._check()
            sock = self._bind()
            inode = os.stat(self.socket_path).st_ino
            self._serve_http()
            warming = threading.Thread(target=self.warm_up, name="kodelet-warm-up", daemon=True)
            warming.start()
            log.info("warm kodelet %s for %s listening", os.getpid(), self.project)
            while (why := self._should_exit()) is None:
                try:
                    conn, _ = sock.accept()
                except TimeoutError:
                    continue
                except OSError as exc:
                    log.warning("accept failed: %s", exc)
                    continue
                conn.settimeout(None)
                threading.Thread(target=self.handle, args=(conn,), daemon=True).start()
            log.info("exiting: %s", why)
        finally:
            with self._http_lock:
                listeners, self._httpds = list(self._httpds.values()), {}
                self._http_open = False
            for httpd in listeners:
                httpd.shutdown()
                httpd.server_close()
            if sock is not None:
                sock.close()
                with contextlib.suppress(OSError):
                    if os.stat(self.socket_path).st_ino == inode:
                        os.unlink(self.socket_path)
            if warming is not None:
                warming.join()  # what it loads is closed below, not left running
            self.kill_all()
            for lent in list(self._runtimes.values()):
                with contextlib.suppress(Exception):
                    lent.runtime.close()
            os.close(fd)
        return 0


def peer_pid(conn: socket.socket) -> int | None:
    """The process at the other end of ``conn`` (the hook command an agent started): what
    that agent was told to load is read from the command lines above it. None where the
    system does not say."""
    try:
        cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)  # pid, uid, gid
    except (AttributeError, OSError):
        return None
    return int.from_bytes(cred[0:4], sys.byteorder) or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kodelet.warm.server")
    parser.add_argument("--project", required=True)
    ns = parser.parse_args(argv)
    level = os.environ.get("KODELET_LOG_LEVEL", "info").upper()
    logging.basicConfig(
        level=logging.getLevelNamesMapping().get(level, logging.INFO),
        format="%(asctime)s kodelet[%(process)d]: %(levelname)s: %(message)s",
    )
    try:
        idle = float(os.environ.get("KODELET_DAEMON_IDLE", IDLE))
    except ValueError:
        idle = IDLE
    sys.stdout = sys.stderr  # a plugin's print goes to the log, never to a client
    return Server(Path(ns.project), os.environ, idle).serve()


if __name__ == "__main__":
    sys.exit(main())
