"""kodelet inside the real opencode (``opencode-ai`` 1.18.33): a generated plugin.

opencode has no command hooks; ``kodelet opencode install`` writes a plugin into
``.opencode/plugin/`` that hands each tool call, prompt and end of turn to kodelet. Each
test runs ``opencode run`` offline against the stand-in Chat Completions API in a fresh
HOME and project, with guards in ``.kodelet/hooks`` that know only kodelet's tool
names. Pass or fail comes from facts: the files the tools wrote, what the model was
sent back.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents.standins.messages import Turn, text, tool
from kodelet.agents.standins.openai import OpenAIAPI, Script

from tests.e2e import agent_clis
from tests.e2e.agent_clis import (
    MISSED_BY_THE_README_GUARD,
    OPENCODE,
    STOP,
    Agent,
    assert_a_dangerous_call_is_blocked_by_the_native_client,
    assert_each_hook_runs_once,
    assert_the_recommended_rules_block,
    assert_the_redaction_holds,
    connected,
    hook_client,
    seen,
    write_hook,
)


@pytest.fixture
def opencode(cc_project: Path, isolated_home: Path, venv_bin: Path) -> Agent:
    launch = agent_clis.opencode
    return connected("opencode", OPENCODE, launch, cc_project, isolated_home, venv_bin)


def serve(agent: Agent, turns: list[Turn], until: str, *, prompt: str = "go") -> OpenAIAPI:
    """``opencode serve`` given PROMPT over its HTTP API, stopped once the model has
    been sent ``until`` (or after 30 s): a server, unlike ``opencode run``, stays
    when a session idles, so a stop's follow-up has a turn to start."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    with OpenAIAPI(Script(turns)) as api:
        command, env = agent.command(api, args=("serve", "--port", str(port)))
        server = subprocess.Popen(
            command,
            cwd=agent.project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            session = _post(f"{base}/session", {}, wait=30)
            parts = [{"type": "text", "text": prompt}]
            _post(f"{base}/session/{session['id']}/message", {"parts": parts})
            deadline = time.monotonic() + 30
            while until not in api.seen_by_model() and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1)  # a loop would show as more requests by now
        finally:
            server.terminate()
            server.wait(10)
    return api


def _post(url: str, body: object, wait: float = 0) -> Any:
    """POST ``body`` as JSON; with ``wait``, retried while the server is not up yet (a
    server starting may take the connection and answer nothing for a while)."""
    deadline = time.monotonic() + wait
    while True:
        request = urllib.request.Request(
            url, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=2 if wait else 60) as reply:
                return json.loads(reply.read() or b"null")
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def shell(command: str) -> list[Turn]:
    return [[tool("bash", command=command, description="run")], [text("done")]]


def test_a_dangerous_shell_call_is_blocked_through_the_native_client(
    opencode: Agent,
) -> None:
    assert_a_dangerous_call_is_blocked_by_the_native_client(opencode, shell("touch pwned # danger"))


def test_a_harmless_shell_call_runs(opencode: Agent) -> None:
    """And ``opencode run`` exits when its session idles: a stop's follow-up has no
    turn there (:func:`test_added_context_and_a_follow_up_reach_the_model`)."""
    write_hook(opencode.project, "stop", STOP)
    run = opencode.run(shell("echo hello > harmless.txt"))
    assert run.returncode == 0, run.stderr
    assert (opencode.project / "harmless.txt").read_text() == "hello\n"
    assert seen(opencode.project)[0]["tool_input"]["command"] == "echo hello > harmless.txt"
    assert "kodelet follow-up" not in run.seen_by_model()


def test_a_rewrite_runs_the_rewritten_command(opencode: Agent) -> None:
    run = opencode.run(shell("sudo touch root.txt"))
    assert run.returncode == 0, run.stderr
    assert not (opencode.project / "root.txt").exists()
    assert (opencode.project / "rewritten.txt").read_text() == "rewritten\n"


def test_a_file_write_reaches_kodelet_under_kodelets_names(opencode: Agent) -> None:
    target = opencode.project / "notes.txt"
    turn = [tool("write", filePath=str(target), content="hello\n")]
    run = opencode.run([turn, [text("ok")]])
    assert run.returncode == 0, run.stderr
    assert target.read_text() == "hello\n"
    call = seen(opencode.project)[0]
    assert call["tool_name"] == "file_write"
    assert call["tool_input"] == {"file_path": str(target), "text": "hello\n"}


def test_added_context_and_a_follow_up_reach_the_model(opencode: Agent) -> None:
    write_hook(opencode.project, "stop", STOP)
    follow_up = "kodelet follow-up: run the tests"
    api = serve(opencode, shell("echo explain > explained.txt"), until=follow_up)
    assert (opencode.project / "explained.txt").exists()
    said = api.seen_by_model()
    assert "kodelet context: the build dir is generated" in said
    assert follow_up in said
    assert len(api.main_requests()) <= 4  # one follow-up round, not a loop


def test_kodelet_failing_blocks_with_what_to_fix(opencode: Agent) -> None:
    """The prompt itself is refused (chat.message), the reason on the terminal."""
    (opencode.project / ".kodelet" / "config.toml").write_text("[hooks\n")
    run = opencode.run(shell("echo hello > harmless.txt"))
    assert run.returncode != 0
    assert not (opencode.project / "harmless.txt").exists()
    assert not run.api.main_requests()
    assert "kodelet could not check this prompt, so it is blocked" in run.stderr
    assert "config.toml" in run.stderr
    assert "`kodelet opencode status`" in run.stderr


def test_kodelet_missing_blocks(opencode: Agent) -> None:
    """The plugin fails closed: a command that cannot start refuses the call."""
    run = opencode.run(shell("echo hello > harmless.txt"), on_path=False)
    assert run.returncode != 0
    assert not (opencode.project / "harmless.txt").exists()
    assert not run.api.main_requests()
    assert "kodelet could not check this prompt, so it is blocked" in run.stderr
    assert "kodelet-hook claude hook --agent opencode exited with 127" in run.stderr


def test_user_scope_runs_the_warm_kodelets_lean_client(opencode: Agent) -> None:
    opencode.kodelet("opencode", "uninstall")
    opencode.kodelet("opencode", "install", "--scope", "user")
    plugin = opencode.home / ".config" / "opencode" / "plugin" / "kodelet.js"
    client = hook_client(opencode.venv_bin)
    assert f"{client} claude hook --agent opencode --scope user" in plugin.read_text()
    run = opencode.run(shell("touch pwned # danger"), on_path=False)
    assert not (opencode.project / "pwned").exists()
    assert "kodelet guard: no danger here" in run.tool_outputs()[0]


def test_uninstall_leaves_opencodes_plugins_as_they_were(opencode: Agent) -> None:
    opencode.kodelet("opencode", "uninstall")
    assert not (opencode.project / ".opencode").exists()
    plugins = opencode.project / ".opencode" / "plugin"
    plugins.mkdir(parents=True)
    marker = opencode.project / "own-plugin-ran"
    (plugins / "mine.js").write_text(
        f"export const Mine = async () => ({{\n"
        f'  "tool.execute.before": async () => {{ await Bun.write({str(marker)!r}, "x"); }},\n'
        f"}});\n"
    )
    before = {p.name: p.read_bytes() for p in plugins.iterdir()}
    opencode.kodelet("opencode", "install")
    assert (plugins / "kodelet.js").exists()
    opencode.kodelet("opencode", "uninstall")
    assert {p.name: p.read_bytes() for p in plugins.iterdir()} == before
    run = opencode.run(shell("touch pwned # danger"))
    assert run.returncode == 0, run.stderr
    assert (opencode.project / "pwned").exists()  # no guard any more
    assert marker.exists()  # the user's own plugin still runs


def test_installed_at_project_and_user_scope_each_hook_runs_once(opencode: Agent) -> None:
    """opencode loads kodelet's plugin of ``.opencode/plugin`` and that of
    ``~/.config/opencode/plugin``; the user's stands down, so each hook runs once."""
    assert_each_hook_runs_once(
        opencode,
        [[tool("bash", command="echo once > once.txt", description="once")], [text("done")]],
        "echo once > once.txt",
    )


def test_the_events_md_redaction_keeps_the_key_from_the_model(opencode: Agent) -> None:
    assert_the_redaction_holds(opencode, shell("cat keys.txt"))


def test_the_recommended_rules_block_what_the_readme_guard_misses(opencode: Agent) -> None:
    assert_the_recommended_rules_block(opencode, shell(MISSED_BY_THE_README_GUARD))
