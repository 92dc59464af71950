"""10,000 calls to one warm kodelet: no growth in its fds, threads or memory."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from kodelet.warm import control, protocol

from tests.kit.warm import pre_tool, warm_env, write_guard

pytestmark = pytest.mark.soak

CALLS = int(os.environ.get("KODELET_WARM_SOAK_CALLS", "10000"))


def usage(pid: int) -> tuple[int, int, int]:
    """(open fds, threads, resident KiB) of a process."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return fds, int(fields["Threads"]), int(fields["VmRSS"].split()[0])


def test_ten_thousand_calls_leave_no_growth(project: Path) -> None:
    (project / ".git").mkdir()
    write_guard(project)
    env = warm_env(CLAUDE_PROJECT_DIR=str(project))
    info = control.start(project, env)
    path = info["socket"]
    blocked = protocol.request("claude-hook", [], json.dumps(pre_tool(project)).encode(), env)
    allowed = protocol.request("claude-hook", [], json.dumps(pre_tool(project, "ls")).encode(), env)

    def call(i: int) -> None:
        status, code, out, _ = protocol.call(path, blocked if i % 2 else allowed)
        assert (status, code) == ("ok", 0)
        assert (b"no rm" in out) == bool(i % 2)

    warmup = max(1, CALLS // 10)
    for i in range(warmup):
        call(i)
    before = usage(info["pid"])
    for i in range(CALLS - warmup):
        call(i)
    # The handler thread of the last call may still be closing its connection.
    deadline = time.monotonic() + 5
    while (after := usage(info["pid"]))[1] > before[1] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert control.ask(path, "status")["calls"] == CALLS
    assert after[0] <= before[0], (before, after)
    assert after[1] <= before[1], (before, after)
    assert after[2] <= before[2] * 1.10 + 2048, (before, after)
