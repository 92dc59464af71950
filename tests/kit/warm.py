"""What the warm kodelet's tests share: a guard that blocks ``rm -rf`` with a reason of
the test's choosing, and an environment in which the warm kodelet is on."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kodelet.places import find_project
from kodelet.testing import write_hook
from kodelet.warm import control, protocol

from . import processes
from .claude import pre_tool
from .cli import CLIENT, bridge, decision

__all__ = [
    "CLIENT",
    "GUARD",
    "decision",
    "hook",
    "pre_tool",
    "socket_path",
    "started",
    "wait_for",
    "warm",
    "warm_env",
    "write_guard",
]

GUARD = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'rm -rf'; then echo '{"blocked": true, "reason": "MARK"}'; fi ;;
esac
"""


def write_guard(project: Path, mark: str = "no rm", name: str = "guard") -> Path:
    return write_hook(project / ".kodelet" / "hooks", name, GUARD.replace("MARK", mark))


def warm_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KODELET_DAEMON"}
    env.update(extra)
    return env


def hook(
    project: Path,
    data: dict[str, Any],
    env: dict[str, str] | None = None,
    python: str = sys.executable,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """One call through the lean client, run by ``python``, with the warm kodelet on
    unless ``env`` says."""
    return bridge(
        data, cwd=project, env=env or warm_env(), lean=True, python=python, timeout=timeout
    )


def wait_for(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """``check()``'s value once it is true; the test fails if it is not within ``timeout``."""
    value = processes.wait_for(check, timeout)
    if not value:
        raise AssertionError(f"not within {timeout} s")
    return value


def warm(env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return [i for i in control.running(env or warm_env()) if "pid" in i]


def socket_path(project: Path, env: dict[str, str] | None = None) -> Path:
    env = env or warm_env()
    name = protocol.key(str(find_project(project, env)), env)
    return Path(protocol.runtime_dir(env)) / f"{name}.sock"


def started(project: Path) -> dict[str, Any]:
    """The first call answers in-process and starts the warm kodelet; wait until it
    answers and has built its runtime (so a test's edits are not seen half-made by the
    start's own check, which would count a reload of its own)."""
    assert decision(hook(project, pre_tool(project))) == "no rm"
    infos = wait_for(warm)
    assert len(infos) == 1
    wait_for(lambda: control.ask(infos[0]["socket"], "status")["warmed"])
    return dict(infos[0])
