"""The kodelet CLI in a real subprocess, as a user or an agent runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.kit.repos import GIT_ENV


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
