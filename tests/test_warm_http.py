"""The warm kodelet over loopback HTTP: only the secret's holder gets an answer, and
install keeps the secret where only its user can read it."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

from kodelet.claude.installed import is_own
from kodelet.places import Places
from kodelet.warm import control, protocol
from kodelet.warm import http as warm_http

from tests.kit.warm import pre_tool, warm_env, write_guard
from tests.kit.warm_http import installed, kodelet, post, session_start, settings

__all__ = ["installed"]


def test_a_caller_without_the_secret_is_refused(installed: tuple[Path, warm_http.Record]) -> None:
    project, record = installed
    info = control.start(project, warm_env(CLAUDE_PROJECT_DIR=str(project)))
    assert info["http"] == record.url
    body = json.dumps(pre_tool(project)).encode()
    for auth in (None, "Bearer wrong", record.header() + "x", record.secret):
        status, out = post(record, body, auth)
        assert status == 403 and b"no rm" not in out
    status, out = post(record, body, record.header())
    assert status == 200
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_kodelets_own_failure_is_a_non_2xx_so_on_failure_blocks(
    installed: tuple[Path, warm_http.Record],
) -> None:
    project, record = installed
    control.start(project, warm_env(CLAUDE_PROJECT_DIR=str(project)))
    status, out = post(record, b"{not json", record.header())
    # A failure with no event known: the bridge's exit 2, here a 500 (onFailure blocks).
    assert status == 500
    (project / ".kodelet" / "config.toml").write_text('[hooks]\nfail_closed = "true"\n')
    status, out = post(record, json.dumps(pre_tool(project, "ls")).encode(), record.header())
    assert status == 200
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "config" in answer["permissionDecisionReason"]


def test_install_keeps_the_secret_private(installed: tuple[Path, warm_http.Record]) -> None:
    project, record = installed
    path = project / ".claude" / "settings.local.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    places = Places.resolve(project, None, warm_env())
    kept = warm_http.record_path(places)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    hooks = settings(project)["hooks"]
    entry = hooks["PreToolUse"][0]["hooks"][0]
    assert entry == {
        "type": "http",
        "url": record.url,
        "headers": {"Authorization": record.header()},
        "onFailure": "block",
    }
    assert hooks["SessionStart"][0]["hooks"][0]["command"].endswith("claude ensure --scope local")
    assert all(is_own(h) for groups in hooks.values() for g in groups for h in g["hooks"])
    again = kodelet(project, "claude", "install", "--scope", "local", "--transport", "http")
    assert again.returncode == 0
    assert settings(project)["hooks"]["PreToolUse"][0]["hooks"][0]["url"] == record.url


def test_the_record_outlives_a_kodelet_upgrade(installed: tuple[Path, warm_http.Record]) -> None:
    """Reinstalling kodelet gives its warm kodelets a new identity; the port and secret
    written into the settings file must still be found."""
    project, record = installed
    places = Places.resolve(project, None, warm_env())
    code = Path(protocol.__file__)
    before = code.stat()
    os.utime(code, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    try:
        assert warm_http.load(places) == record
    finally:
        os.utime(code, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_record_another_user_could_write_is_ignored(
    installed: tuple[Path, warm_http.Record],
) -> None:
    project, _ = installed
    places = Places.resolve(project, None, warm_env())
    os.chmod(warm_http.record_path(places), 0o644)
    assert warm_http.load(places) is None


def test_the_shared_project_file_never_gets_a_secret(project: Path) -> None:
    done = kodelet(project, "claude", "install", "--transport", "http")
    assert done.returncode == 2
    assert "--scope local or --scope user" in done.stderr
    assert not (project / ".claude" / "settings.json").exists()


def test_status_names_the_transport_and_uninstall_removes_every_entry(
    installed: tuple[Path, warm_http.Record],
) -> None:
    project, record = installed
    status = json.loads(kodelet(project, "claude", "status", "--json").stdout)
    local = next(s for s in status["scopes"] if s["scope"] == "local")
    assert (local["transport"], local["urls"]) == ("http", [record.url])
    assert "transport: http" in kodelet(project, "claude", "status").stdout
    assert kodelet(project, "claude", "uninstall", "--scope", "local").returncode == 0
    assert not (project / ".claude" / "settings.local.json").exists()


def nested_repository(project: Path) -> Path:
    """``vendor/lib``, a repository of its own inside the project (``git init``)."""
    lib = project / "vendor" / "lib"
    lib.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(lib)], check=True, capture_output=True)
    return lib


def reason(record: warm_http.Record, project: Path, cwd: Path, session: str) -> str | None:
    data = {**pre_tool(project), "cwd": str(cwd), "session_id": session}
    status, out = post(record, json.dumps(data).encode(), record.header())
    assert status == 200, out
    return json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] if out else None


def test_http_calls_after_a_cd_into_a_nested_repository_keep_the_guards(
    installed: tuple[Path, warm_http.Record],
) -> None:
    """An HTTP call carries no ``CLAUDE_PROJECT_DIR``: after ``cd vendor/lib`` only the
    input's cwd says where the session is, and the project's guards still apply."""
    project, record = installed
    lib = nested_repository(project)
    control.start(project, warm_env())
    assert reason(record, project, project, "s1") == "no rm"
    assert reason(record, project, lib, "s1") == "no rm"
    assert reason(record, project, lib, "s2") == "no rm"  # a session started in there


def test_an_http_session_keeps_the_project_it_started_in(
    installed: tuple[Path, warm_http.Record],
) -> None:
    project, record = installed
    lib = nested_repository(project)
    (lib / ".kodelet" / "hooks").mkdir(parents=True)
    write_guard(lib, "the library guard")
    control.start(project, warm_env())
    assert reason(record, project, project, "s1") == "no rm"
    assert reason(record, project, lib, "s1") == "no rm"  # the model's cd moves no guard
    assert reason(record, project, lib, "s2") == "the library guard"
    assert reason(record, project, project, "s2") == "the library guard"


def test_an_install_takes_effect_for_a_warm_kodelet_already_running(project: Path) -> None:
    """Installing the HTTP transport while the project's warm kodelet ran left the port
    unbound: the SessionStart entry stopped every session with "no HTTP transport
    installed" until ``kodelet daemon stop``."""
    (project / ".git").mkdir()
    write_guard(project)
    env = warm_env(CLAUDE_PROJECT_DIR=str(project))
    before = control.start(project, env)
    assert before["http"] is None
    done = kodelet(project, "claude", "install", "--scope", "local", "--transport", "http")
    assert done.returncode == 0, done.stderr
    record = warm_http.load(Places.resolve(project, None, warm_env()))
    assert record is not None
    ensure = settings(project)["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    started = session_start(ensure, project, env)
    assert started.returncode == 0, started.stdout + started.stderr
    assert control.start(project, env)["pid"] == before["pid"]  # the same warm kodelet
    status, out = post(record, json.dumps(pre_tool(project)).encode(), record.header())
    assert status == 200
    assert json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] == "no rm"


def user_install(tmp_path: Path) -> tuple[list[Path], warm_http.Record, str]:
    """Two projects, each with a guard of its own; HTTP installed at user scope from the
    first. (projects, the user's record, the SessionStart command)."""
    projects = []
    for name in ("alpha", "beta"):
        project = tmp_path / name
        (project / ".git").mkdir(parents=True)
        write_guard(project, f"guard of {name}")
        projects.append(project)
    done = kodelet(projects[0], "claude", "install", "--scope", "user", "--transport", "http")
    assert done.returncode == 0, done.stderr
    user = json.loads((Path(os.environ["HOME"]) / ".claude" / "settings.json").read_text())
    record = warm_http.load(Places.resolve(projects[1], None, warm_env()), "user")
    assert record is not None
    assert user["hooks"]["PreToolUse"][0]["hooks"][0]["url"] == record.url
    return projects, record, user["hooks"]["SessionStart"][0]["hooks"][0]["command"]


def test_the_user_scope_serves_every_project_with_its_own_guards(tmp_path: Path) -> None:
    """``--scope user --transport http`` stopped every session outside the project it
    was installed from: the SessionStart entry found no record there."""
    projects, record, ensure = user_install(tmp_path)
    for session, project in enumerate(projects):
        env = warm_env(CLAUDE_PROJECT_DIR=str(project))
        started = session_start(ensure, project, env)
        assert started.returncode == 0, started.stdout + started.stderr
        mark = f"guard of {project.name}"
        assert reason(record, project, project, f"s{session}") == mark
    # Each project's own warm kodelet is up; one of them holds the user's port.
    held = [control.start(p, warm_env(CLAUDE_PROJECT_DIR=str(p)))["http_user"] for p in projects]
    assert held == [record.url, record.url]


def test_a_stranger_on_the_users_port_stops_the_session(tmp_path: Path) -> None:
    """Whoever holds the port must prove it knows the secret: a listener that answers
    everything (another user's, say) is not taken for one of this user's warm kodelets."""
    projects, record, ensure = user_install(tmp_path)

    class Anything(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"proof": "0000"}')

        def log_message(self, format: str, *args: Any) -> None:
            pass

    stranger = http.server.HTTPServer(("127.0.0.1", record.port), Anything)
    thread = threading.Thread(target=stranger.serve_forever, daemon=True)
    thread.start()
    try:
        env = warm_env(CLAUDE_PROJECT_DIR=str(projects[1]))
        started = session_start(ensure, projects[1], env)
        assert started.returncode == 2
        assert json.loads(started.stdout)["continue"] is False
        assert f"port {record.port} unavailable" in started.stderr
    finally:
        stranger.shutdown()
        stranger.server_close()
