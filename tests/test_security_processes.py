"""Attacks on hook processes (issue 17, items 11, 12, 13, 21, 22 and the query cap):
cancelled async calls, signals to the host, stderr floods, escaped children and forks.
Real processes throughout; each test reproduces the attack first."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from kodelet import load_runtime
from kodelet.adapters.persistent import PersistentHook
from kodelet.events import Event
from kodelet.payloads import BeforeToolCallPayload
from kodelet.process import STDERR_TAIL, ProcessGroups, run_process
from kodelet.testing import discovered, executables, write_hook
from kodelet.trace import Outcome

from tests.kit.processes import alive, kill_sessions, wait_for, with_default_signals

SERVER = f"""#!{sys.executable}
import os, subprocess, sys, time
from kodelet import hookkit


def handle(p):
    cmd = p["tool_input"].get("command", "")
    pidfile = p["tool_input"].get("pidfile")
    if pidfile:
        child = subprocess.Popen(["sleep", "600"])
        with open(pidfile, "w") as fh:
            fh.write(f"{{os.getpid()}} {{child.pid}}")
    if cmd == "hang":
        time.sleep(600)
    if cmd == "flood":
        chunk = b"x" * 65536
        for _ in range(320):  # 20 MiB on stderr, not one newline
            os.write(2, chunk)
    if cmd == "escape":
        escaped = subprocess.Popen(["setsid", "sleep", "30"], stdout=subprocess.DEVNULL)
        with open(p["tool_input"]["escaped"], "a") as fh:
            fh.write(f"{{escaped.pid}} ")
        os._exit(3)
    return None


hookkit.main("before_tool_call", handle)
"""


def server_hook(tmp_path: Path, **kw: object) -> PersistentHook:
    path = write_hook(tmp_path / "hooks", "server", SERVER)
    env = {**os.environ, "KODELET_HOOK_PROTOCOLS": "jsonl"}
    return PersistentHook("server", path, Event.BEFORE_TOOL_CALL, env=env, **kw)  # type: ignore[arg-type]


def payload(**tool_input: str) -> dict[str, object]:
    return {"event": "before_tool_call", "tool_name": "bash", "tool_input": tool_input}


# -- item 11: cancelling an async persistent call stops it at once ---------------------


def test_cancelling_adispatch_kills_a_persistent_call_at_once(project: Path) -> None:
    """The attack: arun was to_thread(run), so a cancelled adispatch still waited out
    the hook's 20 s timeout, and its server kept running meanwhile."""
    write_hook(project / ".kodelet" / "hooks", "server", SERVER)
    pidfile = project / "pids"
    rt = load_runtime(cwd=project, entry_points=False, builtins=False, timeout=20)
    (exe,) = executables(rt)
    assert isinstance(exe, PersistentHook)
    hang = BeforeToolCallPayload(
        tool_name="bash", tool_input={"command": "hang", "pidfile": str(pidfile)}
    )

    async def go() -> float:
        task = asyncio.create_task(rt.adispatch(hang))
        while not pidfile.exists() or not pidfile.read_text():
            await asyncio.sleep(0.02)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    with rt:
        took = asyncio.run(go())
        server, child = map(int, pidfile.read_text().split())
        assert took < 2.0, f"cancellation took {took:.1f}s"
        assert not alive(server) and wait_for(lambda: not alive(child))
        d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={"command": "ls"}))
        assert d.trace[0].outcome is Outcome.NO_ACTION  # restarted on next use


# -- item 12: SIGTERM / SIGHUP to the host reach every hook group ------------------------

HOST = """
import os, sys, threading, time
from pathlib import Path
from kodelet.adapters.persistent import PersistentHook
from kodelet.process import ProcessGroups, killing_on_signals, run_process
from kodelet.events import Event

hook_path, per_call, pids = sys.argv[1], sys.argv[2], Path(sys.argv[3])
groups = ProcessGroups()
env = {**os.environ, "KODELET_HOOK_PROTOCOLS": "jsonl"}
with killing_on_signals(groups):
    server = PersistentHook("server", Path(hook_path), Event.BEFORE_TOOL_CALL, env=env,
                            groups=groups)
    payload = {"event": "before_tool_call", "tool_name": "bash",
               "tool_input": {"pidfile": str(pids) + ".server"}}
    server.run(payload, timeout=20)
    print("ready", flush=True)
    run_process([per_call], b"", cwd=None, env=env, timeout=600, groups=groups)
"""

PER_CALL = """#!/bin/sh
sleep 600 &
echo "$$ $!" > "{pidfile}"
wait
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_host_kills_every_hook_group(tmp_path: Path, sig: signal.Signals) -> None:
    """The attack: SIGTERM or SIGHUP to the host left per-call and persistent hooks,
    and their children, running orphaned; only SIGINT was handled."""
    pids = tmp_path / "pids"
    server_path = write_hook(tmp_path / "hooks", "server", SERVER)
    per_call = write_hook(tmp_path / "hooks", "per-call", PER_CALL.format(pidfile=pids))
    host = subprocess.Popen(
        with_default_signals(
            [sys.executable, "-c", HOST, str(server_path), str(per_call), str(pids)]
        ),
        stdout=subprocess.PIPE,
        text=True,
    )
    hook_pids: list[int] = []
    try:
        assert host.stdout is not None and host.stdout.readline().strip() == "ready"
        hook_pids = [int(p) for p in Path(f"{pids}.server").read_text().split()]
        assert wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2)
        hook_pids += [int(p) for p in pids.read_text().split()]
        assert all(alive(p) for p in hook_pids)
        host.send_signal(sig)
        assert host.wait(60) == -sig  # the signal still does what it did: the host dies
        assert wait_for(lambda: not any(alive(p) for p in hook_pids)), hook_pids
    finally:
        host.kill()
        host.wait()
        assert kill_sessions(hook_pids)


LATE_HOST = """
import os, signal, sys
from pathlib import Path
from kodelet.process import ProcessGroups, killing_on_signals, run_process


class Late(ProcessGroups):
    def add(self, pid):
        Path(sys.argv[2]).write_text(str(pid))
        os.kill(os.getpid(), signal.SIGTERM)  # handled at the next call, before the add
        super().add(pid)


groups = Late()
with killing_on_signals(groups):
    run_process([sys.argv[1]], b"", cwd=None, env=dict(os.environ), timeout=600, groups=groups)
"""


def test_a_signal_while_a_hook_starts_kills_that_hook_too(tmp_path: Path) -> None:
    """The race a loaded machine showed: a SIGTERM handled after a hook's fork but
    before its group was tracked killed every other group and ended the host, leaving
    that hook running orphaned."""
    pid_file = tmp_path / "started"
    per_call = write_hook(tmp_path / "hooks", "per-call", PER_CALL.format(pidfile=tmp_path / "x"))
    host = subprocess.Popen(
        with_default_signals([sys.executable, "-c", LATE_HOST, str(per_call), str(pid_file)])
    )
    pid = 0
    try:
        assert host.wait(60) == -signal.SIGTERM
        pid = int(pid_file.read_text())
        assert wait_for(lambda: not alive(pid))
    finally:
        host.kill()
        host.wait()
        assert kill_sessions([pid])


def test_process_groups_track_live_processes_only(tmp_path: Path) -> None:
    groups = ProcessGroups()
    seen: list[int] = []
    hook = write_hook(tmp_path, "h", '#!/bin/sh\necho $$ > "$0.pid"\n')

    def watch() -> None:
        while not Path(f"{hook}.pid").exists():
            seen.append(len(groups))
            time.sleep(0.001)

    t = threading.Thread(target=watch)
    t.start()
    run_process([str(hook)], b"", cwd=None, env=dict(os.environ), timeout=5, groups=groups)
    t.join()
    assert len(groups) == 0


# -- item 13: a persistent server's stderr without newlines is bounded ------------------


def test_a_stderr_flood_without_newlines_is_bounded(tmp_path: Path) -> None:
    """The attack: a server printing stderr without newlines grew the host by ~1 MB/s
    and kept a core busy with one-byte reads."""
    hook = server_hook(tmp_path)
    try:
        started = time.monotonic()
        assert hook.run(payload(command="flood"), timeout=30) == {}
        assert time.monotonic() - started < 10
        server = hook._slots[0].server
        assert server is not None
        assert len(server._tail) <= STDERR_TAIL and len(server._line) <= STDERR_TAIL
        assert hook.run(payload(command="ls"), timeout=10) == {}
    finally:
        hook.close()


# -- item 21: no thread per restart, whatever holds stderr ----------------------------


def test_restarts_with_an_escaped_child_holding_stderr_leak_no_thread(tmp_path: Path) -> None:
    """The attack: a server whose setsid'd child kept stderr open leaked one stderr pump
    thread per restart (50 after 50 restarts, surviving close())."""
    hook = server_hook(tmp_path)
    escaped = tmp_path / "escaped"
    before = threading.active_count()
    try:
        for _ in range(10):
            with pytest.raises(Exception, match="exited with status 3"):
                hook.run(payload(command="escape", escaped=str(escaped)), timeout=10)
            hook._retry_at = 0.0  # skip the backoff: this test is about threads
        assert threading.active_count() <= before
    finally:
        hook.close()
        for pid in escaped.read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    assert threading.active_count() <= before


# -- item 22: a forked child's exit leaves the parent's server alone --------------------

FORK = """
import os, sys
from pathlib import Path
from kodelet.adapters.persistent import PersistentHook
from kodelet.events import Event

env = {**os.environ, "KODELET_HOOK_PROTOCOLS": "jsonl"}
hook = PersistentHook("server", Path(sys.argv[1]), Event.BEFORE_TOOL_CALL, env=env)
payload = {"event": "before_tool_call", "tool_name": "bash", "tool_input": {}}
hook.run(payload, timeout=20)
first = hook.pid
child = os.fork()
if child == 0:
    sys.exit(0)  # runs the finalizers, as any normal exit does
os.waitpid(child, 0)
hook.run(payload, timeout=20)
print(first == hook.pid, hook.starts)
hook.close()
"""


def test_a_forked_childs_exit_does_not_kill_the_parents_server(tmp_path: Path) -> None:
    """The attack: os.fork() then sys.exit(0) in the child ran the finalizer that
    killed the parent's persistent server."""
    path = write_hook(tmp_path / "hooks", "server", SERVER)
    out = subprocess.run(
        [sys.executable, "-c", FORK, str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "1"]


def test_process_groups_do_nothing_in_a_forked_child(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os, subprocess, sys
        from kodelet.process import ProcessGroups
        groups = ProcessGroups()
        proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
        groups.add(proc.pid)
        child = os.fork()
        if child == 0:
            groups.kill_all()
            os._exit(0)
        os.waitpid(child, 0)
        print(proc.poll())
        groups.kill_all()
        print(proc.wait())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["None", "-9"], out.stderr


# -- the `hook` query's overflow names its own cap --------------------------------------


def test_the_hook_query_overflow_names_its_own_cap(project: Path) -> None:
    write_hook(
        project / ".kodelet" / "hooks",
        "chatty",
        '#!/bin/sh\nif [ "$1" = hook ]; then head -c 100000 /dev/zero | tr "\\0" x; fi\n',
    )
    with load_runtime(cwd=project, entry_points=False, builtins=False) as rt:
        (hook,) = discovered(rt)
    assert hook.status == "skipped"
    assert "output exceeded 4096 bytes" in (hook.reason or ""), hook.reason
    res = run_process(
        ["sh", "-c", "head -c 10000 /dev/zero"], b"", cwd=None, env={}, timeout=5, stdout_cap=100
    )
    assert res.failure(5) == "output exceeded 100 bytes"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_cli_kills_its_running_hook(project: Path, sig: signal.Signals) -> None:
    """The same attack on the CLI: `kodelet hooks run` killed while a hook hangs."""
    pidfile = project / "hook.pid"
    write_hook(
        project / ".kodelet" / "hooks",
        "hang",
        f'#!/bin/bash\ncase "$1" in hook) echo before_tool_call;; '
        f"run) echo $$ > {pidfile}; sleep 60;; esac\n",
    )
    cli = subprocess.Popen(
        with_default_signals([sys.executable, "-m", "kodelet", "--cwd", str(project), "hooks",
                              "run", "before_tool_call", "--payload", "-"]),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    pid = 0
    try:
        assert cli.stdin is not None
        cli.stdin.write(b'{"tool_name": "bash"}')
        cli.stdin.close()
        assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip())
        pid = int(pidfile.read_text())
        cli.send_signal(sig)
        assert cli.wait(60) == -sig
        assert wait_for(lambda: not alive(pid))
    finally:
        cli.kill()
        cli.wait()
        assert kill_sessions([pid])
