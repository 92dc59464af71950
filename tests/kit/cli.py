"""The kodelet CLI in a real subprocess, as a user or an agent runs it."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kodelet.warm import client as _client

from tests.kit.repos import GIT_ENV

# The lean client an installed hook command runs (beside the warm kodelet's client).
CLIENT = os.path.join(os.path.dirname(os.path.realpath(_client.__file__)), "hook.py")


def run_kodelet(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    python: str = sys.executable,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """The CLI in a real subprocess, with HOME and KODELET_HOME from the isolation fixture."""
    full = {**os.environ, **GIT_ENV, **(env or {})}
    return subprocess.run(
        [python, "-m", "kodelet", *args],
        cwd=cwd,
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_before_tool_call(
    project: Path, payload: str, *extra: str, **kw: Any
) -> subprocess.CompletedProcess[str]:
    """``kodelet --cwd PROJECT hooks run before_tool_call [EXTRA] --payload -`` with
    ``payload`` on stdin; ``kw`` as for :func:`run_kodelet`."""
    args = ("--cwd", str(project), "hooks", "run", "before_tool_call", *extra)
    return run_kodelet(*args, "--payload", "-", stdin=payload, **kw)


def no_traceback(res: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in res.stderr + res.stdout


def in_terminal(*args: str, columns: int, cwd: Path | None = None) -> str:
    """The CLI's stdout as a terminal shows it: run on a pseudo-terminal, colours removed."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm", "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kodelet", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    text = b"".join(chunks).decode().replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def bridge(
    data: Any,
    *args: str,
    cwd: Path,
    lean: bool = False,
    env: dict[str, str] | None = None,
    python: str = sys.executable,
    client: str = CLIENT,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``kodelet claude hook ARGS`` with ``data`` on stdin, as an agent runs it: the full
    CLI, or with ``lean`` the lean client an installed entry runs (``client``, by
    ``python``: another install's)."""
    if lean:
        command = [python, "-I", "-S", client, "claude", "hook", *args]
    else:
        command = [python, "-m", "kodelet", "claude", "hook", *args]
    return subprocess.run(
        command,
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def decision(proc: subprocess.CompletedProcess[str]) -> str | None:
    """A Claude Code ``PreToolUse`` answer's permission reason, or None when the call may
    go ahead (no answer)."""
    assert proc.returncode == 0, proc.stderr
    if not proc.stdout.strip():
        return None
    out = json.loads(proc.stdout)
    return str(out["hookSpecificOutput"]["permissionDecisionReason"])


def venv_kodelet(
    venv_bin: Path, *args: str, cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """The ``kodelet`` script installed in ``venv_bin`` (first on PATH), as an agent's
    settings run it; fails the test on a non-zero exit unless ``check`` is false."""
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(venv_bin / "kodelet"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"kodelet {' '.join(args)}: {done.returncode} {done.stdout} {done.stderr}"
        )
    return done
