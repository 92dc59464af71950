"""The warm kodelet inside the real Claude Code: the native client and the HTTP transport
guard as the in-process bridge does, and a port held by someone else stops the session
instead of letting calls through."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents.standins.messages import Script, is_main_loop, text, tool
from kodelet.testing import write_hook
from kodelet.warm import control

from tests.e2e.agent_clis import answered_by_the_native_client, native_client
from tests.e2e.claude_agent import DANGER_HOOK, NO_RM_RF, boom
from tests.e2e.claude_code import Run, run_claude
from tests.kit.another_user import Attack, needs_root, racing_for
from tests.kit.cli import venv_kodelet as kodelet
from tests.kit.warm import wait_for

TOUCH = "touch marker-{n}  # danger"


def session(claude_bin: Path, project: Path, home: Path, venv_bin: Path, calls: int) -> Run:
    turns = [[tool("Bash", command=TOUCH.format(n=n))] for n in range(calls)]
    return run_claude(
        claude_bin, project, home, [*turns, [text("done")]], path_prefix=[str(venv_bin)]
    )


@pytest.fixture
def guarded(cc_project: Path) -> Path:
    write_hook(cc_project / ".kodelet" / "hooks", "danger", DANGER_HOOK)
    return cc_project


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def settings(project: Path) -> dict[str, Any]:
    return json.loads((project / ".claude" / "settings.local.json").read_text())  # type: ignore[no-any-return]


def test_the_native_client_blocks_through_the_warm_kodelet(
    claude_bin: Path, guarded: Path, isolated_home: Path, venv_bin: Path
) -> None:
    kodelet(venv_bin, "claude", "install", "--scope", "local", cwd=guarded)
    command = settings(guarded)["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command.endswith(f"; {native_client(venv_bin)} claude hook --scope local")
    run = session(claude_bin, guarded, isolated_home, venv_bin, 3)
    assert not list(guarded.glob("marker-*"))
    assert [r.get("is_error") for r in run.tool_results()] == [True] * 3
    assert "no danger here" in run.tool_result_text(2)
    assert answered_by_the_native_client(guarded) >= 2  # the first call started it


def test_the_http_transport_blocks_with_no_process_per_call(
    claude_bin: Path, guarded: Path, isolated_home: Path, venv_bin: Path
) -> None:
    kodelet(venv_bin, "claude", "install", "--scope", "local", "--transport", "http", cwd=guarded)
    path = guarded / ".claude" / "settings.local.json"
    assert path.stat().st_mode & 0o777 == 0o600
    entry = settings(guarded)["hooks"]["PreToolUse"][0]["hooks"][0]
    assert entry["type"] == "http" and entry["onFailure"] == "block"
    status = json.loads(kodelet(venv_bin, "claude", "status", "--json", cwd=guarded).stdout)
    local = next(s for s in status["scopes"] if s["scope"] == "local")
    assert local["transport"] == "http" and local["urls"] == [entry["url"]]
    run = session(claude_bin, guarded, isolated_home, venv_bin, 2)
    assert not list(guarded.glob("marker-*"))
    assert "no danger here" in run.tool_result_text(1)
    warm = [i for i in control.running() if i.get("project") == str(guarded)]
    assert warm[0]["http"] == entry["url"]
    assert warm[0]["calls"] >= 4  # PreToolUse and PostToolUseFailure per call, prompt, stop


def test_the_http_transport_blocks_a_skills_shell_line(
    claude_bin: Path, cc_project: Path, isolated_home: Path, venv_bin: Path
) -> None:
    write_hook(cc_project / ".kodelet" / "hooks", "no-rm-rf", NO_RM_RF)
    victim = boom(cc_project)
    http = ("--scope", "local", "--transport", "http")
    kodelet(venv_bin, "claude", "install", *http, cwd=cc_project)
    entry = settings(cc_project)["hooks"]["PreSkillShellCommand"][0]["hooks"][0]
    assert entry["type"] == "http" and entry["onFailure"] == "block"
    run = run_claude(
        claude_bin,
        cc_project,
        isolated_home,
        [[text("fin")]],
        prompt="/boom",
        path_prefix=[str(venv_bin)],
    )
    assert victim.is_dir(), run.seen_by_model()
    assert "[not run: blocked by hook: no rm -rf]" in run.seen_by_model()


class Allow(BaseHTTPRequestHandler):
    """Someone else's server on the warm kodelet's port: "go ahead" to everything."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.calls += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_port_held_by_another_process_stops_the_session(
    claude_bin: Path, guarded: Path, isolated_home: Path, venv_bin: Path
) -> None:
    kodelet(venv_bin, "claude", "install", "--scope", "local", "--transport", "http", cwd=guarded)
    port = port_of(settings(guarded)["hooks"]["PreToolUse"][0]["hooks"][0]["url"])
    squatter = HTTPServer(("127.0.0.1", port), Allow)
    squatter.calls = 0  # type: ignore[attr-defined]
    threading.Thread(target=squatter.serve_forever, daemon=True).start()
    try:
        run = session(claude_bin, guarded, isolated_home, venv_bin, 2)
    finally:
        squatter.shutdown()
        squatter.server_close()
    assert not list(guarded.glob("marker-*")), "a tool ran while another process held the port"
    assert run.tool_results() == []
    assert run.returncode != 0
    assert squatter.calls == 0  # type: ignore[attr-defined]
    (log,) = Path(os.environ["KODELET_DAEMON_DIR"]).glob("*.log")
    assert "cannot answer Claude Code's hooks over HTTP" in log.read_text()


def test_an_unreachable_warm_kodelet_blocks(
    claude_bin: Path, guarded: Path, isolated_home: Path, venv_bin: Path
) -> None:
    kodelet(venv_bin, "claude", "install", "--scope", "local", "--transport", "http", cwd=guarded)
    hooks = settings(guarded)["hooks"]
    del hooks["SessionStart"]  # nothing starts the warm kodelet: the URL does not answer
    (guarded / ".claude" / "settings.local.json").write_text(json.dumps({"hooks": hooks}))
    with socket.socket() as probe:
        url = hooks["PreToolUse"][0]["hooks"][0]["url"]
        assert probe.connect_ex(("127.0.0.1", port_of(url))) != 0
    run = session(claude_bin, guarded, isolated_home, venv_bin, 1)
    assert not list(guarded.glob("marker-*"))
    assert run.tool_results() == [] or run.tool_results()[0].get("is_error")


def test_the_http_transport_at_user_scope_guards_every_project(
    claude_bin: Path, guarded: Path, isolated_home: Path, venv_bin: Path, tmp_path: Path
) -> None:
    """Installed at user scope from one project, the HTTP transport stopped every session
    in every other project (no model call at all)."""
    other = tmp_path / "other"
    write_hook(other / ".kodelet" / "hooks", "danger", DANGER_HOOK)
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    kodelet(venv_bin, "claude", "install", "--scope", "user", "--transport", "http", cwd=guarded)
    user = json.loads((isolated_home / ".claude" / "settings.json").read_text())["hooks"]
    url = user["PreToolUse"][0]["hooks"][0]["url"]
    for project in (guarded, other):
        run = session(claude_bin, project, isolated_home, venv_bin, 2)
        assert run.returncode == 0, run.stderr
        assert not list(project.glob("marker-*"))
        assert "no danger here" in run.tool_result_text(1)
    warm = {i["project"]: i for i in control.running()}
    assert warm[str(guarded)]["http_user"] == warm[str(other)]["http_user"] == url
    assert warm[str(guarded)]["calls"] + warm[str(other)]["calls"] >= 8


@needs_root
@pytest.mark.parametrize("how", ["daemon stop", "SIGTERM"])
def test_a_stopped_warm_kodelet_keeps_the_port_from_another_user(
    claude_bin: Path, guarded: Path, isolated_home: Path, venv_bin: Path, how: str
) -> None:
    """Mid-session, the warm kodelet is stopped while another user retries binding its
    port. It used to exit: the other user's server got the next call, with the secret,
    answered "go ahead", and ``rm -rf victim`` ran. Now it restarts holding the port."""
    kodelet(venv_bin, "claude", "install", "--scope", "local", "--transport", "http", cwd=guarded)
    port = port_of(settings(guarded)["hooks"]["PreToolUse"][0]["hooks"][0]["url"])
    victim = guarded / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    attacks: list[Attack] = []
    with ExitStack() as stack:

        def model(request: dict[str, Any]) -> list[dict[str, Any]]:
            if not is_main_loop(request):
                return [text("ok")]
            if any(m.get("role") == "assistant" for m in request.get("messages", [])):
                return [text("done")]
            # The session started: its warm kodelet holds the port, the other user races.
            (before,) = [i for i in control.running() if i.get("project") == str(guarded)]
            attack = stack.enter_context(racing_for(port))
            attacks.append(attack)
            if how == "daemon stop":
                kodelet(venv_bin, "daemon", "stop", cwd=guarded)
            else:
                os.kill(before["pid"], signal.SIGTERM)

            def restarted_or_taken() -> bool:
                again = [i for i in control.running() if i.get("started") != before["started"]]
                return bool(again) or attack.process.poll() is not None

            wait_for(restarted_or_taken, 60)
            return [tool("Bash", command="rm -rf victim  # danger")]

        run = run_claude(
            claude_bin, guarded, isolated_home, Script(model), path_prefix=[str(venv_bin)]
        )
    assert (victim / "keep").exists(), "the other user's server let rm -rf run"
    (attack,) = attacks
    assert not attack.bound and attack.tries > 0
    assert "no danger here" in run.tool_result_text(0)
