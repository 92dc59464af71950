"""The two clients of the warm kodelet an agent may run: the lean Python client and the
native one (``kodelet-hook``), the latter compiled here from the repository's source
with this interpreter and this kodelet package compiled in, as setup.py builds it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kodelet
import pytest

from .cli import CLIENT

__all__ = ["PACKAGE", "SOURCE", "build", "command", "run"]

PACKAGE = Path(kodelet.__file__).resolve().parent
SOURCE = PACKAGE / "warm" / "native" / "kodelet_hook.c"


def build(target: Path, package: str = str(PACKAGE), python: str = sys.executable) -> Path:
    """The native client at ``target``, with ``package`` and ``python`` compiled in."""
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the native client with")
    defines = [
        f"-DKODELET_PACKAGE={json.dumps(package)}",
        f"-DKODELET_PYTHON={json.dumps(python)}",
    ]
    done = subprocess.run(
        [
            compiler,
            "-O2",
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-o",
            str(target),
            str(SOURCE),
            *defines,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return target


def command(client: str | Path) -> list[str]:
    """How an entry starts ``client``: "python" (the lean client) or a native one's path."""
    if client == "python":
        return [sys.executable, "-I", "-S", CLIENT]
    return [str(client)]


def run(
    client: str | Path,
    data: Any,
    *args: str,
    cwd: Path,
    env: dict[str, str],
    raw: bytes | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[bytes]:
    """One hook call through ``client``: ``claude hook ARGS`` with ``data`` on stdin."""
    return subprocess.run(
        [*command(client), "claude", "hook", *args],
        input=json.dumps(data).encode() if raw is None else raw,
        capture_output=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        check=False,
    )
