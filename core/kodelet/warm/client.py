"""The lean client: what an agent runs per hook to reach the warm kodelet.

It is started with ``python -I -S`` and imports nothing but the standard library's
C modules, so it costs less than ``python -c pass``. It finds the warm kodelet of the
project (a Unix socket in a directory only this user can reach), hands it the hook
input and prints the answer. When no warm kodelet answers (none started yet, a
stale socket, one that died mid-call, one of another kodelet version, a directory
planted by another user) it answers the call itself, exactly as ``kodelet claude
hook`` would, then starts a warm kodelet for the next call. No call ever waits on a
warm kodelet that is not there, and none is let through because one is missing.

The server imports this module for the names, paths and wire format both sides
share; nothing here may import kodelet at module level.
"""

from __future__ import annotations

import _socket  # the C module: ``socket`` imports enum and costs a start-up's worth
import os
import sys
from _collections_abc import Mapping  # loaded by os already; collections.abc is not

PROTOCOL = "1"
VERSION = "0.1.0"
"""kodelet's version (``kodelet.__version__``; a test keeps the two equal)."""
MAGIC = b"KODELET-WARM"
INPUT_CAP = 64 * 1024 * 1024
ENV_OFF = "KODELET_DAEMON"
"""``KODELET_DAEMON=0``: never use or start a warm kodelet; answer every call here."""
ENV_DIR = "KODELET_DAEMON_DIR"
# Variables of the warm machinery itself: they do not change what a runtime holds.
NOT_RUNTIME = ("KODELET_DAEMON", "KODELET_LOG_LEVEL")
NOT_YET = "no warm kodelet yet"
NO_HTTP = "no HTTP transport installed for this project"


class Unavailable(Exception):
    """No warm kodelet answered; the call is answered in this process instead."""

    def __init__(self, reason: str, *, start: bool) -> None:
        super().__init__(reason)
        self.start = start


class Incompatible(ValueError):
    """The answer came from a warm kodelet running other code than this client's."""


def identity() -> str:
    """Who may talk to whom: protocol, version, and this very copy of kodelet (its
    location and the time it was written), so an upgraded or second installation
    never talks to a warm kodelet running older code."""
    here = os.path.realpath(__file__)
    st = os.stat(here)
    package = os.path.dirname(os.path.dirname(here))
    return f"{PROTOCOL}:{VERSION}:{st.st_mtime_ns}:{package}"


def find_project(cwd: str, env: Mapping[str, str]) -> str:
    """``CLAUDE_PROJECT_DIR``, else the nearest directory at or above ``cwd`` holding
    ``.git`` or ``.kodelet/`` (not the global root's): what
    :func:`kodelet.places.find_project` answers, written here so the lean client needs
    no kodelet import."""
    pinned = env.get("CLAUDE_PROJECT_DIR")
    if pinned and os.path.isabs(pinned) and os.path.isdir(pinned):
        return pinned
    start = os.path.abspath(cwd)
    global_root = os.path.abspath(kodelet_home(env))
    directory = start
    while True:
        if os.path.lexists(os.path.join(directory, ".git")):
            return directory
        local = os.path.join(directory, ".kodelet")
        if os.path.isdir(local) and os.path.abspath(local) != global_root:
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return start
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


def wait_started(where: Where, env: Mapping[str, str], wait: float) -> bytes:
    """The warm kodelet's status (JSON), once it answers: started, detached, if none
    does. :class:`Unavailable` when it cannot be used or does not answer in time."""
    import time

    deadline = time.monotonic() + wait
    spawned = False
    while True:
        try:
            status, _, out, _ = call(where.socket, request("status", [], b"", env, where.ident))
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
        raise Incompatible("a warm kodelet of another kodelet version answered (ignored)")
    n = int(parts[4])
    rest = parts[5]
    if n > len(rest):
        raise ValueError("answer cut short")
    return parts[2].decode(), int(parts[3]), rest[:n], rest[n:]


def call(path: str, payload: bytes, ident: str | None = None) -> tuple[str, int, bytes, bytes]:
    """Send one request to the warm kodelet at ``path``; its (status, code, out, err)."""
    try:
        st = os.lstat(path)
    except OSError:
        raise Unavailable(NOT_YET, start=True) from None
    if (st.st_mode & 0o170000) != 0o140000 or st.st_uid != os.getuid():
        raise Unavailable(f"{path} is not this user's socket (refused)", start=False)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            sock.connect(path)
        except OSError:
            raise Unavailable("stale socket: no warm kodelet listening", start=True) from None
        if peer_uid(sock) != os.getuid():
            raise Unavailable("the socket's listener is another user (refused)", start=False)
        try:
            sock.sendall(payload)
            sock.shutdown(_socket.SHUT_WR)
            return parse_reply(recv_all(sock, 2 * INPUT_CAP), ident)
        except Incompatible as exc:
            raise Unavailable(str(exc), start=False) from None
        except (OSError, ValueError) as exc:
            raise Unavailable(f"the warm kodelet failed mid-call ({exc})", start=True) from None
    finally:
        sock.close()


def answer_here(argv: list[str], raw: bytes) -> int:
    """Answer in this process, as ``kodelet claude hook`` does: importing kodelet now."""
    if sys.flags.no_site:
        import site

        site.main()
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    if package_parent not in sys.path:
        sys.path.append(package_parent)
    from kodelet.bridges.claude_code import main as bridge

    return bridge(argv, raw)


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


def note(text: str) -> None:
    os.write(2, f"kodelet: warm: {text}\n".encode("utf-8", "replace"))


def ensure(env: Mapping[str, str], wait: float = 20.0) -> int:
    """``claude ensure``, the SessionStart entry of the HTTP transport: start the
    project's warm kodelet if none runs and check it holds its HTTP port. If it cannot
    (another process holds the port, which could answer "go ahead" to every call), the
    session is stopped with the reason instead of running unguarded."""
    import json

    raw = sys.stdin.buffer.read(INPUT_CAP + 1)
    project = find_project(os.getcwd(), env)
    where: Where | None = None
    try:
        where = Where(project, env)
        http = json.loads(wait_started(where, env, wait)).get("http")
        problem = "" if http and http.startswith("http://") else (http or NO_HTTP)
    except Unavailable as exc:
        problem = str(exc)
    if not problem:
        return 0
    reason = (
        f"kodelet: the warm kodelet of {project} cannot answer Claude Code's hooks over "
        f"HTTP ({problem}); the session is stopped rather than run unguarded. "
        "`kodelet daemon status` shows it; `kodelet claude install` (without "
        "--transport http) goes back to the command transport."
    )
    sys.stdout.write(json.dumps({"continue": False, "stopReason": reason}) + "\n")
    sys.stdout.flush()
    sys.stderr.write(reason + "\n")
    tell_user(reason, where.log if where is not None else None)
    try:
        started_by_claude = json.loads(raw).get("hook_event_name") == "SessionStart"
    except (ValueError, AttributeError):
        started_by_claude = False
    if started_by_claude:
        stop_host()
    return 2


def tell_user(text: str, log: str | None) -> None:
    """Claude Code shows nothing of a stopped session's hooks: the terminal, if there is
    one, and the warm kodelet's log get the reason."""
    targets = [("/dev/tty", os.O_WRONLY)] + ([(log, os.O_WRONLY | os.O_APPEND)] if log else [])
    for path, flags in targets:
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError:
            continue
        try:
            os.write(fd, f"kodelet: {text}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)


def stop_host() -> None:
    """End the Claude Code process running this hook. Claude Code 2.1.328 ignores
    ``continue: false`` from SessionStart, and a session whose HTTP hooks another
    process may answer must not go on. Only an ancestor named ``claude`` (past the
    shells between) is stopped, never a terminal or anything else."""
    import signal

    pid = os.getppid()
    for _ in range(4):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                fields = f.read()
        except OSError:
            return
        name = fields[fields.index("(") + 1 : fields.rindex(")")]
        if name == "claude":
            os.kill(pid, signal.SIGTERM)
            return
        if name not in ("sh", "dash", "bash", "zsh"):
            return
        pid = int(fields[fields.rindex(")") + 2 :].split()[1])


def main(argv: list[str]) -> int:
    """``client.py claude hook [options]``: one hook input on stdin, the answer on stdout."""
    if argv[:2] == ["claude", "ensure"]:
        return ensure(os.environ)
    args = argv[2:] if argv[:2] == ["claude", "hook"] else argv
    if any(a in ("-h", "--help") for a in args):
        return answer_here(args, b"")
    raw = sys.stdin.buffer.read(INPUT_CAP + 1)
    env = os.environ
    if env.get(ENV_OFF, "") in ("0", "off", "false", "no"):
        return answer_here(args, raw)
    where: Where | None = None
    try:
        where = Where(find_project(os.getcwd(), env), env)
        payload = request("claude-hook", args, raw, env, where.ident)
        status, code, out, err = call(where.socket, payload, where.ident)
        if status != "ok":
            raise Unavailable(f"the warm kodelet refused the call ({status})", start=False)
    except Unavailable as exc:
        if str(exc) != NOT_YET:
            note(f"{exc}; answered in-process")
        code = answer_here(args, raw)
        if exc.start and where is not None:
            sys.stdout.flush()
            try:
                spawn(where, env)
            except OSError as problem:
                note(f"could not start a warm kodelet: {problem}")
        return code
    if out:
        sys.stdout.buffer.write(out)
        sys.stdout.buffer.flush()
    if err:
        sys.stderr.buffer.write(err)
        sys.stderr.buffer.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
