"""The lean client: the program an agent runs per hook to reach the warm kodelet.

It is started with ``python -I -S`` and imports nothing but the standard library's
C modules, so it costs less than ``python -c pass``. It finds the warm kodelet of the
project (a Unix socket in a directory only this user can reach), hands it the hook
input and prints the answer. When no warm kodelet answers (none started yet, a
stale socket, one that died mid-call, one of another kodelet version, a directory
planted by another user) it answers the call itself, exactly as ``kodelet claude
hook`` would, then starts a warm kodelet for the next call. No call ever waits on a
warm kodelet that is not there, and none is let through because one is missing.

It is a program, not a library: what the warm kodelet shares with it lives in
:mod:`.protocol`, which nothing here may make import kodelet.
"""

import os
import sys
from _collections_abc import Mapping  # loaded by os already; collections.abc is not

try:
    from . import protocol
except ImportError:  # run by hook.py as a top-level module: kodelet's package stays unread
    import protocol  # type: ignore[import-not-found,no-redef]

NO_HTTP = "no HTTP transport installed for this project"


def import_kodelet() -> None:
    """Make kodelet importable here: the site directories, and this copy's package."""
    if sys.flags.no_site:
        import site

        site.main()
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    if package_parent not in sys.path:
        sys.path.append(package_parent)


def answer_here(argv: list[str], raw: bytes) -> int:
    """Answer in this process, as ``kodelet claude hook`` does: importing kodelet now."""
    import_kodelet()
    from kodelet.agents.bridge import main as bridge

    return bridge(argv, raw)


def answer_lost(argv: list[str], raw: bytes, problem: str) -> int:
    """Answer a call the warm kodelet took and lost as a failure of kodelet: a tool call
    or prompt is blocked with the reason (unless ``[claude] on_failure = "allow"``),
    other events show it. Never run again here: its hooks may have run already."""
    import_kodelet()
    from typing import NoReturn

    from kodelet.agents.bridge import answer
    from kodelet.errors import KodeletError

    def lost(*_: object) -> NoReturn:
        raise KodeletError(problem)

    out, code = answer(raw, argv, stderr=sys.stderr, runtimes=lost)
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    return code


def lost_here(problem: str, argv: list[str]) -> int:
    """``claude lost PROBLEM claude hook [options]``: the native client (``kodelet-hook``)
    hands over a call the warm kodelet took and lost, with its input, to be answered as
    :func:`answer_lost` does. It never runs the call's hooks, so a forged one only blocks."""
    raw = sys.stdin.buffer.read(protocol.INPUT_CAP + 1)
    note(problem)
    return answer_lost(argv[2:] if argv[:2] == ["claude", "hook"] else argv, raw, problem)


def note(text: str) -> None:
    os.write(2, f"kodelet: warm: {text}\n".encode("utf-8", "replace"))


def ensure(env: Mapping[str, str], wait: float = 20.0, scope: str = "local") -> int:
    """``claude ensure [--scope S]``, the SessionStart entry of the HTTP transport: start
    the project's warm kodelet if none runs and check that the port of the entries of
    ``scope`` is answered by it (the user scope's: by a warm kodelet of this user). If it
    is not (another process holds the port, which could answer "go ahead" to every
    call), the session is stopped with the reason instead of running unguarded."""
    import json

    raw = sys.stdin.buffer.read(protocol.INPUT_CAP + 1)
    project = protocol.find_project(os.getcwd(), env)
    where: protocol.Where | None = None
    try:
        where = protocol.Where(project, env)
        key = "http_user" if scope == "user" else "http"
        status = json.loads(protocol.wait_started(where, env, wait))
        http = status.get(key)
        problem = "" if http and http.startswith("http://") else (http or NO_HTTP)
        if not problem and scope in status.get("http_pending", ()):
            problem = rotated(project, scope)
    except protocol.Unavailable as exc:
        problem = str(exc)
    if not problem:
        return 0
    reason = (
        f"kodelet: the warm kodelet of {project} cannot answer Claude Code's hooks over "
        f"HTTP ({problem}); the session is stopped rather than run unguarded. "
        "`kodelet daemon status` shows it; `kodelet claude install` (without "
        "--transport http) goes back to the command transport."
        if not problem.startswith(ROTATED)
        else f"kodelet: {problem}"
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


ROTATED = "the HTTP transport's port"


def rotated(project: str, scope: str) -> str:
    """The secret was rotated (the port was free while sessions could call it, so a
    stranger may have read it): the settings file is told the new one, and this session,
    which read the old one, is stopped. "" when the install that tells it fails."""
    import subprocess

    argv = [sys.executable, "-I", "-m", "kodelet", "claude", "install", "--scope", scope]
    done = subprocess.run(
        [*argv, "--transport", "http"], cwd=project, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return f"rotating its secret failed: {done.stderr.strip() or done.stdout.strip()}"
    return (
        f"{ROTATED} was left free while sessions could call it (its warm kodelet died "
        "without handing it over), so its secret may have been read: kodelet rotated "
        "the secret and wrote the new one into the settings; start the session again."
    )


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
        scope = argv[argv.index("--scope") + 1] if "--scope" in argv[2:-1] else "local"
        return ensure(os.environ, scope=scope)
    if argv[:2] == ["claude", "lost"] and len(argv) > 2:
        return lost_here(argv[2], argv[3:])
    if argv[:2] == ["claude", "here"]:
        # The native client found the warm kodelet there but not taking this call: it
        # is answered here at once, not offered to it a second time.
        rest = argv[2:]
        args = rest[2:] if rest[:2] == ["claude", "hook"] else rest
        return answer_here(args, sys.stdin.buffer.read(protocol.INPUT_CAP + 1))
    args = argv[2:] if argv[:2] == ["claude", "hook"] else argv
    if any(a in ("-h", "--help") for a in args):
        return answer_here(args, b"")
    raw = sys.stdin.buffer.read(protocol.INPUT_CAP + 1)
    env = os.environ
    if env.get(protocol.ENV_OFF, "") in ("0", "off", "false", "no"):
        return answer_here(args, raw)
    where: protocol.Where | None = None
    try:
        where = protocol.Where(protocol.find_project(os.getcwd(), env), env)
        payload = protocol.request("claude-hook", args, raw, env, where.ident)
        status, code, out, err = protocol.call(where.socket, payload, where.ident)
        if status != "ok":
            raise protocol.Unavailable(f"the warm kodelet refused the call ({status})", start=False)
    except protocol.Lost as exc:
        note(str(exc))
        return answer_lost(args, raw, str(exc))
    except protocol.Unavailable as exc:
        if str(exc) != protocol.NOT_YET:
            note(f"{exc}; answered in-process")
        code = answer_here(args, raw)
        if exc.start and where is not None:
            sys.stdout.flush()
            try:
                protocol.spawn(where, env)
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
