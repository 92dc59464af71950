"""The HTTP transport's port is never free to another local user while an installed
entry points at it: every way a warm kodelet used to exit hands the port over or keeps
it, with another user retrying the bind throughout; a holder that died anyway has its
secret rotated before the next session."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet.places import Places
from kodelet.warm import control, protocol
from kodelet.warm import http as warm_http

from tests.kit import processes
from tests.kit.another_user import needs_root, racing_for
from tests.kit.warm import pre_tool as guarded_call
from tests.kit.warm import wait_for, warm_env
from tests.kit.warm_http import installed, kodelet, post, session_start, settings

__all__ = ["installed"]


def started_again(project: Path, before: dict[str, Any]) -> dict[str, Any]:
    """The project's warm kodelet once it answers as a new program in the same process."""
    env = warm_env(CLAUDE_PROJECT_DIR=str(project))

    def again() -> dict[str, Any] | None:
        where = protocol.Where(str(project), env)  # never started here: asked only
        try:
            info = control.ask(where.socket, "status")
        except protocol.Unavailable:
            return None
        return info if info["started"] != before["started"] and info["http"] else None

    return wait_for(again, 120)  # type: ignore[no-any-return]


def still_guards(project: Path, record: warm_http.Record) -> None:
    status, out = post(record, json.dumps(guarded_call(project)).encode(), record.header())
    assert status == 200, out
    assert json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] == "no rm"


def bump(path: Path, seconds: int) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


@needs_root
@pytest.mark.parametrize("how", ["daemon stop", "SIGTERM", "kodelet upgraded on disk"])
def test_no_exit_frees_the_port_to_another_user(
    installed: tuple[Path, warm_http.Record], how: str
) -> None:
    """``daemon stop``, SIGTERM or an upgrade used to end the warm kodelet and free the
    port: another user bound it, got every call with the secret, and answered "allow".
    Now the process restarts in place with the listening socket, and its pid, the
    port and the guard all stay."""
    project, record = installed
    env = warm_env(CLAUDE_PROJECT_DIR=str(project))
    before = control.start(project, env)
    assert before["http"] == record.url
    code = Path(protocol.__file__)
    with racing_for(record.port) as attack:
        if how == "daemon stop":
            done = kodelet(project, "daemon", "stop")
            assert done.returncode == 0, done.stderr
            assert f"restarted warm kodelet {before['pid']}" in done.stdout
            assert f"127.0.0.1:{record.port}" in done.stdout
        elif how == "SIGTERM":
            os.kill(before["pid"], signal.SIGTERM)
        else:
            bump(code, 1)
        try:
            after = started_again(project, before)
            assert after["pid"] == before["pid"]
            still_guards(project, record)
        finally:
            if how == "kodelet upgraded on disk":
                bump(code, -1)
        if how == "kodelet upgraded on disk":
            assert started_again(project, after)["pid"] == before["pid"]
            still_guards(project, record)
    assert not attack.bound and attack.tries > 0
    assert warm_http.load(Places.resolve(project, None, warm_env())) == record  # no rotation


@needs_root
def test_a_gone_project_keeps_its_port_while_a_session_works_there(
    installed: tuple[Path, warm_http.Record],
) -> None:
    """The project folder removed used to end its warm kodelet; a session started there
    still calls the port. The port stays held by kodelet (which answers as the command
    transport would there) until no process works there any more; then the record goes
    and the port is released."""
    project, record = installed
    places = Places.resolve(project, None, warm_env())
    info = control.start(project, warm_env(CLAUDE_PROJECT_DIR=str(project)))
    session = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], cwd=project, stdin=subprocess.PIPE
    )
    try:
        with racing_for(record.port) as attack:
            shutil.rmtree(project)
            wait_for(lambda: "not exiting" in Path(info["log"]).read_text(), 60)
            assert warm_http.held_by_kodelet(record)
        assert not attack.bound and attack.tries > 0
    finally:
        session.communicate(b"", timeout=60)
    wait_for(lambda: not processes.alive(info["pid"]), 60)
    assert not warm_http.record_path(places).exists()
    assert not warm_http.held_by_kodelet(record, timeout=2)


def test_uninstalling_the_transport_lets_daemon_stop_stop_it(
    installed: tuple[Path, warm_http.Record],
) -> None:
    project, record = installed
    info = control.start(project, warm_env(CLAUDE_PROJECT_DIR=str(project)))
    done = kodelet(project, "claude", "uninstall", "--scope", "local")
    assert done.returncode == 0, done.stderr
    done = kodelet(project, "daemon", "stop")
    assert f"stopped warm kodelet {info['pid']}" in done.stdout, done.stdout
    assert not warm_http.held_by_kodelet(record, timeout=2)


def test_a_holder_killed_without_handing_over_has_the_secret_rotated(
    installed: tuple[Path, warm_http.Record],
) -> None:
    """SIGKILL cannot be caught: the port was free while sessions could call it, so the
    secret may have been read. The next warm kodelet rotates it; the next session start
    writes it into the settings and stops that session, which read the old one."""
    project, record = installed
    places = Places.resolve(project, None, warm_env())
    env = warm_env(CLAUDE_PROJECT_DIR=str(project))
    info = control.start(project, env)
    os.kill(info["pid"], signal.SIGKILL)
    wait_for(lambda: not processes.alive(info["pid"]), 60)
    again = control.start(project, env)
    rotated = warm_http.load(places)
    assert rotated is not None and rotated.port == record.port
    assert rotated.secret != record.secret and rotated.pending
    assert again["http_pending"] == ["local"]
    status, _ = post(record, json.dumps(guarded_call(project)).encode(), record.header())
    assert status == 403  # the old secret opens nothing
    ensure = settings(project)["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    stopped = session_start(ensure, project, env)
    assert stopped.returncode == 2
    assert json.loads(stopped.stdout)["continue"] is False
    assert "rotated the secret" in stopped.stderr
    entry = settings(project)["hooks"]["PreToolUse"][0]["hooks"][0]
    assert entry["headers"]["Authorization"] == f"Bearer {rotated.secret}"
    assert warm_http.load(places) == warm_http.Record(record.project, record.port, rotated.secret)
    assert session_start(ensure, project, env).returncode == 0
    still_guards(project, warm_http.load(places))  # type: ignore[arg-type]


def test_a_reboot_is_no_reason_to_rotate(installed: tuple[Path, warm_http.Record]) -> None:
    """Every session ended with the machine: a holder gone in an earlier boot exposed
    nothing, and the secret the settings carry stays."""
    project, record = installed
    places = Places.resolve(project, None, warm_env())
    lease = warm_http.record_path(places).with_suffix(".lease")
    lease.write_text(json.dumps({"pid": 999_999_999, "birth": "1", "boot": "an earlier boot"}))
    lease.chmod(0o600)
    assert warm_http.lost(places) is False
    info = control.start(project, warm_env(CLAUDE_PROJECT_DIR=str(project)))
    assert info["http"] == record.url and info["http_pending"] == []
    assert warm_http.load(places) == record
    assert json.loads(lease.read_text())["pid"] == info["pid"]


def test_install_says_what_it_cannot_guarantee(installed: tuple[Path, warm_http.Record]) -> None:
    project, _ = installed
    done = kodelet(project, "claude", "install", "--scope", "local", "--transport", "http")
    assert done.returncode == 0, done.stderr
    assert "note: the warm kodelet keeps the port" in done.stdout
    assert "SIGKILL" in done.stdout and "command transport" in done.stdout
