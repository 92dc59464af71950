"""kodelet inside the real Gemini CLI (``@google/gemini-cli`` 0.61.0): its own hook wire.

Each test runs ``gemini -p`` against the stand-in generateContent API
(:mod:`kodelet.agents.standins.gemini`) in a fresh HOME and project, with kodelet connected by
``kodelet gemini install``, and guards in ``.kodelet/hooks`` that know only kodelet's
tool names (``bash``). Pass or fail comes from facts: the files the shell call wrote,
the function responses the model was sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents.standins.gemini import Turn, call, text

from tests.e2e import agent_clis
from tests.e2e.agent_clis import (
    GEMINI,
    MISSED_BY_THE_README_GUARD,
    STOP,
    Agent,
    assert_a_dangerous_call_is_blocked_by_the_native_client,
    assert_a_managed_rule_holds,
    assert_the_recommended_rules_block,
    assert_the_redaction_holds,
    connected,
    seen,
    write_hook,
)


@pytest.fixture
def gemini(cc_project: Path, isolated_home: Path, venv_bin: Path) -> Agent:
    launch, stand_in = agent_clis.gemini, agent_clis.gemini_generate
    return connected("gemini", GEMINI, launch, cc_project, isolated_home, venv_bin, stand_in)


def shell(command: str) -> list[Turn]:
    return [[call("run_shell_command", command=command, description="run")], [text("done")]]


def test_a_dangerous_shell_call_is_blocked_through_the_native_client(
    gemini: Agent,
) -> None:
    assert_a_dangerous_call_is_blocked_by_the_native_client(gemini, shell("touch pwned # danger"))


def test_a_harmless_shell_call_runs(gemini: Agent) -> None:
    run = gemini.run(shell("echo hello > harmless.txt"))
    assert run.returncode == 0, run.stderr
    assert (gemini.project / "harmless.txt").read_text() == "hello\n"
    assert seen(gemini.project)[0]["tool_input"]["command"] == "echo hello > harmless.txt"


def test_a_rewrite_runs_the_rewritten_command(gemini: Agent) -> None:
    run = gemini.run(shell("sudo touch root.txt"))
    assert run.returncode == 0, run.stderr
    assert not (gemini.project / "root.txt").exists()
    assert (gemini.project / "rewritten.txt").read_text() == "rewritten\n"


@pytest.mark.parametrize(
    "tool_call",
    [
        call("run_shell_command", command="cat keys.txt", description="run"),
        call("read_file", file_path="keys.txt"),
    ],
    ids=["shell", "read_file"],
)
def test_the_events_md_redaction_keeps_the_key_from_the_model(
    gemini: Agent, tool_call: Any
) -> None:
    """Gemini CLI cannot replace a result: the model gets the redacted text as the
    reason the result is withheld, never the original."""
    assert_the_redaction_holds(gemini, [[tool_call], [text("done")]])


def test_the_recommended_rules_block_what_the_readme_guard_misses(gemini: Agent) -> None:
    assert_the_recommended_rules_block(gemini, shell(MISSED_BY_THE_README_GUARD))


def test_a_managed_rule_holds_whatever_the_project_says(gemini: Agent) -> None:
    assert_a_managed_rule_holds(gemini, shell("touch pwned"))


def test_a_follow_up_reaches_the_model(gemini: Agent) -> None:
    """Gemini CLI takes no added context before a tool runs (BeforeTool); a stop's
    follow-up (AfterAgent) starts another turn."""
    write_hook(gemini.project, "stop", STOP)
    run = gemini.run(shell("echo explain > explained.txt"))
    assert run.returncode == 0, run.stderr
    assert (gemini.project / "explained.txt").exists()
    said = run.seen_by_model()
    assert "kodelet follow-up: run the tests" in said
    assert said.count("kodelet follow-up: run the tests") < 20  # once, not a loop


def test_the_model_cannot_switch_its_guard_off(gemini: Agent) -> None:
    """``builtin:protect-kodelet`` refuses Gemini CLI's write_file of kodelet's config
    and the shell commands that edit or delete kodelet's folder, with the reason; the
    model may still read the file, and the guard it tried to switch off still holds."""
    config = gemini.project / ".kodelet" / "config.toml"
    # The e2e session's example guardrail plugin would block ``rm -rf`` before it.
    mine = '# the user\'s\n[plugins]\ndisabled = ["guardrail"]\n'
    config.write_text(mine)
    off = '[hooks."guard"]\nenabled = false\n'
    run = gemini.run(
        [
            [call("write_file", file_path=str(config), content=off)],
            *[
                [call("run_shell_command", command=command, description="run")]
                for command in ("sed -i 's/guardrail//' .kodelet/config.toml", "rm -rf .kodelet")
            ],
            [call("read_file", file_path=str(config))],
            [call("run_shell_command", command="touch pwned # danger", description="run")],
            [text("done")],
        ]
    )
    assert run.returncode == 0, run.stderr
    assert config.read_text() == mine
    assert (gemini.project / ".kodelet" / "hooks" / "guard").is_file()
    outputs = run.tool_outputs()
    assert len(outputs) == 5, outputs
    for n in (0, 1, 2):
        assert "builtin:protect-kodelet" in outputs[n], outputs[n]
    assert "the user's" in outputs[3]  # reading stays allowed
    assert not (gemini.project / "pwned").exists()
    assert "kodelet guard: no danger here" in outputs[4]


def test_kodelet_failing_blocks_the_prompt_with_what_to_fix(gemini: Agent) -> None:
    """The prompt itself is refused (BeforeAgent), the reason on the terminal."""
    (gemini.project / ".kodelet" / "config.toml").write_text("[hooks\n")
    run = gemini.run(shell("echo hello > harmless.txt"))
    assert not (gemini.project / "harmless.txt").exists()
    assert not run.api.main_requests()
    assert "Agent execution blocked: kodelet could not check this prompt" in run.stderr
    assert "config.toml" in run.stderr
    assert "`kodelet gemini status`" in run.stderr


def test_kodelet_missing_blocks_the_call(gemini: Agent) -> None:
    """Gemini CLI denies what a hook command that is not found (exit 127) guards: the
    prompt itself (BeforeAgent) never reaches the model."""
    run = gemini.run(shell("echo hello > harmless.txt"), on_path=False)
    assert not (gemini.project / "harmless.txt").exists()
    assert not run.api.main_requests()


def test_uninstall_leaves_geminis_settings_as_they_were(gemini: Agent) -> None:
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
