"""kodelet inside the real Claude Code: each guard holds, and does what its hook asked.

Every test runs ``claude -p`` (the pinned binary) against the stand-in Messages API
in a fresh HOME and project, with kodelet connected by ``kodelet claude install``.
Pass or fail comes from facts: a marker file the tool would have written, the
tool_result the model received, Claude Code's JSON result.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kodelet.agents.standins.messages import Script, Turn, text, tool

from tests.e2e.agent_clis import (
    MISSED_BY_THE_README_GUARD,
    answered_by_the_native_client,
    native_client,
    start_warm,
)
from tests.e2e.claude_agent import (
    DANGER_HOOK,
    NO_RM_RF,
    REDACT_HOOK,
    REWRITE_HOOK,
    Agent,
    boom,
    payloads,
    recorder,
)
from tests.kit import redaction


@pytest.fixture
def agent(claude_bin: Path, cc_project: Path, isolated_home: Path, venv_bin: Path) -> Agent:
    a = Agent(claude_bin, cc_project, isolated_home, venv_bin)
    a.install()
    return a


def bash(command: str) -> Turn:
    return [tool("Bash", command=command, description="run")]


# --- blocks ----------------------------------------------------------------


def test_an_executable_hook_blocks_and_the_model_gets_the_reason(agent: Agent) -> None:
    """Through the shared project entry (``kodelet-hook`` on PATH), every call of the
    sessions sent by the native client to the project's warm kodelet."""
    native_client(agent.venv_bin)
    agent.hook("no-danger", DANGER_HOOK)
    start_warm(agent.venv_bin, agent.project, agent.home)
    run = agent.run([bash("touch danger-marker"), [text("fin")]])
    assert not (agent.project / "danger-marker").exists()
    assert "no danger here" in run.tool_result_text()
    allowed = agent.run([bash("touch fine-marker"), [text("fin")]])
    assert (agent.project / "fine-marker").exists(), allowed.tool_result_text()
    assert answered_by_the_native_client(agent.project) >= 4


def test_the_model_cannot_switch_its_guard_off(agent: Agent) -> None:
    agent.hook("guard", DANGER_HOOK)  # a name the calls below do not trip it on
    config = agent.project / ".kodelet" / "config.toml"
    config.write_text("# the user's\n")
    off = '[hooks."guard"]\nenabled = false\n'
    run = agent.run(
        [
            [tool("Write", file_path=str(config), content=off)],
            bash(f"printf '{off}' > .kodelet/config.toml"),
            bash("cat .kodelet/config.toml"),
            bash("touch danger-marker"),
            [text("fin")],
        ]
    )
    assert config.read_text() == "# the user's\n"
    for n in (0, 1):
        assert "builtin:protect-kodelet" in run.tool_result_text(n), run.tool_result_text(n)
    assert "the user's" in run.tool_result_text(2)  # reading stays allowed
    assert not (agent.project / "danger-marker").exists()
    assert "no danger here" in run.tool_result_text(3)


def test_a_pip_installed_plugin_blocks(agent: Agent) -> None:
    target = agent.project / "keep"
    target.mkdir()
    run = agent.run([bash(f"rm -rf {target}"), [text("fin")]])
    assert target.exists()
    assert run.tool_results()[0].get("is_error") is True


def test_a_subfolder_cwd_keeps_the_projects_guards(agent: Agent) -> None:
    agent.hook("no-danger", DANGER_HOOK)
    (agent.project / "src").mkdir()
    run = agent.run([bash("cd src"), bash("touch danger-marker"), [text("fin")]])
    assert not (agent.project / "src" / "danger-marker").exists(), run.tool_result_text(1)
    assert "no danger here" in run.tool_result_text(1)


def test_a_subagents_tool_call_is_guarded_and_says_subagent(agent: Agent, tmp_path: Path) -> None:
    log = tmp_path / "seen.jsonl"
    agent.hook("record", recorder("before_tool_call", log))

    def turns(request: dict[str, Any]) -> Turn:
        said = sum(1 for m in request["messages"] if m["role"] == "assistant")
        first = json.dumps(request["messages"][0])
        if "sub-task" in first:  # the subagent's own conversation
            return bash("touch sub-marker") if said == 0 else [text("sub done")]
        if said == 0:
            return [
                tool("Agent", description="sub", prompt="sub-task", subagent_type="general-purpose")
            ]
        return [text("fin")]

    agent.run(Script(turns), allowed="Bash Agent")
    seen = payloads(log)
    spawn = next(p for p in seen if p["tool_name"] == "subagent")
    assert spawn["invoked_by"] == "main" and spawn["tool_input"]["question"] == "sub-task"
    inner = next(p for p in seen if p["tool_name"] == "bash")
    assert inner["invoked_by"] == "subagent"


def test_installed_at_project_and_user_scope_each_hook_runs_once(
    agent: Agent, tmp_path: Path
) -> None:
    """Claude Code runs kodelet's entry of its project settings and that of its user
    settings for every call; the user's stands down, so each hook runs once."""
    log = tmp_path / "seen.jsonl"
    agent.hook("record", recorder("before_tool_call", log))
    agent.kodelet("claude", "install", "--scope", "user")
    assert (agent.home / ".claude" / "settings.json").is_file()
    run = agent.run([bash("touch once-marker"), [text("fin")]])
    assert (agent.project / "once-marker").exists(), run.tool_result_text()
    assert [p["tool_input"]["command"] for p in payloads(log)] == ["touch once-marker"]


# --- skill and slash-command shell lines ------------------------------------------


def test_a_skills_shell_line_is_a_bash_call_a_guard_blocks(agent: Agent, tmp_path: Path) -> None:
    victim = boom(agent.project)
    agent.hook("no-rm-rf", NO_RM_RF)
    log = tmp_path / "seen.jsonl"
    agent.hook("a-record", recorder("before_tool_call", log))  # runs first: by name
    run = agent.run([[text("fin")]], prompt="/boom")
    assert victim.is_dir(), run.seen_by_model()
    assert "[not run: blocked by hook: no rm -rf]" in run.seen_by_model()
    (line,) = [p for p in payloads(log) if p["tool_input"] == {"command": "rm -rf victim"}]
    assert line["tool_name"] == "bash"
    assert line["metadata"]["origin"] == "skill_shell_line"
    assert line["metadata"]["skill"] == "boom"


def test_a_skills_shell_line_is_blocked_when_kodelet_cannot_run(agent: Agent) -> None:
    victim = boom(agent.project)
    path = agent.project / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    # Only the skill line's entry, so the failing prompt entry cannot stop /boom first.
    settings["hooks"] = {"PreSkillShellCommand": settings["hooks"]["PreSkillShellCommand"]}
    assert settings["hooks"]["PreSkillShellCommand"][0]["hooks"][0]["onFailure"] == "block"
    path.write_text(json.dumps(settings))
    run = agent.run([[text("fin")]], prompt="/boom", env={"PATH": "/usr/bin:/bin"})
    assert victim.is_dir(), run.seen_by_model()
    assert "[not run: blocked by hook:" in run.seen_by_model()


# --- fail closed -------------------------------------------------------------


def test_a_config_typo_blocks_with_a_reason_naming_it(agent: Agent) -> None:
    agent.hook("no-danger", DANGER_HOOK)
    agent.config('[hooks."no-danger"]\nfail_closed = "true"\n')
    run = agent.run([bash("touch marker"), [text("fin")]])
    assert not (agent.project / "marker").exists()
    assert not run.api.main_requests()  # the prompt itself is blocked
    said = run.stdout + run.stderr
    assert "config.toml" in said and "fail_closed" in said, said


@pytest.mark.parametrize(
    "tool_input",
    [
        pytest.param({"command": "touch marker #\ud800"}, id="surrogate"),
        pytest.param({"command": "touch marker #" + "a" * (17 * 1024 * 1024)}, id="17MiB"),
    ],
)
def test_a_hostile_tool_input_is_blocked_not_let_through(
    agent: Agent, tool_input: dict[str, Any]
) -> None:
    agent.hook("no-danger", DANGER_HOOK)
    run = agent.run([[tool("Bash", **tool_input)], [text("fin")]], timeout=300)
    assert not (agent.project / "marker").exists()
    assert run.tool_results()[0].get("is_error") is True
    assert "kodelet" in run.tool_result_text()


def test_kodelet_missing_blocks_through_on_failure(agent: Agent) -> None:
    settings = json.loads((agent.project / ".claude" / "settings.json").read_text())
    pre = settings["hooks"]["PreToolUse"][0]["hooks"][0]
    assert pre.get("onFailure") == "block"
    # A PATH without any kodelet (nox puts its venv's bin on PATH): the command is not found.
    run = agent.run([bash("touch marker"), [text("fin")]], env={"PATH": "/usr/bin:/bin"})
    assert not (agent.project / "marker").exists(), run.tool_result_text()
    # The prompt itself is blocked, and the block names the fix, not the shell's
    # "kodelet: not found".
    reason = run.result["result"]
    assert reason.startswith("UserPromptSubmit operation blocked by hook"), reason
    assert "command is not on the PATH Claude Code starts hooks with" in reason, reason
    assert "Installing kodelet" in reason and ".claude/settings.json" in reason


def test_on_failure_allow_is_an_opt_out_and_status_says_so(agent: Agent) -> None:
    agent.hook("no-danger", DANGER_HOOK)
    agent.config('[claude]\non_failure = "allow"\n')
    agent.install()
    settings = json.loads((agent.project / ".claude" / "settings.json").read_text())
    assert "onFailure" not in json.dumps(settings)
    status = agent.kodelet("claude", "status", "--json").stdout
    assert json.loads(status)["on_failure"] == "allow"
    run = agent.run([[tool("Bash", command="touch marker #\ud800")], [text("fin")]])
    assert (agent.project / "marker").exists(), run.tool_result_text()


# --- rewrites and outputs ------------------------------------------------------


def test_a_rewrite_runs_and_keeps_claude_codes_permission_check(agent: Agent) -> None:
    agent.hook("rewrite", REWRITE_HOOK)
    agent.run([bash("touch original"), [text("fin")]], allowed="Bash")
    assert (agent.project / "rewritten").exists()
    assert not (agent.project / "original").exists()
    (agent.project / "rewritten").unlink()
    run = agent.run([bash("touch original"), [text("fin")]], allowed="Read")
    assert not (agent.project / "rewritten").exists(), run.tool_result_text()
    assert run.result["permission_denials"], run.result


def test_redaction_replaces_the_result_the_model_gets(agent: Agent) -> None:
    agent.hook("redact", REDACT_HOOK)
    run = agent.run([bash("echo key=SECRET123"), [text("fin")]])
    assert "SECRET123" not in run.tool_result_text()
    assert "[redacted]" in run.tool_result_text()
    assert "SECRET123" not in json.dumps(run.api.main_requests()[1]["messages"][-1])


@pytest.mark.parametrize("kind", ["bash", "read"])
def test_the_events_md_redaction_keeps_the_key_from_the_model(agent: Agent, kind: str) -> None:
    secrets = agent.project / ".env"
    secrets.write_text(f"AWS_ACCESS_KEY_ID={redaction.KEY}\n")
    agent.hook("redact", redaction.HOOK)
    turn = bash("cat .env") if kind == "bash" else [tool("Read", file_path=str(secrets))]
    run = agent.run([turn, [text("fin")]])
    assert "[redacted]" in run.tool_result_text(), run.tool_result_text()
    assert len(run.api.main_requests()) == 2
    assert redaction.KEY not in run.seen_by_model()


def test_the_recommended_rules_block_what_the_readme_guard_misses(agent: Agent) -> None:
    """With ``kodelet rules enable recommended`` and no hook of the user's, a delete
    outside the project that the README's guard lets by is refused, and the model is
    told which rule refused it."""
    victim = agent.home / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep\n")
    agent.kodelet("rules", "enable", "recommended")
    run = agent.run([bash(MISSED_BY_THE_README_GUARD), [text("fin")]])
    assert (victim / "keep.txt").exists(), run.tool_result_text()
    assert "kodelet rule " in run.tool_result_text(), run.tool_result_text()


WITHHOLD_HOOK = """#!/usr/bin/env python3
import json, sys
if sys.argv[1] == "hook":
    print("after_tool_call")
elif sys.argv[1] == "run":
    out = json.load(sys.stdin)["tool_output"]
    print(json.dumps({"output": {**out, "metadata": {"output": "withheld"}}}))
"""


def test_a_rewrite_that_fits_no_shape_stops_before_the_model_sees_the_result(
    agent: Agent,
) -> None:
    """Grep's file list is shown to hooks as JSON; text that is no longer that JSON fits
    no replacement Claude Code takes, so the agent stops before the next model call."""
    (agent.project / "notes.txt").write_text("x\n")
    agent.hook("withhold", WITHHOLD_HOOK)
    turn = [tool("Grep", pattern="x", path=str(agent.project), output_mode="files_with_matches")]
    run = agent.run([turn, [text("fin")]], allowed="Grep")
    assert run.result["terminal_reason"] == "hook_stopped", run.result
    assert len(run.api.main_requests()) == 1
    assert run.api.tool_outputs() == []


def test_a_file_write_rewrite_uses_claude_codes_keys(agent: Agent) -> None:
    agent.hook(
        "rewrite-write",
        """#!/usr/bin/env python3
import json, sys
if sys.argv[1] == "hook":
    print("before_tool_call")
else:
    p = json.load(sys.stdin)
    if p["tool_name"] == "file_write":
        print(json.dumps({"input": {**p["tool_input"], "text": "from the hook\\n"}}))
""",
    )
    target = agent.project / "out.txt"
    agent.run([[tool("Write", file_path=str(target), content="from the model\n")], [text("fin")]])
    assert target.read_text() == "from the hook\n"


# --- stops -------------------------------------------------------------------


def test_a_follow_up_continues_once_and_ends(agent: Agent) -> None:
    agent.hook(
        "follow",
        """#!/bin/bash
case "$1" in
  hook) echo agent_stop ;;
  run) echo '{"follow_up_messages": ["please run the tests"]}' ;;
esac
""",
    )
    run = agent.run([[text("first")], [text("second")]])
    assert "please run the tests" in run.seen_by_model()
    assert len(run.api.main_requests()) == 2
    assert run.result["result"] == "second"


def test_context_from_agent_stop_does_not_restart_the_agent(agent: Agent) -> None:
    agent.hook(
        "ctx",
        """#!/bin/bash
case "$1" in
  hook) echo agent_stop ;;
  run) echo '{"additional_context": ["a note"]}' ;;
esac
""",
    )
    run = agent.run([bash("echo hi"), [text("fin")]])
    assert len(run.api.main_requests()) == 2, len(run.api.main_requests())


def test_agent_stop_hooks_get_the_conversation(agent: Agent, tmp_path: Path) -> None:
    log = tmp_path / "stop.jsonl"
    agent.hook("record", recorder("agent_stop", log))
    agent.run([bash("echo hi"), [text("the final words")]], prompt="please say hi")
    (stop,) = payloads(log)
    roles = [m["role"] for m in stop["messages"]]
    assert roles[0] == "user" and roles[-1] == "assistant"
    assert stop["messages"][-1]["content"] == "the final words"
    assert any("please say hi" in m["content"] for m in stop["messages"])


# --- prompts and context ---------------------------------------------------------


def test_a_blocked_prompt_never_reaches_the_model(agent: Agent) -> None:
    agent.hook(
        "no-secret",
        """#!/bin/bash
case "$1" in
  hook) echo user_message_send ;;
  run) if grep -q AKIA; then echo '{"blocked": true, "reason": "secret in prompt"}'; fi ;;
esac
""",
    )
    run = agent.run([[text("fin")]], prompt="key AKIAIOSFODNN7EXAMPLE")
    assert not run.api.main_requests()
    assert "secret in prompt" in run.stdout + run.stderr


# --- installation ---------------------------------------------------------------


def test_installed_entries_are_never_run_by_kodelet_itself(agent: Agent, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    agent.hook("record", recorder("before_tool_call", log))
    payload = agent.project / "payload.json"
    payload.write_text(json.dumps({"tool_name": "bash", "tool_input": {"command": "ls"}}))
    done = agent.kodelet("hooks", "run", "before_tool_call", "--payload", str(payload))
    assert len(payloads(log)) == 1, done.stdout + done.stderr
    listing = agent.kodelet("hooks", "list", "--no-exec").stdout
    assert "claude hook" not in listing


def test_uninstall_restores_the_settings_byte_for_byte(
    claude_bin: Path, cc_project: Path, isolated_home: Path, venv_bin: Path
) -> None:
    settings = cc_project / ".claude" / "settings.json"
    settings.parent.mkdir()
    stop = '{"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}'
    original = '{\n  "model": "x",\n  "hooks": ' + stop + "\n}\n"
    settings.write_text(original)
    a = Agent(claude_bin, cc_project, isolated_home, venv_bin)
    a.install()
    assert "kodelet" in settings.read_text()
    a.kodelet("claude", "uninstall", "--scope", "project")
    assert json.loads(settings.read_text()) == json.loads(original)
    mode = stat.S_IMODE(os.stat(settings).st_mode)
    assert mode & 0o022 == 0


# --- plugin repositories ------------------------------------------------------------

CLAUDE_LAYOUT_DENY = (
    'if grep -q danger; then echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse",'
    ' "permissionDecision": "deny", "permissionDecisionReason": "plugin says no"}}\'; fi'
)


def _plugin_repo(base: Path, files: dict[str, str]) -> None:
    repo = base / "acme" / "guards"
    for name, body in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        path.chmod(0o755)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "guards"], check=True)


@pytest.mark.parametrize("layout", ["kodelet", "claude"])
def test_a_plugin_repository_hook_guards_inside_claude_code(
    agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    base = tmp_path / "git"
    if layout == "kodelet":
        _plugin_repo(base, {"hooks/no-danger": DANGER_HOOK})
    else:
        hooks_json = {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Bash",
                        "hooks": [{"type": "command", "command": CLAUDE_LAYOUT_DENY}],
                    }
                ]
            }
        }
        _plugin_repo(base, {"hooks/hooks.json": json.dumps(hooks_json)})
    monkeypatch.setenv("KODELET_PLUGIN_GIT_BASE", f"file://{base}")
    agent.kodelet("plugins", "add", "acme/guards")
    run = agent.run([bash("touch danger-marker"), [text("fin")]])
    assert not (agent.project / "danger-marker").exists(), run.tool_result_text()
    assert ("no danger here" if layout == "kodelet" else "plugin says no") in run.tool_result_text()


# --- ask ---------------------------------------------------------------------------

ASK_HOOK = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'asked-marker'; then echo '{"ask": true, "reason": "touching needs a yes"}'; fi ;;
esac
"""


def test_an_ask_reaches_claude_code_which_in_print_mode_rejects(agent: Agent) -> None:
    """Claude Code 2.1.332 in ``-p`` has no one to ask: it rejects the call even though
    ``--allowedTools`` allows Bash, lists it in ``permission_denials``, and hands the model
    the reason as it is (a deny would read ``PreToolUse:Bash hook error: ...``)."""
    agent.hook("ask", ASK_HOOK)
    run = agent.run([bash("touch asked-marker"), [text("fin")]], allowed="Bash")
    assert not (agent.project / "asked-marker").exists(), run.tool_result_text()
    (result,) = run.tool_results()
    assert result.get("is_error") is True
    assert run.tool_result_text() == "touching needs a yes"
    (denied,) = run.result["permission_denials"]
    assert denied["tool_input"]["command"] == "touch asked-marker"


BASH_GUARD = """#!/bin/bash
# Knows kodelet's shell tool only: blocks a shell command that names danger.
case "$1" in
  hook) echo before_tool_call ;;
  run) payload=$(cat)
    if grep -q '"tool_name": *"bash"' <<< "$payload" && grep -q danger <<< "$payload"; then
      echo '{"blocked": true, "reason": "no danger in a shell"}'
    fi ;;
esac
"""


def test_a_monitor_command_is_a_shell_call_to_a_bash_guard(agent: Agent) -> None:
    """Claude Code's deferred ``Monitor`` runs a shell command in the background: kodelet
    sees it as ``bash``, so a guard on ``bash`` stops it."""
    agent.hook("shell-guard", BASH_GUARD)
    monitor = tool("Monitor", command="touch danger-marker", description="m", timeout_ms=5000)
    run = agent.run(
        [[tool("ToolSearch", query="select:Monitor")], [monitor], [text("fin")]],
        allowed="Bash ToolSearch Monitor",
    )
    assert not (agent.project / "danger-marker").exists(), run.stdout
    assert "no danger in a shell" in run.tool_result_text(1)
