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
are killed when it exits. Not while it holds the port of an installed HTTP entry:
then it restarts in place, handing the port over (:meth:`Server.restart`), or keeps
serving, since a port left free could be taken by another local user.

Calls are served concurrently: a hook that hangs holds only its own call, until its
timeout. A call runs only once its client confirmed, after the acknowledgement, that
it still waits (:func:`.protocol.call`): a client that gave up on a stopped or
overloaded warm kodelet answered the call itself, and the warm kodelet never runs it.
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
from .native_client import NAME as NATIVE_NAME

__all__ = ["Server", "main"]

log = logging.getLogger("kodelet.warm")

IDLE = 1800.0
TICK = 1.0
KEPT = 8
SESSIONS = 4096
"""HTTP sessions whose project is remembered, the least recently seen forgotten first."""
MODULE = "kodelet.warm.server"
DRAIN = 30.0
"""Seconds a restart waits for the HTTP calls being answered before it hands over."""
STOP = "asked to stop"
REPLACED = "kodelet was replaced on disk"
GONE = "its project directory is gone"
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
        self.idle = self._idle = idle
        self.name = protocol.key(str(project), self.env)
        self.directory = Path(protocol.runtime_dir(self.env))
        self.socket_path = self.directory / f"{self.name}.sock"
        self.identity = protocol.identity()
        self.started = time.time()
        self.last_call = time.monotonic()
        self.calls = 0
        self.clients: dict[str, int] = {}
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
        self._handed: dict[str, int] = {}
        """Listening sockets a restart handed over, per scope, until bound."""
        self._kept: str | None = None
        """Why this process keeps serving instead of exiting, once it said so."""
        self._sock: socket.socket | None = None
        self._inode: int | None = None
        self._lock_fd = -1
        self._warming: threading.Thread | None = None
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
        comes, not during it: the second call was still paying for them. What defines
        the runtime is checked again after, so a change made meanwhile (the first load
        creating the kodelet home for its cache, say) is reloaded here, not at a call."""
        try:
            for _ in range(2):  # again if the loading changed what it was loaded from
                reloads = self.reloads
                self._check()
                with self.runtime("", None) as runtime:
                    runtime.warm_up(str(self.project))
                self._check()  # the first load may create ~/.kodelet (its cache)
                if self.reloads == reloads:
                    break
            self._read_a_call()
        except Exception:  # the first call loads it again and reports what fails
            log.exception("warm-up failed")
        finally:
            self.warmed.set()

    def _read_a_call(self) -> None:
        """Read one made-up call as a call is read, so the first real one finds the
        answer's code imported (the bridge, every agent's dialect, Claude Code's input
        types, the scoped entries' stand-down check, the codecs of a tool call's payload
        and answers): a tenth of a second on its own. Nothing is dispatched, logged or
        answered."""
        from ..agents import installs  # noqa: F401  (the entries of a scope ask it)
        from ..agents.bridge import read_call
        from ..bounds import check_model
        from ..policy import reducer_for
        from ..wire import payload_to_wire, result_from_wire

        call = read_call(
            {
                "hook_event_name": "PreToolUse",
                "session_id": "warm-up",
                "transcript_path": "",
                "cwd": str(self.project),
                "tool_name": "Bash",
                "tool_input": {"command": "true"},
                "tool_use_id": "warm-up",
            },
            self.env,
        )
        if call is not None and call.payload is not None:
            # The code made once per payload and result class: the bounds check, the
            # payload's encoding for the hooks, the reading of their answers.
            reducer_for(call.payload)
            payload_to_wire(call.payload)
            check_model(result_from_wire(call.payload.EVENT, {}), "result")

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
            keeps = self._installed()
            self._stop.set()
            return self._reply("ok", 0, json.dumps({"keeps": keeps}).encode())
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
        out, code, err = self.answer(req.body, args, env, caller, client_of(caller))
        return self._reply("ok", code, out.encode(), err.encode())

    @contextlib.contextmanager
    def _call(self, client: str | None = None) -> Iterator[None]:
        """One call: counted as running (no idle exit meanwhile), the runtime reloaded
        first if what defines it changed, counted as answered when it returns (and, for
        a hook call, per the ``client`` that sent it)."""
        with self._lock:
            self.active += 1
            self.last_call = time.monotonic()
        try:
            self._check()
            yield
            with self._lock:
                self.calls += 1
                if client is not None:
                    self.clients[client] = self.clients.get(client, 0) + 1
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
        self,
        raw: bytes,
        args: list[str],
        env: dict[str, str],
        caller: int | None = None,
        client: str = "unknown",
    ) -> tuple[str, int, str]:
        """(stdout, exit code, stderr) of ``kodelet claude hook`` for one input, from the
        kept runtime; ``caller`` is the hook command's process, when known, ``client`` what
        sent it (:func:`client_of`, or ``http``)."""
        from ..agents.bridge import answer

        err = io.StringIO()
        with self._call(client):
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
        out, code, err = self.answer(raw, [], env, client="http")
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

    def carry_sessions(self, fd: int) -> None:
        """The sessions' projects the process this one restarted from had pinned."""
        with os.fdopen(fd, "rb") as f:
            f.seek(0)
            try:
                sessions = json.loads(f.read())
            except ValueError:
                return
        if isinstance(sessions, dict):
            self._sessions = {str(k): str(v) for k, v in sessions.items()}

    def status(self) -> dict[str, Any]:
        return {
            "project": str(self.project),
            "pid": os.getpid(),
            "started": self.started,
            "age": round(time.time() - self.started, 1),
            "calls": self.calls,
            "clients": dict(self.clients),
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
            "http_pending": self._pending(),
        }

    def _pending(self) -> list[str]:
        """The scopes whose secret was rotated and whose settings file is still to be
        told (``claude ensure`` does it)."""
        from . import http

        return [s for s in ("local", "user") if (r := http.load(self.places, s)) and r.pending]

    # -- life -----------------------------------------------------------------------

    def _should_exit(self) -> str | None:
        if self._httpds:
            self._installed()
        if self._stop.is_set():
            return STOP
        if not self.project.is_dir():
            return GONE
        try:
            if os.stat(protocol.__file__).st_mtime_ns != self._own_code:
                return REPLACED
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
        every project's, answered per call's cwd), if ``install`` made one: the socket
        a restart handed over, or a fresh bind, which rotates the secret when the last
        holder died without handing the port over."""
        from . import http

        record = http.load(self.places, scope)
        handed = self._handed.pop(scope, None)
        if record is None:
            if handed is not None:
                os.close(handed)  # uninstalled while this process restarted
            return
        try:
            if handed is None and http.lost(self.places, scope):
                record = http.rotate(self.places, record, scope)
                log.warning("HTTP transport: its port was left free; the secret was rotated")
            self._httpds[scope], _ = http.bind(record, self.answer_http, fd=handed)
            http.lease(self.places, scope)
        except OSError as exc:
            if handed is not None:
                os.close(handed)
            # The user's port is held by the first of the user's warm kodelets to start;
            # a project's, after an upgrade, by the warm kodelet of the older copy.
            held = http.held_by_kodelet(record)
            state = record.url if held else f"port {record.port} unavailable: {exc.strerror}"
            if not held:
                log.error("HTTP transport: %s", state)
            self.http_states[scope] = state
            return
        self.http_states[scope] = record.url
        self.idle = float("inf")  # Claude Code cannot fall back: HTTP must stay answered
        log.info("HTTP transport on %s", record.url)

    def _installed(self) -> list[str]:
        """The scopes whose port this process holds and an installed entry points at;
        a listener whose record is gone (uninstalled) is closed here."""
        from . import http

        kept = []
        with self._http_lock:
            for scope, httpd in list(self._httpds.items()):
                record = http.load(self.places, scope)
                if record is not None and record.port == httpd.server_address[1]:
                    httpd.token = record.header()  # a rotation's new secret
                    kept.append(scope)
                    continue
                httpd.shutdown()
                httpd.server_close()
                del self._httpds[scope]
                self.http_states.pop(scope, None)
                http.drop_lease(self.places, scope)
                log.info("HTTP transport of the %s scope uninstalled: port released", scope)
            if not self._httpds:
                self.idle = self._idle
        return kept

    def _keep_port(self, why: str) -> bool:
        """Instead of exiting for ``why``, keep the ports installed entries point at:
        another local user could bind a port left free and answer "go ahead" to every
        call. Restart in place, handing the ports over, when asked to stop or when
        kodelet was upgraded; otherwise (kodelet removed, the project gone while its
        sessions run) keep serving as this process. False: nothing to keep, exit."""
        if not self._installed():
            return False
        if why == GONE and not sessions_in(self.project):
            from . import http

            http.drop_lease(self.places, "local")
            with contextlib.suppress(FileNotFoundError):
                http.record_path(self.places, "local").unlink()
            if not self._installed():
                return False
        if why in (STOP, REPLACED) and self._kept != why and self._can_restart():
            self.restart(why)
        if self._kept != why:
            log.warning("not exiting (%s): the HTTP transport's port stays held", why)
            self._kept = why
        self._stop.clear()
        return True

    def _can_restart(self) -> bool:
        import importlib.util

        spec = importlib.util.find_spec(MODULE)
        return bool(
            os.access(sys.executable, os.X_OK)
            and spec
            and spec.origin
            and os.path.isfile(spec.origin)
        )

    def restart(self, why: str) -> None:
        """Become a new warm kodelet (the code on disk now) in this process, handing it
        the HTTP listeners, the lock and the sessions' projects, so no port is ever free:
        calls arriving meanwhile wait in the listeners' queues. Returns only if the
        new program cannot be started; this one then goes on serving HTTP."""
        log.info("restarting (%s), handing over the HTTP transport's port", why)
        with self._http_lock:
            httpds = dict(self._httpds)
        for httpd in httpds.values():
            httpd.shutdown()  # stops answering; the listening socket stays open
        for httpd in httpds.values():
            httpd.drain(DRAIN)
        self._close_socket()
        if self._warming is not None:
            self._warming.join()
        self.kill_all()
        for lent in list(self._runtimes.values()):
            with contextlib.suppress(Exception):
                lent.runtime.close()
        self._runtimes.clear()
        argv = [sys.executable, "-I", "-m", MODULE, "--project", str(self.project)]
        with self._lock:
            sessions = json.dumps(self._sessions).encode()
        carried = os.memfd_create("kodelet-sessions") if hasattr(os, "memfd_create") else None
        if carried is not None:
            os.write(carried, sessions)
            argv += ["--sessions-fd", str(carried)]
        for scope, httpd in httpds.items():
            argv += ["--http-fd", f"{scope}:{httpd.socket.fileno()}"]
        if self._lock_fd >= 0:
            argv += ["--lock-fd", str(self._lock_fd)]
        for fd in [h.socket.fileno() for h in httpds.values()] + [self._lock_fd, carried]:
            if fd is not None and fd >= 0:
                os.set_inheritable(fd, True)
        logging.shutdown()
        try:
            os.execv(sys.executable, argv)
        except OSError:
            log.exception("could not restart; serving on as this process")
        from . import http

        for httpd in httpds.values():
            http.serve(httpd)

    def _close_socket(self) -> None:
        sock, self._sock = self._sock, None
        if sock is None:
            return
        sock.close()
        with contextlib.suppress(OSError):
            if os.stat(self.socket_path).st_ino == self._inode:
                os.unlink(self.socket_path)

    def _take_lock(self, inherited: int | None) -> int | None:
        """This project's lock (the one a restart handed over, if it is this copy's),
        or None when another warm kodelet holds it."""
        lock_path = self.directory / f"{self.name}.lock"
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(lock_path, flags, 0o600)
        if inherited is not None:
            if os.path.samestat(os.fstat(inherited), os.fstat(fd)):
                os.close(fd)
                fd = inherited
            else:
                os.close(inherited)
        os.set_inheritable(fd, False)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        return fd

    def serve(self, handed: Mapping[str, int] | None = None, lock: int | None = None) -> int:
        """Answer until told to stop, idle, upgraded or orphaned (:meth:`_should_exit`),
        never while an installed HTTP entry points at a port this process holds."""
        protocol.private_dir(str(self.directory), create=True)
        self._handed = dict(handed or {})
        fd = self._take_lock(lock)
        if fd is None and not self._handed:
            return 0  # another warm kodelet holds this project
        self._lock_fd = fd if fd is not None else -1
        signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
        signal.signal(signal.SIGHUP, lambda *_: self._stop.set())
        try:
            self._check()
            if fd is not None:
                self._sock = self._bind()
                self._inode = os.stat(self.socket_path).st_ino
            self._serve_http()
            for scope in list(self._handed):
                os.close(self._handed.pop(scope))
            self._warming = threading.Thread(
                target=self.warm_up, name="kodelet-warm-up", daemon=True
            )
            self._warming.start()
            log.info("warm kodelet %s for %s listening", os.getpid(), self.project)
            while (why := self._should_exit()) is None or self._keep_port(why):
                self._accept()
            log.info("exiting: %s", why)
        finally:
            self._shut()
        return 0

    def _accept(self) -> None:
        if self._sock is None:  # only the HTTP transport's port: another holds the project
            self._stop.wait(TICK)
            return
        try:
            conn, _ = self._sock.accept()
        except TimeoutError:
            return
        except OSError as exc:
            log.warning("accept failed: %s", exc)
            return
        conn.settimeout(None)
        threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def _shut(self) -> None:
        with self._http_lock:
            listeners, self._httpds = list(self._httpds.values()), {}
            self._http_open = False
        for httpd in listeners:
            httpd.shutdown()
            httpd.server_close()
        self._close_socket()
        if self._warming is not None:
            self._warming.join()  # what it loads is closed below, not left running
        self.kill_all()
        for lent in list(self._runtimes.values()):
            with contextlib.suppress(Exception):
                lent.runtime.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)


def sessions_in(project: Path) -> bool:
    """Whether a process of this user still works in ``project`` (its directory gone):
    a session started there may still call the port its entries name. Unknowable
    where there is no ``/proc``: then always."""
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return True
    prefix = str(project)
    me = os.getpid()
    for pid in pids:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        cwd = cwd.removesuffix(" (deleted)")
        if pid != me and (cwd == prefix or cwd.startswith(prefix + "/")):
            return True
    return False


def peer_pid(conn: socket.socket) -> int | None:
    """The process at the other end of ``conn`` (the hook command an agent started): what
    that agent was told to load is read from the command lines above it. None where the
    system does not say."""
    try:
        cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)  # pid, uid, gid
    except (AttributeError, OSError):
        return None
    return int.from_bytes(cred[0:4], sys.byteorder) or None


def client_of(pid: int | None) -> str:
    """Which hook client sent a call: ``native`` (the compiled ``kodelet-hook``),
    ``python`` (the lean client, or a ``kodelet`` command), ``other``, or ``unknown``
    where the system does not say. Counted per warm kodelet so that status shows when
    calls pay for the Python client (no native client, or its fallback)."""
    if pid is None:
        return "unknown"
    try:
        program = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return "unknown"
    if program == NATIVE_NAME:
        return "native"
    return "python" if program.startswith("python") else "other"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kodelet.warm.server")
    parser.add_argument("--project", required=True)
    parser.add_argument("--http-fd", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sessions-fd", type=int, help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    handed = {scope: int(fd) for scope, _, fd in (h.partition(":") for h in ns.http_fd)}
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
    server = Server(Path(ns.project), os.environ, idle)
    if ns.sessions_fd is not None:
        server.carry_sessions(ns.sessions_fd)
    return server.serve(handed, ns.lock_fd)


if __name__ == "__main__":
    sys.exit(main())
