"""kodelet inside the real Gemini CLI (``@google/gemini-cli`` 0.61.0): its own hook wire.

Each test runs ``gemini -p`` against the stand-in generateContent API
(:mod:`tests.e2e.gemini_api`) in a fresh HOME and project, with kodelet connected by
``kodelet gemini install``, and guards in ``.kodelet/hooks`` that know only kodelet's
tool names (``bash``). Pass or fail comes from facts: the files the shell call wrote,
the function responses the model was sent.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest

from tests.e2e.agent_clis import GUARD, STOP, Pin, agent_env, install, seen, write_hook
from tests.e2e.conftest import kodelet
from tests.e2e.gemini_api import GeminiAPI, Script, Turn, call, text
from tests.e2e.npm import InstallError

GEMINI = Pin(
    "gemini-cli",
    "0.61.0",
    {
        plat: (
            "@google/gemini-cli@0.61.0",
            "sha512-dbQ9A0qBtFJNi6XBkHvfZ6Azpn6PNgH/P8h2MZ67RLlX8hSAVjup39CRWqdRxZv7YXIuhrFaytr8y0"
            "jKnkoxnQ==",
        )
        for plat in ("linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64")
    },
    entry="bundle/gemini.js",
)


@attrs.frozen
class Run:
    api: GeminiAPI
    returncode: int
    stdout: str
    stderr: str

    def outputs(self) -> list[str]:
        """What the model was sent back for each call, as text."""
        replies = self.api.function_responses()
        return [json.dumps(r.get("response"), ensure_ascii=False) for r in replies]


@pytest.fixture(scope="module")
def gemini_entry() -> Path:
    """Fails (never skips) when the pinned Gemini CLI cannot be had."""
    try:
        return install(GEMINI)
    except (InstallError, OSError) as exc:
        pytest.fail(f"cannot install Gemini CLI {GEMINI.version}: {exc}", pytrace=False)


@attrs.define
class Gemini:
    entry: Path
    project: Path
    home: Path
    venv_bin: Path

    def kodelet(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return kodelet(self.venv_bin, *args, cwd=self.project, check=check)

    def run(self, turns: list[Turn], *, prompt: str = "go", on_path: bool = True) -> Run:
        """``gemini -p PROMPT --yolo`` with a named model: no routing call to answer."""
        prefix: Sequence[str] = [str(self.venv_bin)] if on_path else []
        with GeminiAPI(Script(turns)) as api:
            env = agent_env(
                self.home,
                prefix,
                GOOGLE_GEMINI_BASE_URL=api.url,
                GEMINI_API_KEY="standin",
                # A project's .gemini/settings.json, hooks included, is read only in a
                # trusted folder; --skip-trust comes too late for the settings.
                GEMINI_CLI_TRUST_WORKSPACE="true",
            )
            done = subprocess.run(
                ["node", str(self.entry), "-p", prompt, "--yolo", "-m", "gemini-2.5-flash"],
                cwd=self.project,
                env=env,
                capture_output=True,
                text=True,
                timeout=90,
                stdin=subprocess.DEVNULL,
            )
        return Run(api, done.returncode, done.stdout, done.stderr)


@pytest.fixture
def gemini(gemini_entry: Path, cc_project: Path, isolated_home: Path, venv_bin: Path) -> Gemini:
    agent = Gemini(gemini_entry, cc_project, isolated_home, venv_bin)
    user = isolated_home / ".gemini" / "settings.json"
    user.parent.mkdir(parents=True)
    # The stand-in takes any key: Gemini CLI is told to use one.
    user.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    write_hook(cc_project, "guard", GUARD)
    agent.kodelet("gemini", "install")
    return agent


def shell(command: str) -> list[Turn]:
    return [[call("run_shell_command", command=command, description="run")], [text("done")]]


def test_a_dangerous_shell_call_is_blocked_and_the_model_gets_the_reason(gemini: Gemini) -> None:
    run = gemini.run(shell("touch pwned # danger"))
    assert run.returncode == 0, run.stderr
    assert not (gemini.project / "pwned").exists()
    assert "kodelet guard: no danger here" in run.outputs()[0]
    assert seen(gemini.project)[0]["tool_name"] == "bash"


def test_a_harmless_shell_call_runs(gemini: Gemini) -> None:
    run = gemini.run(shell("echo hello > harmless.txt"))
    assert run.returncode == 0, run.stderr
    assert (gemini.project / "harmless.txt").read_text() == "hello\n"
    assert seen(gemini.project)[0]["tool_input"]["command"] == "echo hello > harmless.txt"


def test_a_rewrite_runs_the_rewritten_command(gemini: Gemini) -> None:
    run = gemini.run(shell("sudo touch root.txt"))
    assert run.returncode == 0, run.stderr
    assert not (gemini.project / "root.txt").exists()
    assert (gemini.project / "rewritten.txt").read_text() == "rewritten\n"


def test_a_follow_up_reaches_the_model(gemini: Gemini) -> None:
    """Gemini CLI takes no added context before a tool runs (BeforeTool); a stop's
    follow-up (AfterAgent) starts another turn."""
    write_hook(gemini.project, "stop", STOP)
    run = gemini.run(shell("echo explain > explained.txt"))
    assert run.returncode == 0, run.stderr
    assert (gemini.project / "explained.txt").exists()
    said = run.api.seen_by_model()
    assert "kodelet follow-up: run the tests" in said
    assert said.count("kodelet follow-up: run the tests") < 20  # once, not a loop


def test_kodelet_failing_blocks_the_prompt_with_what_to_fix(gemini: Gemini) -> None:
    """The prompt itself is refused (BeforeAgent), the reason on the terminal."""
    (gemini.project / ".kodelet" / "config.toml").write_text("[hooks\n")
    run = gemini.run(shell("echo hello > harmless.txt"))
    assert not (gemini.project / "harmless.txt").exists()
    assert not run.api.main_requests()
    assert "Agent execution blocked: kodelet could not check this prompt" in run.stderr
    assert "config.toml" in run.stderr
    assert "`kodelet gemini status`" in run.stderr


def test_kodelet_missing_blocks_the_call(gemini: Gemini) -> None:
    """Gemini CLI denies what a hook command that is not found (exit 127) guards: the
    prompt itself (BeforeAgent) never reaches the model."""
    run = gemini.run(shell("echo hello > harmless.txt"), on_path=False)
    assert not (gemini.project / "harmless.txt").exists()
    assert not run.api.main_requests()


def test_uninstall_leaves_geminis_settings_as_they_were(gemini: Gemini) -> None:
    gemini.kodelet("gemini", "uninstall")
    settings = gemini.project / ".gemini" / "settings.json"
    marker = gemini.project / "own-hook-ran"
    mine = {
        "ui": {"hideBanner": True},
        "hooks": {
            "BeforeTool": [
                {"matcher": ".*", "hooks": [{"type": "command", "command": f"touch {marker}"}]}
            ]
        },
    }
    before = json.dumps(mine, indent=4) + "\n"
    settings.write_text(before)
    gemini.kodelet("gemini", "install")
    assert settings.read_text() != before
    gemini.kodelet("gemini", "uninstall")
    assert settings.read_text() == before
    run = gemini.run(shell("touch pwned # danger"))
    assert run.returncode == 0, run.stderr
    assert (gemini.project / "pwned").exists()  # no guard any more
    assert marker.exists()  # the user's own hook still runs
