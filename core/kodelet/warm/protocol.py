"""What both ends of the warm kodelet's socket share: names, paths, identity, key,
the project rule, the request and reply framing, and how one is started.

The lean client (:mod:`.client`, the program an agent spawns) imports this module as
a top-level module, without kodelet's package, so it must stay a leaf of the
standard library's C modules: nothing here may import kodelet, and nothing at module
level may import more than the interpreter has loaded already (not even ``__future__``:
the annotations here are valid Python as they stand). The warm kodelet
(:mod:`.server`), ``kodelet daemon`` (:mod:`.control`), the HTTP transport and
:func:`kodelet.places.find_project` import it as ``kodelet.warm.protocol``.
"""

import _socket  # the C module: ``socket`` imports enum and costs a start-up's worth
import os
import sys
from _collections_abc import Mapping  # loaded by os already; collections.abc is not

__all__ = [
    "ACK",
    "ACK_WAIT",
    "ENV_ACK",
    "ENV_DIR",
    "ENV_OFF",
    "GO",
    "INPUT_CAP",
    "MAGIC",
    "NOT_YET",
    "PROTOCOL",
    "VERSION",
    "Lost",
    "Request",
    "Unavailable",
    "Where",
    "ack_wait",
    "call",
    "find_project",
    "identity",
    "key",
    "kodelet_home",
    "parse_reply",
    "peer_uid",
    "private_dir",
    "read_frame",
    "recv_all",
    "reply",
    "request",
    "runtime_dir",
    "spawn",
    "wait_started",
]

PROTOCOL = "2"
with open(os.path.join(os.path.dirname(__file__), os.pardir, "VERSION"), "rb") as _f:
    VERSION = _f.read().decode("ascii").strip()  # as bytes: a text file imports its codec
"""kodelet's version, from the package's one ``VERSION`` file (``kodelet.__version__``)."""
MAGIC = b"KODELET-WARM"
INPUT_CAP = 64 * 1024 * 1024
ENV_OFF = "KODELET_DAEMON"
"""``KODELET_DAEMON=0``: never use or start a warm kodelet; answer every call here."""
ENV_DIR = "KODELET_DAEMON_DIR"
ENV_ACK = "KODELET_DAEMON_ACK"
"""Seconds a client waits for the warm kodelet to take a call before it answers the
call itself (default :data:`ACK_WAIT`)."""
ACK_WAIT = 2.0
ACK = b"A"
"""The warm kodelet has read the whole request and will run it once the client says GO."""
GO = b"G"
"""The client still waits: the call is the warm kodelet's from here on."""
# Variables of the warm machinery itself: they do not change what a runtime holds.
NOT_RUNTIME = ("KODELET_DAEMON", "KODELET_LOG_LEVEL")
NOT_YET = "no warm kodelet yet"


class Unavailable(Exception):
    """No warm kodelet took the call; it is answered in this process instead."""

    def __init__(self, reason: str, *, start: bool) -> None:
        super().__init__(reason)
        self.start = start


class Lost(Unavailable):
    """The warm kodelet took the call and failed before answering it. Its hooks may have
    run, so the call is never run again: it is answered as a failure of kodelet."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, start=True)


def identity() -> str:
    """Who may talk to whom: protocol, version, and this very copy of kodelet (its
    location and the time it was written), so an upgraded or second installation
    never talks to a warm kodelet running older code."""
    here = os.path.realpath(__file__)
    st = os.stat(here)
    package = os.path.dirname(os.path.dirname(here))
    return f"{PROTOCOL}:{VERSION}:{st.st_mtime_ns}:{package}"


def find_project(cwd: str, env: Mapping[str, str]) -> str:
    """The nearest directory at or above the session's start holding ``.kodelet/`` (not
    the global root's), past any repository nested in it (a submodule, a ``git
    init``-ed vendor folder); with none, the nearest holding ``.git``; else the start.
    The start is ``CLAUDE_PROJECT_DIR`` (the folder the agent started in, which Claude
    Code, Gemini CLI and Qwen Code set for every hook) when it names a directory, else
    ``cwd``: an agent started in ``src/deep`` is in the project above it. What
    :func:`kodelet.places.find_project` answers, written here so the lean client needs no
    kodelet import."""
    pinned = env.get("CLAUDE_PROJECT_DIR")
    if pinned and os.path.isabs(pinned) and os.path.isdir(pinned):
        cwd = pinned
    start = os.path.abspath(cwd)
    global_root = os.path.abspath(kodelet_home(env))
    repository = None
    directory = start
    while True:
        local = os.path.join(directory, ".kodelet")
        if os.path.isdir(local) and os.path.abspath(local) != global_root:
            return directory
        if repository is None and os.path.lexists(os.path.join(directory, ".git")):
            repository = directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return repository or start
        directory = parent


def kodelet_home(env: Mapping[str, str]) -> str:
    home = env.get("HOME") or os.path.expanduser("~")
    return env.get("KODELET_HOME") or os.path.join(home, ".kodelet")


def runtime_dir(env: Mapping[str, str]) -> str:
    """Where warm kodelets keep their sockets, locks and logs."""
    chosen = env.get(ENV_DIR)
    if chosen:
        return os.path.abspath(chosen)
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg):
        return os.path.join(xdg, "kodelet")
    return f"/tmp/kodelet-{os.getuid()}"


def private_dir(path: str, *, create: bool) -> str:
    """``path``, a directory this user owns and no one else may enter; a link, a file or
    a directory planted by another user is refused, never used."""
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Unavailable(f"cannot create {path}: {exc.strerror}", start=False) from None
    try:
        st = os.lstat(path)
    except OSError:
        raise Unavailable(f"{path} does not exist", start=not create) from None
    if (st.st_mode & 0o170000) != 0o040000:
        raise Unavailable(f"{path} is not a directory (refused)", start=False)
    if st.st_uid != os.getuid():
        raise Unavailable(f"{path} belongs to uid {st.st_uid}, not to this user", start=False)
    if st.st_mode & 0o077:
        mode = f"{st.st_mode & 0o777:o}"
        raise Unavailable(f"{path} is open to other users (mode {mode})", start=False)
    return path


def key(project: str, env: Mapping[str, str], ident: str | None = None) -> str:
    """One warm kodelet per (kodelet copy, project, kodelet home, KODELET_* settings)."""
    import _sha256  # type: ignore[import-not-found]

    settings = sorted(
        f"{k}={v}"
        for k, v in env.items()
        if k.startswith("KODELET_") and not k.startswith(NOT_RUNTIME)
    )
    text = "\0".join([ident or identity(), project, kodelet_home(env), *settings])
    return str(_sha256.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:24])


class Where:
    """The warm kodelet of one project: its runtime directory (checked private), key
    and socket. Worked out once per client call; the identity with it."""

    def __init__(self, project: str, env: Mapping[str, str]) -> None:
        self.project = project
        self.ident = identity()
        self.directory = private_dir(runtime_dir(env), create=True)
        self.name = key(project, env, self.ident)
        self.socket = os.path.join(self.directory, self.name + ".sock")
        self.log = os.path.join(self.directory, self.name + ".log")


def spawn(where: Where, env: Mapping[str, str]) -> None:
    """Start the warm kodelet of ``where``, detached, its output to its log file. Two
    clients may do this at once: the warm kodelet's lock lets one of them live."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(where.log, flags, 0o600)
    try:
        argv = [sys.executable, "-I", "-m", "kodelet.warm.server", "--project", where.project]
        os.posix_spawn(
            sys.executable,
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fd, 1),
                (os.POSIX_SPAWN_DUP2, fd, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(fd)


def wait_started(where: Where, env: Mapping[str, str], wait: float) -> bytes:
    """The warm kodelet's status (JSON), once it answers: started, detached, if none
    does. :class:`Unavailable` when it cannot be used or does not answer in time."""
    import time

    deadline = time.monotonic() + wait
    spawned = False
    while True:
        try:
            payload = request("status", [], b"", env, where.ident)
            status, _, out, _ = call(where.socket, payload, where.ident, ack_wait(env))
        except Unavailable as exc:
            if not exc.start:
                raise
            if not spawned:
                spawn(where, env)
                spawned = True
            if time.monotonic() > deadline:
                raise Unavailable(
                    f"the warm kodelet did not answer within {wait:g} s; see {where.log}",
                    start=False,
                ) from None
            time.sleep(0.05)
            continue
        if status != "ok":
            raise Unavailable(status, start=False)
        return out


def ack_wait(env: Mapping[str, str]) -> float:
    """:data:`ENV_ACK`'s seconds, or :data:`ACK_WAIT` when unset or not a positive number."""
    try:
        value = float(env.get(ENV_ACK) or ACK_WAIT)
    except ValueError:
        return ACK_WAIT
    return value if 0 < value < 86400 else ACK_WAIT


def peer_uid(sock: _socket.socket) -> int:
    cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # pid, uid, gid
    return int.from_bytes(cred[4:8], sys.byteorder)


def recv_all(sock: _socket.socket, cap: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > cap:
            raise ValueError(f"over {cap} bytes")
        chunks.append(chunk)


def read_frame(sock: _socket.socket, cap: int) -> bytes:
    """One request as :func:`call` sends it: its length in digits, NUL, then its bytes."""
    head = b""
    while not head.endswith(b"\0"):
        byte = sock.recv(1)
        if not byte or len(head) > 12:
            raise ValueError("not a warm kodelet request")
        head += byte
    size = int(head[:-1])
    if not 0 <= size <= cap:
        raise ValueError(f"over {cap} bytes")
    data = bytearray(size)
    view = memoryview(data)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if not n:
            raise ValueError("request cut short")
        got += n
    return bytes(data)


def request(
    op: str, args: list[str], body: bytes, env: Mapping[str, str], ident: str | None = None
) -> bytes:
    """``MAGIC\\0protocol\\0identity\\0op\\0cwd\\0CLAUDE_PROJECT_DIR\\0n\\0arg...\\0`` + body."""
    fields = [
        MAGIC,
        PROTOCOL.encode(),
        (ident or identity()).encode(),
        op.encode(),
        os.getcwd().encode("utf-8", "surrogateescape"),
        env.get("CLAUDE_PROJECT_DIR", "").encode("utf-8", "surrogateescape"),
        str(len(args)).encode(),
        *(a.encode("utf-8", "surrogateescape") for a in args),
    ]
    return b"\0".join(fields) + b"\0" + body


class Request:
    """A request as the warm kodelet reads it (:func:`request` writes it)."""

    def __init__(self, data: bytes) -> None:
        fields = data.split(b"\0", 7)
        if len(fields) < 8 or fields[0] != MAGIC:
            raise ValueError("not a warm kodelet request")
        self.ident = fields[2].decode("utf-8", "replace")
        self.op = fields[3].decode("utf-8", "replace")
        self.cwd, self.pinned = (os.fsdecode(f) for f in fields[4:6])
        rest = fields[7]
        self.args: list[str] = []
        for _ in range(int(fields[6])):
            arg, _, rest = rest.partition(b"\0")
            self.args.append(os.fsdecode(arg))
        self.body = rest


def reply(status: str, code: int, out: bytes, err: bytes, ident: str | None = None) -> bytes:
    """``MAGIC\0identity\0status\0code\0len(out)\0`` + out + err."""
    head = [MAGIC, (ident or identity()).encode(), status.encode(), str(code).encode()]
    return b"\0".join([*head, str(len(out)).encode()]) + b"\0" + out + err


def parse_reply(data: bytes, ident: str | None = None) -> tuple[str, int, bytes, bytes]:
    parts = data.split(b"\0", 5)
    if len(parts) != 6 or parts[0] != MAGIC:
        raise ValueError("not a warm kodelet's answer")
    if parts[1].decode("utf-8", "replace") != (ident or identity()):
        raise Unavailable(
            "a warm kodelet of another kodelet version answered (ignored)", start=False
        )
    n = int(parts[4])
    rest = parts[5]
    if n > len(rest):
        raise ValueError("answer cut short")
    return parts[2].decode(), int(parts[3]), rest[:n], rest[n:]


def call(
    path: str, payload: bytes, ident: str | None = None, wait: float | None = None
) -> tuple[str, int, bytes, bytes]:
    """Send one request to the warm kodelet at ``path``; its (status, code, out, err).

    The warm kodelet acknowledges (:data:`ACK`) a request it has read whole and runs it
    only when the client answers :data:`GO`. A client with no acknowledgement within
    ``wait`` seconds (:func:`ack_wait`: the warm kodelet is stopped, wedged or
    overloaded) gives the call up, and a warm kodelet that finds its client gone never
    runs it: :class:`Unavailable`, the call is the client's to answer. Once it said GO,
    the call may take as long as its hooks do, and a warm kodelet lost then is
    :class:`Lost`: its hooks may have run, so no one runs them again."""
    wait = ack_wait(os.environ) if wait is None else wait
    try:
        st = os.lstat(path)
    except OSError:
        raise Unavailable(NOT_YET, start=True) from None
    if (st.st_mode & 0o170000) != 0o140000 or st.st_uid != os.getuid():
        raise Unavailable(f"{path} is not this user's socket (refused)", start=False)
    late = f"the warm kodelet did not take the call within {wait:g} s (stopped or overloaded)"
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(wait)
        try:
            sock.connect(path)
        except TimeoutError:
            raise Unavailable(late, start=False) from None
        except OSError:
            raise Unavailable("stale socket: no warm kodelet listening", start=True) from None
        if peer_uid(sock) != os.getuid():
            raise Unavailable("the socket's listener is another user (refused)", start=False)
        try:
            sock.sendall(b"%d\0" % len(payload) + payload)
            first = sock.recv(1)
            if first == ACK:
                sock.sendall(GO)
        except TimeoutError:
            raise Unavailable(late, start=False) from None
        except OSError as exc:
            raise Unavailable(
                f"the warm kodelet failed before it took the call ({exc})", start=True
            ) from None
        if first != ACK:  # refused (or not a warm kodelet of this version): nothing ran
            try:
                return parse_reply(first + recv_all(sock, 2 * INPUT_CAP), ident)
            except (OSError, ValueError) as exc:
                raise Unavailable(
                    f"the warm kodelet failed before it took the call ({exc})", start=True
                ) from None
        sock.settimeout(None)
        try:
            return parse_reply(recv_all(sock, 2 * INPUT_CAP), ident)
        except (OSError, ValueError, Unavailable) as exc:
            raise Lost(
                f"the warm kodelet failed mid-call ({exc}) after it had taken the call; its "
                "hooks may have run, so the call is not run again"
            ) from None
    finally:
        sock.close()
