"""The warm kodelet and its lean client, as an agent runs them: real client processes
(``python -I -S client.py claude hook``), real warm kodelets, real hook scripts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import kodelet
import pytest
from kodelet.places import find_project
from kodelet.testing import write_hook
from kodelet.warm import control, protocol

from tests.kit.warm import (
    CLIENT,
    GUARD,
    decision,
    hook,
    pre_tool,
    socket_path,
    started,
    wait_for,
    warm,
    warm_env,
    write_guard,
)


@pytest.fixture
def guarded(project: Path) -> Path:
    (project / ".git").mkdir()
    write_guard(project)
    return project


def test_the_version_the_client_carries_is_kodelets() -> None:
    assert kodelet.__version__ == protocol.VERSION


def test_the_project_is_the_nearest_folder_holding_kodelet_past_a_nested_repository(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / ".kodelet").mkdir(parents=True)
    (project / ".git").mkdir()
    lib = project / "vendor" / "lib"
    (lib / ".git").mkdir(parents=True)
    env = warm_env()
    assert protocol.find_project(str(lib / "src"), env) == str(project)
    assert find_project(lib, env) == project
    (lib / ".kodelet").mkdir()
    assert protocol.find_project(str(lib / "src"), env) == str(lib)
    bare = tmp_path / "bare"
    (bare / "sub" / ".git").mkdir(parents=True)
    assert protocol.find_project(str(bare / "sub" / "x"), env) == str(bare / "sub")


def test_the_client_finds_the_project_as_kodelet_does(tmp_path: Path) -> None:
    (tmp_path / "a" / ".git").mkdir(parents=True)
    (tmp_path / "a" / "b" / ".kodelet").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "d").mkdir(parents=True)
    (tmp_path / "e").mkdir()
    env = {"HOME": str(tmp_path / "h")}
    for cwd in ("a", "a/b", "a/b/c/d", "e"):
        start = tmp_path / cwd
        assert protocol.find_project(str(start), env) == str(find_project(start, env))
    pinned = {**env, "CLAUDE_PROJECT_DIR": str(tmp_path / "e")}
    assert protocol.find_project(str(tmp_path / "a"), pinned) == str(find_project(tmp_path, pinned))


def test_the_client_imports_no_kodelet_when_a_warm_kodelet_answers(guarded: Path) -> None:
    started(guarded)
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", CLIENT, "claude", "hook"],
        input=json.dumps(pre_tool(guarded)),
        capture_output=True,
        text=True,
        cwd=guarded,
        env=warm_env(),
        timeout=60,
    )
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()]
    assert "_socket" in imported
    assert not [
        m for m in imported if m.startswith(("kodelet", "site", "json", "socket", "__future__"))
    ]


def test_warm_answers_are_the_in_process_answers(guarded: Path) -> None:
    info = started(guarded)
    for command in ("rm -rf /", "ls"):
        here = hook(guarded, pre_tool(guarded, command), warm_env(KODELET_DAEMON="0"))
        there = hook(guarded, pre_tool(guarded, command))
        assert (there.returncode, there.stdout) == (here.returncode, here.stdout)
    assert control.ask(info["socket"], "status")["calls"] == 2


def test_sessions_share_one_runtime_when_no_hook_sees_the_transcript(guarded: Path) -> None:
    info = started(guarded)
    for session in ("a", "b", "c"):
        data = {**pre_tool(guarded), "transcript_path": str(guarded / f"{session}.jsonl")}
        assert decision(hook(guarded, data)) == "no rm"
    status = control.ask(info["socket"], "status")
    assert (status["calls"], status["loads"], status["reloads"]) == (3, 1, 0)


def test_status_stop_and_start_through_the_cli(guarded: Path) -> None:
    env = warm_env()
    run = [sys.executable, "-m", "kodelet", "daemon"]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*run, *args], capture_output=True, text=True, cwd=guarded, env=env, timeout=60
        )

    assert "no warm kodelet runs" in cli("status").stdout
    assert cli("start").returncode == 0
    listed = json.loads(cli("status", "--json").stdout)
    assert [i["project"] for i in listed] == [str(guarded)]
    assert {"pid", "age", "calls", "reloads", "last_reload", "log"} <= set(listed[0])
    assert "stopped warm kodelet" in cli("stop").stdout
    assert warm() == []


def test_a_hook_edited_while_it_runs_is_the_hook_that_answers(guarded: Path) -> None:
    started(guarded)
    write_guard(guarded, "edited guard")
    assert decision(hook(guarded, pre_tool(guarded))) == "edited guard"
    write_guard(guarded, "second guard", name="another")
    (guarded / ".kodelet" / "hooks" / "guard").unlink()
    assert decision(hook(guarded, pre_tool(guarded))) == "second guard"
    (guarded / ".kodelet" / "config.toml").write_text('[hooks."another"]\nenabled = false\n')
    assert decision(hook(guarded, pre_tool(guarded))) is None
    plugin = guarded / ".kodelet" / "plugins" / "acme@guards" / "hooks"
    plugin.mkdir(parents=True)
    (plugin / "pguard").write_text(GUARD.replace("MARK", "repo guard"))
    (plugin / "pguard").chmod(0o755)
    assert decision(hook(guarded, pre_tool(guarded))) == "repo guard"
    assert control.ask(warm()[0]["socket"], "status")["reloads"] == 4


def test_a_stale_socket_is_replaced(guarded: Path, warm_dir: Path) -> None:
    path = socket_path(guarded)
    protocol.private_dir(str(warm_dir), create=True)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens
    assert decision(hook(guarded, pre_tool(guarded))) == "no rm"
    infos = wait_for(warm)
    assert infos[0]["socket"] == str(path)
    assert decision(hook(guarded, pre_tool(guarded))) == "no rm"
    assert control.ask(path, "status")["calls"] == 1


def test_two_clients_racing_start_one_warm_kodelet(guarded: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-I", "-S", CLIENT, "claude", "hook"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=guarded,
            env=warm_env(),
        )
        for _ in range(4)
    ]
    outs = [p.communicate(json.dumps(pre_tool(guarded)), timeout=120)[0] for p in procs]
    assert all(json.loads(o)["hookSpecificOutput"]["permissionDecision"] == "deny" for o in outs)
    wait_for(warm)
    time.sleep(2)  # the losers of the race have had time to give up
    assert len(warm()) == 1
    pids = subprocess.run(["pgrep", "-f", "kodelet.warm.server"], capture_output=True, text=True)
    cmdlines = [Path(f"/proc/{pid}/cmdline").read_text() for pid in pids.stdout.split()]
    assert len([c for c in cmdlines if str(guarded) in c]) == 1


class Impostor(threading.Thread):
    """A listener on the warm kodelet's socket speaking the wire format with another
    identity: it answers "allow" to everything."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.calls = 0

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(1 << 20)
                self.calls += 1
                out = b"{}"
                conn.sendall(
                    b"\0".join([protocol.MAGIC, b"1:0.0.1:0:/elsewhere", b"ok", b"0", b"2"])
                    + b"\0"
                    + out
                )


def test_a_warm_kodelet_of_another_version_is_never_believed(guarded: Path, warm_dir: Path) -> None:
    protocol.private_dir(str(warm_dir), create=True)
    impostor = Impostor(socket_path(guarded))
    impostor.start()
    try:
        proc = hook(guarded, pre_tool(guarded))
        assert decision(proc) == "no rm"
        assert impostor.calls == 1
        assert "another kodelet version" in proc.stderr
    finally:
        impostor.sock.close()


@pytest.mark.skipif(os.getuid() != 0, reason="planting as another user needs root")
def test_a_directory_or_socket_planted_by_another_user_is_refused(
    guarded: Path, warm_dir: Path
) -> None:
    warm_dir.mkdir(mode=0o700)
    os.chown(warm_dir, 4242, 4242)
    proc = hook(guarded, pre_tool(guarded))
    assert decision(proc) == "no rm"
    assert "not to this user" in proc.stderr
    time.sleep(1)
    assert list(warm_dir.iterdir()) == []  # nothing started in someone else's directory
    os.chown(warm_dir, 0, 0)
    planted = socket.socket(socket.AF_UNIX)
    planted.bind(str(socket_path(guarded)))
    planted.listen(1)
    os.chown(socket_path(guarded), 4242, 4242)
    try:
        proc = hook(guarded, pre_tool(guarded))
        assert decision(proc) == "no rm"
        assert "not this user's socket" in proc.stderr
    finally:
        planted.close()


def test_an_open_directory_is_refused(guarded: Path, warm_dir: Path) -> None:
    warm_dir.mkdir(mode=0o700)
    warm_dir.chmod(0o777)
    proc = hook(guarded, pre_tool(guarded))
    assert decision(proc) == "no rm"
    assert "open to other users" in proc.stderr


def test_it_exits_when_its_project_is_removed(guarded: Path) -> None:
    info = started(guarded)
    import shutil

    shutil.rmtree(guarded)
    wait_for(lambda: control._gone(info["pid"]), timeout=15)
    log = Path(info["log"]).read_text()
    assert "project directory is gone" in log


def test_it_exits_when_idle(guarded: Path) -> None:
    env = warm_env(KODELET_DAEMON_IDLE="1")
    assert decision(hook(guarded, pre_tool(guarded), env)) == "no rm"
    info = wait_for(lambda: warm(env))[0]
    wait_for(lambda: control._gone(info["pid"]), timeout=15)
    assert "idle for 1 s" in Path(info["log"]).read_text()
    assert not Path(info["socket"]).exists()


def test_a_hanging_hook_holds_only_its_own_call(guarded: Path) -> None:
    hang = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call ;;
  run) input=$(cat)
    case "$input" in *HANG-NOW*) sleep 30 ;; esac
    case "$input" in *"rm -rf"*) echo '{"blocked": true, "reason": "no rm"}' ;; esac ;;
esac
"""
    (guarded / ".kodelet" / "hooks" / "guard").write_text(hang)
    (guarded / ".kodelet" / "config.toml").write_text("[hooks]\ntimeout = 4\n")
    started(guarded)
    result: dict[str, subprocess.CompletedProcess[str]] = {}
    thread = threading.Thread(
        target=lambda: result.update(p=hook(guarded, pre_tool(guarded, "HANG-NOW; rm -rf /")))
    )
    began = time.monotonic()
    thread.start()
    time.sleep(0.5)
    assert decision(hook(guarded, pre_tool(guarded))) == "no rm"
    assert time.monotonic() - began < 4  # answered while the other call hangs
    thread.join(60)
    assert time.monotonic() - began < 20  # the hanging hook's timeout held
    assert result["p"].returncode == 0


def test_a_call_for_another_project_is_answered_by_its_own_guards(
    guarded: Path, tmp_path: Path
) -> None:
    started(guarded)
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / ".kodelet" / "hooks").mkdir(parents=True)
    write_guard(other, "other guard")
    data = pre_tool(other)
    proc = hook(guarded, data, warm_env(CLAUDE_PROJECT_DIR=str(guarded)))
    # CLAUDE_PROJECT_DIR names the project: the guarded one answers, as in-process.
    assert decision(proc) == "no rm"
    proc = subprocess.run(
        [sys.executable, "-I", "-S", CLIENT, "claude", "hook"],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        cwd=guarded,
        env=warm_env(),
        timeout=60,
    )
    # The input's cwd is another project than the one the client found: answered as
    # kodelet does in-process, by the input's project's guards.
    assert decision(proc) == "other guard"


HOOKS_RUN = [sys.executable, "-m", "kodelet", "hooks", "run", "before_tool_call"]


def test_hooks_run_daemon_gives_the_in_process_result_and_trace(guarded: Path) -> None:
    payload = json.dumps({"tool_name": "bash", "tool_input": {"command": "rm -rf /"}})

    def hooks_run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "kodelet",
                "hooks",
                "run",
                "before_tool_call",
                "-p",
                "-",
                "--trace",
                *extra,
            ],
            input=payload,
            capture_output=True,
            text=True,
            cwd=guarded,
            env=warm_env(),
            timeout=120,
        )

    here, there = hooks_run(), hooks_run("--daemon", "--exit-code")
    assert there.stdout == here.stdout == '{"blocked": true, "reason": "no rm"}\n'
    assert there.returncode == 2

    def names(proc: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
        recs = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
        return [(r["name"], r["outcome"]) for r in recs]

    assert names(there) == names(here) == [("guard", "blocked")]
    assert control.ask(warm()[0]["socket"], "status")["calls"] == 1
    refused = hooks_run("--daemon", "--timeout", "3")
    assert refused.returncode == 2
    assert "--timeout cannot be used with --daemon" in refused.stderr


SERVED = """#!/bin/sh
case "$1" in
  hook) echo "before_tool_call jsonl";;
  serve) echo $$ > "MARKER.tmp" && mv "MARKER.tmp" "MARKER"; while read line; do echo '{}'; done;;
  run) cat > /dev/null;;
esac
"""


def test_the_runtime_and_its_hook_servers_are_ready_before_the_first_call(guarded: Path) -> None:
    """The warm kodelet built its runtime and started its hook servers on its first
    call, so its second call still paid for them."""
    marker = guarded / "served"
    write_hook(guarded / ".kodelet" / "hooks", "served", SERVED.replace("MARKER", str(marker)))
    info = started(guarded)
    wait_for(marker.exists)
    status = control.ask(info["socket"], "status")
    assert (status["calls"], status["loads"]) == (0, 1)
    server = marker.read_text()
    assert decision(hook(guarded, pre_tool(guarded))) == "no rm"
    status = control.ask(info["socket"], "status")
    assert (status["calls"], status["loads"]) == (1, 1)
    assert marker.read_text() == server  # the call was answered by the server started first


FIRST_CALL = """
import json, os, sys
from pathlib import Path
from kodelet.warm.server import Server

package = os.path.dirname(os.path.realpath(sys.modules["kodelet"].__file__))
server = Server(Path(sys.argv[1]), os.environ)
server.warm_up()
seen, listening = [], [True]
def heard(event, args):
    if not listening:
        return
    if event == "import":
        seen.append(args[0])
    elif event == "compile":  # code made at run time (attrs', cattrs' and the bounds')
        seen.append(f"compiled for {args[1]}")
    elif event == "open" and isinstance(args[0], str):
        if os.path.realpath(args[0]).startswith(package + os.sep):
            seen.append(args[0])
sys.addaudithook(heard)
out, code, _ = server.answer(sys.stdin.buffer.read(), ["--scope", "local"], dict(os.environ))
listening.clear()
server.kill_all()
for lent in server._runtimes.values():
    lent.runtime.close()
print(json.dumps({"read": seen, "out": out, "code": code}))
"""


def test_the_first_call_after_the_warm_up_imports_compiles_and_reads_nothing_of_kodelet(
    guarded: Path,
) -> None:
    """The warm-up built the runtime and started the hook servers, but the first call
    still imported the answer's code (the bridge, the agents' dialects), read the
    recommended rule set again for the rules' note and made the codecs of the payload
    and of the hooks' answers: a tenth of a second or more."""
    (guarded / ".kodelet" / "rules.toml").write_text('use = ["recommended"]\n')
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALL, str(guarded)],
        input=json.dumps(pre_tool(guarded)),
        capture_output=True,
        text=True,
        env={**warm_env(), "CLAUDE_PROJECT_DIR": str(guarded)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout.splitlines()[-1])
    assert json.loads(first["out"])["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert first["read"] == []
