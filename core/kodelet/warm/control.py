"""Starting, finding and stopping warm kodelets: what ``kodelet daemon`` does."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import protocol

__all__ = ["ask", "dispatch", "running", "start", "stop", "stop_all"]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def ask(socket_path: str | Path, op: str) -> dict[str, Any]:
    """One control request (``status`` or ``stop``) to the warm kodelet at ``socket_path``."""
    status, _, out, _ = protocol.call(str(socket_path), protocol.request(op, [], b"", os.environ))
    if status != "ok":
        raise protocol.Unavailable(status, start=False)
    return json.loads(out) if out else {}


def running(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every warm kodelet of this user: its status, or the problem with its socket."""
    env = os.environ if env is None else env
    directory = Path(protocol.runtime_dir(env))
    try:
        protocol.private_dir(str(directory), create=False)
        sockets = sorted(directory.glob("*.sock"))
    except protocol.Unavailable:
        return []
    found = []
    for path in sockets:
        try:
            found.append(ask(path, "status"))
        except protocol.Unavailable as exc:
            found.append({"socket": str(path), "problem": str(exc)})
    return found


def stop(info: Mapping[str, Any], wait: float = 10.0) -> bool:
    """Stop one warm kodelet (asked, then SIGTERM, then SIGKILL); True once it is gone.
    One holding the port of an installed HTTP entry restarts instead (:func:`restarted`):
    killing it would leave the port free for another local user to take."""
    pid = int(info["pid"])
    with contextlib.suppress(protocol.Unavailable):
        if ask(info["socket"], "stop").get("keeps"):
            return False
    deadline = time.monotonic() + wait
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        while time.monotonic() < deadline:
            if _gone(pid):
                return True
            time.sleep(0.05)
        deadline = time.monotonic() + 2.0
    return _gone(pid)


def stop_all(env: Mapping[str, str] | None = None) -> int:
    """Stop every warm kodelet of this user (in ``env``'s directory); how many were (one
    that restarted, keeping an HTTP port, was not)."""
    count = 0
    for info in running(env):
        if "pid" in info and stop(info):
            count += 1
    return count


def keeps_port(info: Mapping[str, Any]) -> list[str]:
    """The HTTP URLs ``info``'s warm kodelet holds for installed entries."""
    return [u for u in (info.get("http"), info.get("http_user")) if u and u.startswith("http")]


def start(
    project: Path, env: Mapping[str, str] | None = None, wait: float = 30.0
) -> dict[str, Any]:
    """The warm kodelet of ``project``, started if none answers, once it answers."""
    env = dict(os.environ if env is None else env)
    where = protocol.Where(str(project), env)
    return json.loads(protocol.wait_started(where, env, wait))  # type: ignore[no-any-return]


def dispatch(
    project: Path,
    event: str,
    payload: bytes,
    transcript: str = "",
    env: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, Any] | None, str]:
    """One kodelet payload dispatched by the project's warm kodelet (started if need be):
    (code, {"result", "trace"} or None, error text)."""
    env = dict(os.environ if env is None else env)
    info = start(project, env)
    status, code, out, err = protocol.call(
        info["socket"], protocol.request("dispatch", [event, transcript], payload, env)
    )
    if status != "ok":
        raise protocol.Unavailable(status, start=False)
    return code, (json.loads(out) if out else None), err.decode("utf-8", "replace")
