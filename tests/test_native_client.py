"""The warm kodelet's two clients, held to one protocol: each test runs against the lean
Python client and the native one (``kodelet-hook``, compiled from the repository's
source). Real client processes, real warm kodelets, real hook scripts; where a test
needs a warm kodelet that misbehaves (refuses, wedges, dies mid-call, lies about its
identity, belongs to another user), a listener on its socket plays it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kodelet.warm import control, protocol

from tests.kit.another_user import NOBODY, needs_root
from tests.kit.claude import reason
from tests.kit.native import PACKAGE, SOURCE, build, run
from tests.kit.warm import pre_tool, socket_path, wait_for, warm, warm_env

GUARD = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call ;;
  run) echo ran >> "$(dirname "$0")/../ran"
       if grep -q 'rm -rf'; then echo '{"blocked": true, "reason": "no rm"}'; fi ;;
esac
"""


@pytest.fixture(scope="session")
def native(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("native") / "kodelet-hook")


@pytest.fixture(params=["python", "native"])
def client(request: pytest.FixtureRequest) -> str | Path:
    if request.param == "python":
        return "python"
    return Path(request.getfixturevalue("native"))


@pytest.fixture
def guarded(project: Path) -> Path:
    (project / ".git").mkdir()
    guard = project / ".kodelet" / "hooks" / "guard"
    guard.write_text(GUARD)
    guard.chmod(0o755)
    return project


def ran(project: Path) -> int:
    """How often the guard ran (in-process or in a warm kodelet)."""
    marks = project / ".kodelet" / "ran"
    return len(marks.read_text().split()) if marks.exists() else 0


class Listener(threading.Thread):
    """A listener on the warm kodelet's socket that plays one that misbehaves:
    ``refuse`` (answers without taking the call), ``other`` (a warm kodelet of another
    version), ``wedge`` (takes the request and never acknowledges it), ``lose`` (takes
    the call, then dies), ``liar`` (answers "go ahead" as another identity after GO),
    ``answer`` (answers ``reply`` after GO)."""

    def __init__(self, path: Path, how: str, reply: bytes = b"", sock: socket.socket | None = None):
        super().__init__(daemon=True)
        if sock is None:
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(str(path))
            sock.listen(8)
        self.sock, self.how, self.reply = sock, how, reply
        self.frames: list[bytes] = []
        self.went = 0

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    self.frames.append(protocol.read_frame(conn, 2 * protocol.INPUT_CAP))
                    self.serve(conn)
                except (OSError, ValueError):
                    pass

    def serve(self, conn: socket.socket) -> None:
        ident = protocol.identity()
        if self.how == "refuse":
            conn.sendall(protocol.reply("refused: busy", 2, b"", b"", ident))
        elif self.how == "other":
            conn.sendall(protocol.reply("ok", 0, b"{}", b"", "1:0.0.1:0:/elsewhere"))
        elif self.how == "wedge":
            conn.recv(1)  # until the client gives up and closes
        else:
            conn.sendall(protocol.ACK)
            if conn.recv(1) != protocol.GO:
                return
            self.went += 1
            if self.how == "liar":
                conn.sendall(protocol.reply("ok", 0, b"{}", b"", "1:0.0.1:0:/elsewhere"))
            elif self.how == "answer":
                conn.sendall(self.reply)

    def close(self) -> None:
        """Stop listening: the accept under way ends too, and the socket file goes."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        path = self.sock.getsockname()
        self.sock.close()
        self.join(timeout=30)
        with contextlib.suppress(OSError):
            os.unlink(path)


@pytest.fixture
def listening(guarded: Path, warm_dir: Path) -> Iterator[object]:
    protocol.private_dir(str(warm_dir), create=True)
    made: list[Listener] = []

    def listen(how: str, reply: bytes = b"") -> Listener:
        listener = Listener(socket_path(guarded), how, reply)
        listener.start()
        made.append(listener)
        return listener

    yield listen
    for listener in made:
        listener.close()


def test_the_native_client_speaks_the_protocol_of_this_kodelet() -> None:
    source = SOURCE.read_text()
    constants = dict(re.findall(r'#define (\w+) "?([^"\n]*)"?\n', source))
    assert constants["PROTOCOL"] == protocol.PROTOCOL
    assert constants["MAGIC"] == protocol.MAGIC.decode()
    assert constants["NOT_YET"] == protocol.NOT_YET
    assert float(constants["ACK_WAIT"]) == protocol.ACK_WAIT
    assert eval(constants["INPUT_CAP"].replace("(size_t)", "")) == protocol.INPUT_CAP
    assert (ord(protocol.ACK), ord(protocol.GO)) == (ord("A"), ord("G"))
    assert "!= 'A'" in source and '"G", 1' in source


def test_the_first_call_starts_a_warm_kodelet_that_answers_the_next(
    client: str | Path, guarded: Path
) -> None:
    env = warm_env(KODELET_DAEMON_TRACE="1")
    assert reason(run(client, pre_tool(guarded), cwd=guarded, env=env)) == "no rm"
    info = wait_for(warm)[0]
    wait_for(lambda: control.ask(info["socket"], "status")["warmed"])
    proc = run(client, pre_tool(guarded), cwd=guarded, env=env)
    assert reason(proc) == "no rm"
    assert run(client, pre_tool(guarded, "ls"), cwd=guarded, env=env).stdout == b""
    status = control.ask(info["socket"], "status")
    assert status["calls"] == 2
    assert status["clients"] == {"python" if client == "python" else "native": 2}
    if client != "python":
        assert b"answered by the warm kodelet" in proc.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "kodelet", "daemon", "status"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert f"calls 2 ({'Python' if client == 'python' else 'native'} client 2)" in shown


def test_both_clients_find_the_same_warm_kodelet_with_settings_and_a_pinned_project(
    native: Path, guarded: Path
) -> None:
    deep = guarded / "src" / "deep"
    deep.mkdir(parents=True)
    env = warm_env(
        KODELET_DAEMON_TRACE="1",
        KODELET_ZEBRA="1",
        KODELET_APPLE="x y",
        KODELET_LOG_LEVEL="info",
        CLAUDE_PROJECT_DIR=str(guarded / "src"),
    )
    assert reason(run("python", pre_tool(guarded), cwd=deep, env=env)) == "no rm"
    info = wait_for(warm)[0]
    wait_for(lambda: control.ask(info["socket"], "status")["warmed"])
    proc = run(native, pre_tool(guarded), cwd=deep, env=env)
    assert reason(proc) == "no rm"
    assert b"answered by the warm kodelet" in proc.stderr
    assert len(warm()) == 1


def test_both_clients_send_the_same_request(native: Path, guarded: Path, listening: object) -> None:
    listener = listening("refuse")  # type: ignore[operator]
    env = warm_env(CLAUDE_PROJECT_DIR=str(guarded))
    args = ("--agent", "codex", "--scope", "user")
    data = {**pre_tool(guarded), "hook_event_name": "BeforeTool"}
    for client in ("python", native):
        run(client, data, *args, cwd=guarded, env=env)
    python_frame, native_frame = listener.frames[0], listener.frames[-1]
    assert native_frame == python_frame
    request = protocol.Request(native_frame)
    assert (request.ident, request.op) == (protocol.identity(), "claude-hook")
    assert request.args == list(args)
    assert json.loads(request.body) == data


@pytest.mark.parametrize("code", [0, 2, 1])
def test_an_answer_is_printed_as_the_warm_kodelet_gave_it(
    client: str | Path, guarded: Path, listening: object, code: int
) -> None:
    out, err = b'{"decision": "block", "reason": "\xc3\xa9\x00"}', b"a note\n"
    listener = listening(  # type: ignore[operator]
        "answer", protocol.reply("ok", code, out, err, protocol.identity())
    )
    proc = run(client, pre_tool(guarded), cwd=guarded, env=warm_env())
    assert (proc.returncode, proc.stdout, proc.stderr) == (code, out, err)
    assert listener.went == 1
    assert ran(guarded) == 0


@pytest.mark.parametrize("how", ["refuse", "other", "wedge"])
def test_a_warm_kodelet_that_does_not_take_the_call_leaves_it_to_the_guards_here(
    client: str | Path, guarded: Path, listening: object, how: str
) -> None:
    listener = listening(how)  # type: ignore[operator]
    env = warm_env(KODELET_DAEMON_ACK="0.3")
    assert reason(run(client, pre_tool(guarded), cwd=guarded, env=env)) == "no rm"
    assert listener.went == 0
    assert ran(guarded) == 1


@pytest.mark.parametrize("how", ["lose", "liar"])
def test_a_call_lost_after_go_is_blocked_and_never_run_again(
    client: str | Path, guarded: Path, listening: object, how: str
) -> None:
    listener = listening(how)  # type: ignore[operator]
    why = reason(run(client, pre_tool(guarded, "ls"), cwd=guarded, env=warm_env()))
    assert why is not None and "failed mid-call" in why
    assert listener.went == 1
    assert ran(guarded) == 0  # its hooks may have run there: never here again


def test_a_socket_swapped_for_a_link_is_never_connected(
    client: str | Path, guarded: Path, warm_dir: Path, tmp_path: Path
) -> None:
    protocol.private_dir(str(warm_dir), create=True)
    elsewhere = tmp_path / "elsewhere.sock"
    listener = Listener(elsewhere, "answer", protocol.reply("ok", 0, b"{}", b""))
    listener.start()
    try:
        socket_path(guarded).symlink_to(elsewhere)
        assert reason(run(client, pre_tool(guarded), cwd=guarded, env=warm_env())) == "no rm"
        assert listener.frames == []
    finally:
        listener.close()


def test_an_open_runtime_directory_is_refused(
    client: str | Path, guarded: Path, warm_dir: Path
) -> None:
    warm_dir.mkdir(mode=0o700)
    warm_dir.chmod(0o777)
    proc = run(client, pre_tool(guarded), cwd=guarded, env=warm_env())
    assert reason(proc) == "no rm"
    assert b"open to other users" in proc.stderr
    assert list(warm_dir.iterdir()) == []


@needs_root
def test_a_socket_or_a_listener_of_another_user_is_refused(
    client: str | Path, guarded: Path, warm_dir: Path
) -> None:
    protocol.private_dir(str(warm_dir), create=True)
    path = socket_path(guarded)
    planted = Listener(path, "answer", protocol.reply("ok", 0, b"{}", b""))
    os.chown(path, NOBODY, NOBODY)
    planted.start()
    try:
        assert reason(run(client, pre_tool(guarded), cwd=guarded, env=warm_env())) == "no rm"
        assert planted.frames == []
    finally:
        planted.close()
    # The socket file is this user's; the process listening on it is not.
    bound = socket.socket(socket.AF_UNIX)
    bound.bind(str(path))
    stranger = subprocess.Popen(
        [
            shutil.which("python3", path="/usr/bin:/bin") or sys.executable,
            "-I",
            "-c",
            STRANGER,
            str(bound.fileno()),
        ],
        pass_fds=[bound.fileno()],
        cwd="/",
        user=NOBODY,
        group=NOBODY,
        env={"PATH": "/usr/bin:/bin"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stranger.stdout is not None and stranger.stdout.readline() == "listening\n"
        proc = run(client, pre_tool(guarded), cwd=guarded, env=warm_env())
        assert reason(proc) == "no rm"
        assert b"another user" in proc.stderr
    finally:
        stranger.communicate("", timeout=30)
        bound.close()
    assert stranger.returncode == 0


STRANGER = """
import select, socket, sys
sock = socket.socket(fileno=int(sys.argv[1]))
sock.listen(4)
print("listening", flush=True)
while not select.select([sys.stdin], [], [], 0.01)[0]:
    if select.select([sock], [], [], 0)[0]:
        conn, _ = sock.accept()
        try:
            head = b""
            while not head.endswith(b"\\0"):
                byte = conn.recv(1)
                if not byte:
                    raise ValueError("hung up")
                head += byte
            size = int(head[:-1])
            while size > 0:
                chunk = conn.recv(size)
                if not chunk:
                    raise ValueError("hung up")
                size -= len(chunk)
            conn.sendall(b"A")  # takes the call
            conn.recv(1)
        except (OSError, ValueError):
            pass  # the client hung up first
        conn.close()
"""


def test_huge_input_is_answered_as_the_python_client_answers_it(
    native: Path, guarded: Path
) -> None:
    raw = b'{"hook_event_name": "PreToolUse", "x": "' + b"y" * protocol.INPUT_CAP + b'"}'
    env = warm_env()
    python = run("python", None, cwd=guarded, env=env, raw=raw)
    assert python.returncode != 0 or python.stdout
    done = run(native, None, cwd=guarded, env=env, raw=raw)
    assert (done.returncode, done.stdout, done.stderr) == (
        python.returncode,
        python.stdout,
        python.stderr,
    )


def test_without_its_python_client_the_native_client_blocks_the_call(
    tmp_path: Path, guarded: Path
) -> None:
    alone = build(tmp_path / "kodelet-hook", package=str(tmp_path / "gone"), python="/gone/py")
    proc = run(alone, pre_tool(guarded), cwd=guarded, env=warm_env())
    assert proc.returncode == 2
    assert b"cannot find kodelet's Python client" in proc.stderr
    assert b"the call is blocked" in proc.stderr
    assert ran(guarded) == 0


def test_a_call_the_native_client_does_not_know_is_the_python_clients(
    native: Path, guarded: Path
) -> None:
    env = warm_env(KODELET_DAEMON="0", KODELET_DAEMON_TRACE="1")
    proc = run(native, pre_tool(guarded), cwd=guarded, env=env)
    assert reason(proc) == "no rm"
    assert b"handed to the Python client: the warm kodelet is off" in proc.stderr
    helped = subprocess.run(
        [str(native), "claude", "hook", "--help"], capture_output=True, text=True, check=False
    )
    assert helped.returncode == 0 and "--agent" in helped.stdout
    assert PACKAGE.is_dir()
