"""The warm kodelet over loopback HTTP: Claude Code's ``type: "http"`` hooks, which cost
no process at all per call.

``kodelet claude install --transport http`` picks a port and a secret for the project
and keeps them in a file only its user can read (``<kodelet home>/warm/http/``); the
settings entries carry the secret as a bearer token, and the settings file is made
0600. The warm kodelet binds ``127.0.0.1:<port>`` and answers only requests that
carry the secret: another local user can neither use it nor read its answers. Claude
Code cannot check who answers, so the port must never be free while an entry points
at it: a warm kodelet holding it never exits idle, hands it over across its own
restarts (:meth:`~.server.Server.restart`), and the SessionStart entry checks that
the holder knows the secret (docs/SECURITY.md). What holds the port leaves a
:func:`lease`; a fresh bind that finds the last holder died in this boot without
handing the port over rotates the secret, since a stranger may have held the port
and read it meanwhile.

The port is reachable by every local user and, through DNS rebinding, by any web page
the user opens: a request must name the loopback host it was sent to and come from no
web origin, and no caller can hold more than :class:`Limits` allow (connections, and
seconds to send a request), so half-open or trickling connections cannot pile up
threads or keep the listener from the agent's calls for long.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import json
import os
import secrets
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs

from .. import jsonio
from ..places import Places
from .fingerprint import WARM
from .protocol import INPUT_CAP

__all__ = [
    "PATH",
    "Limits",
    "Record",
    "bind",
    "drop_lease",
    "forget",
    "held_by_kodelet",
    "lease",
    "lost",
    "record_path",
    "rotate",
    "serve",
    "settle",
]

PATH = "/kodelet/claude/hook"
"""The URL path of kodelet's entries: how ``claude status`` and uninstall know them."""
PROOF = "/kodelet/claude/proof"
"""Where a listener proves it knows the record's secret, without being sent it."""
HOST = "127.0.0.1"
EVERY_PROJECT = "*"
"""A user-scope record's project: its port serves every project of the user, each
call answered by the guards of the project its cwd is in."""


@attrs.frozen
class Record:
    """The port and secret ``install --transport http`` chose for one project."""

    project: str
    port: int
    secret: str
    pending: bool = False
    """The secret was rotated and the settings file still carries the old one:
    ``claude ensure`` rewrites the entries (:func:`settle` once done)."""

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{PATH}"

    def header(self) -> str:
        return f"Bearer {self.secret}"


def record_path(places: Places, scope: str = "local") -> Path:
    """One record per project under the kodelet home, and one for the user scope. Not
    the warm kodelet's key: that changes with every kodelet upgrade, and the port and
    secret in the settings file must not."""
    base = places.global_root / WARM / "http"
    if scope == "user":
        return base / "user.json"
    name = hashlib.sha256(os.fsencode(places.cwd)).hexdigest()[:24]
    return base / f"{name}.json"


def _owner(places: Places, scope: str) -> str:
    return EVERY_PROJECT if scope == "user" else str(places.cwd)


def _read_private(path: Path) -> Any:
    """The JSON at ``path`` if this user wrote it and only this user can read it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, encoding="utf-8") as f:
        st = os.fstat(f.fileno())
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        try:
            return json.load(f)
        except ValueError:
            return None


def load(places: Places, scope: str = "local") -> Record | None:
    """The record of ``scope`` (a local one: the project's), or None; one another user
    could have written, or one of another project, is ignored."""
    data = _read_private(record_path(places, scope))
    try:
        found = Record(
            str(data["project"]),
            int(data["port"]),
            str(data["secret"]),
            data.get("pending") is True,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return found if found.project == _owner(places, scope) else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def ensure_record(places: Places, scope: str = "local") -> Record:
    """The record of ``scope``, made (port and secret chosen) if there is none."""
    found = load(places, scope)
    if found is not None:
        return found
    return _write(places, scope, Record(_owner(places, scope), free_port(), _secret()))


def _secret() -> str:
    return secrets.token_urlsafe(32)


def _write(places: Places, scope: str, record: Record) -> Record:
    path = record_path(places, scope)
    for directory in (path.parent.parent, path.parent):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        directory.chmod(0o700)
    text = json.dumps(attrs.asdict(record), indent=2) + "\n"
    jsonio.write_atomically(path, text, mode=0o600)
    return record


def rotate(places: Places, record: Record, scope: str = "local") -> Record:
    """The record with a new secret, the settings file still to be told (``pending``)."""
    return _write(places, scope, attrs.evolve(record, secret=_secret(), pending=True))


def settle(places: Places, scope: str = "local") -> None:
    """The settings file carries the record's secret again."""
    found = load(places, scope)
    if found is not None and found.pending:
        _write(places, scope, attrs.evolve(found, pending=False))


# -- who holds the port ---------------------------------------------------------------


def _lease_path(places: Places, scope: str) -> Path:
    return record_path(places, scope).with_suffix(".lease")


def _boot() -> str:
    """This boot of the machine; "" where the system does not say (then every holder
    that is gone counts as gone in this boot)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def _birth(pid: int) -> str:
    """When ``pid`` started (clock ticks since boot), "" once it is gone (a zombie
    too): a pid reused is another process. "?" for a live one where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return "?" if _alive(pid) else ""
    return "" if len(fields) < 20 or fields[0] == "Z" else fields[19]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lease(places: Places, scope: str = "local") -> None:
    """Note that this process holds ``scope``'s port (kept across its restarts)."""
    pid = os.getpid()
    text = json.dumps({"pid": pid, "birth": _birth(pid), "boot": _boot()}) + "\n"
    jsonio.write_atomically(_lease_path(places, scope), text, mode=0o600)


def drop_lease(places: Places, scope: str = "local") -> None:
    """The port is released because no entry points at it any more."""
    with contextlib.suppress(FileNotFoundError):
        _lease_path(places, scope).unlink()


def forget(places: Places, scope: str = "local") -> bool:
    """Uninstalled: the record goes, and the warm kodelet holding its port releases it
    (a reinstall chooses a new port and secret). Whether there was one."""
    try:
        record_path(places, scope).unlink()
    except FileNotFoundError:
        return False
    return True


def lost(places: Places, scope: str = "local") -> bool:
    """Whether the last holder of ``scope``'s port died in this boot without handing it
    over or releasing it: the port was free while sessions could still call it."""
    data = _read_private(_lease_path(places, scope))
    if not isinstance(data, dict) or data.get("boot") != _boot():
        return False  # never held, released, or held before a reboot ended every session
    pid = data.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return True
    return _birth(pid) in ("", None) or _birth(pid) != data.get("birth")


@attrs.frozen
class Limits:
    """What all callers together may hold of the listener."""

    connections: int = 32
    """Connections served at once; one more is closed unanswered. An agent's parallel
    tool calls stay far below it."""
    request_seconds: float = 10.0
    """From connecting to the request's last byte; the hooks' own time is not counted."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def setup(self) -> None:
        seconds = self.server.limits.request_seconds
        super().setup()
        self.connection.settimeout(seconds)
        # A per-read timeout alone lets a caller trickle one byte at a time forever.
        self._watch = threading.Timer(seconds, self._cut)
        self._watch.daemon = True
        self._watch.start()

    def _cut(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def finish(self) -> None:
        self._watch.cancel()
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the warm kodelet's log has the calls that matter

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _from_the_agent(self) -> bool:
        """Sent to the loopback address by a program, not by a web page: a rebound name
        in ``Host``, or any ``Origin``, is a browser's request."""
        port = self.server.server_address[1]
        host = self.headers.get("Host", "")
        return host in (f"{HOST}:{port}", f"localhost:{port}") and "Origin" not in self.headers

    def do_GET(self) -> None:
        """The proof: HMAC(secret, nonce), so that a warm kodelet can tell one of its
        own holds the port from a stranger who took it."""
        nonce = self.path[len(PROOF) + 3 :] if self.path.startswith(PROOF + "?n=") else ""
        if not self._from_the_agent() or not (16 <= len(nonce) <= 128 and nonce.isalnum()):
            self._send(403, b'{"error": "not kodelet\'s caller"}')
            return
        self._send(200, json.dumps({"proof": _proof(self.server.token, nonce)}).encode())

    def do_POST(self) -> None:
        if not self._from_the_agent():
            self._send(403, b'{"error": "not a loopback request from a program"}')
            return
        given = self.headers.get("Authorization", "")
        if self.path != PATH or not hmac.compare_digest(given, self.server.token):
            self._send(403, b'{"error": "not kodelet\'s caller"}')
            return
        try:
            size = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            size = -1
        if not 0 <= size <= INPUT_CAP:
            self._send(413, b'{"error": "bad Content-Length"}')
            return
        raw = self.rfile.read(size)
        self._watch.cancel()
        if len(raw) != size:
            return  # cut short: the caller went away or ran out of time
        out, code = self.server.answer(raw)
        # A failure of kodelet itself is a non-2xx: with onFailure "block" Claude Code
        # blocks the call, as it does when the command transport exits non-zero.
        self._send(200 if code == 0 else 500, out.encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    token: str
    answer: Any

    def __init__(self, address: tuple[str, int], limits: Limits, fd: int | None) -> None:
        super().__init__(address, _Handler, bind_and_activate=fd is None)
        if fd is not None:  # handed over by the warm kodelet this process was
            self.socket.close()
            self.socket = socket.socket(fileno=fd)
            if self.socket.getsockname() != address:
                self.socket.close()
                raise OSError(f"the socket handed over is not {address[0]}:{address[1]}")
            self.server_address = address
            self.server_name, self.server_port = address
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.connections)

    def drain(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) for the calls being answered to be answered."""
        deadline = time.monotonic() + timeout
        taken = 0
        while taken < self.limits.connections and self._slots.acquire(
            timeout=max(0.0, deadline - time.monotonic())
        ):
            taken += 1
        for _ in range(taken):
            self._slots.release()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: closed at once, never queued
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _proof(token: str, nonce: str) -> str:
    return hmac.new(token.encode(), nonce.encode(), hashlib.sha256).hexdigest()


def held_by_kodelet(record: Record, timeout: float = 5.0) -> bool:
    """Whether what listens on the record's port knows its secret: a warm kodelet of
    this user (of another project, for the user scope's port), not a stranger."""
    nonce = secrets.token_hex(16)
    conn = http.client.HTTPConnection(HOST, record.port, timeout=timeout)
    try:
        conn.request("GET", f"{PROOF}?n={nonce}")
        response = conn.getresponse()
        got = json.loads(response.read(4096)).get("proof") if response.status == 200 else None
    except (OSError, ValueError, AttributeError, http.client.HTTPException):
        return False
    finally:
        conn.close()
    return isinstance(got, str) and hmac.compare_digest(got, _proof(record.header(), nonce))


def bind(
    record: Record, answer: Any, limits: Limits | None = None, fd: int | None = None
) -> tuple[_Server, threading.Thread]:
    """Listen on the record's port (or on ``fd``, the listening socket of it a restart
    handed over); ``answer(raw) -> (stdout, code)`` answers each call."""
    httpd = _Server((HOST, record.port), limits or Limits(), fd)
    httpd.token = record.header()
    httpd.answer = answer
    return httpd, serve(httpd)


def serve(httpd: _Server) -> threading.Thread:
    thread = threading.Thread(target=httpd.serve_forever, name="kodelet-http", daemon=True)
    thread.start()
    return thread
