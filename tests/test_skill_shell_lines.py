"""Claude Code's skill and slash-command shell lines (``!`cmd```), seen by kodelet's guards.

Claude Code 2.1.332 runs such a line as a skill loads, with no tool call and no
PreToolUse; its PreSkillShellCommand event is the one place a guard can stop it. Each
test runs the real ``python -m kodelet claude hook`` on an input shaped as the pinned
binary sends it, with real bash hooks in the project, and checks the JSON Claude Code
acts on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kodelet.claude.events import HookEvent
from kodelet.claude.installed import unguarded
from kodelet.claude.mapping import claude_input as to_claude_input
from kodelet.claude.mapping import kodelet_payload, to_kodelet_result
from kodelet.claude.types import PreSkillShellCommandInput, input_from_wire
from kodelet.testing import write_hook

from tests.kit.claude_hook import PRE, answered, claude_input, hook, seen
from tests.kit.cli import run_kodelet as kodelet


def skill_line(project: Path, command: str, **fields: Any) -> dict[str, Any]:
    """The input Claude Code 2.1.332 sends for the line ``!`command``` of ``/boom``."""
    return claude_input(
        project,
        "PreSkillShellCommand",
        **{
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": "cbfcb127-51cd-42a7-bf98-67f6249fe3fd:inner:preamble-0",
            "command_name": "boom",
            "command_source": "projectSettings",
            "invoked_by": "user",
            **fields,
        },
    )


def decided(decision: str, reason: str) -> dict[str, Any]:
    specific = {"permissionDecision": decision, "permissionDecisionReason": reason}
    return {"hookSpecificOutput": {"hookEventName": "PreSkillShellCommand", **specific}}


def guarded(project: Path) -> Path:
    write_hook(project / ".kodelet" / "hooks", "pre", PRE)
    return project


def test_a_bash_guard_sees_the_line_as_a_shell_call_marked_as_a_skills(project: Path) -> None:
    out = answered(hook(skill_line(guarded(project), "rm -rf victim")))
    assert out == decided("deny", "rm -rf is not allowed")
    payload = seen(project, "before_tool_call")
    assert payload["tool_name"] == "bash"
    assert payload["tool_input"] == {"command": "rm -rf victim"}
    assert payload["metadata"] == {
        "origin": "skill_shell_line",
        "skill": "boom",
        "skill_source": "projectSettings",
        "started_by": "user",
        "shell": "Bash",
    }


def test_a_powershell_line_is_a_shell_call_too(project: Path) -> None:
    line = skill_line(guarded(project), "rm -rf victim", tool_name="PowerShell")
    assert answered(hook(line)) == decided("deny", "rm -rf is not allowed")
    payload = seen(project, "before_tool_call")
    assert (payload["tool_name"], payload["metadata"]["shell"]) == ("bash", "PowerShell")


def test_a_model_call_carries_no_metadata(project: Path) -> None:
    pre = claude_input(
        guarded(project),
        "PreToolUse",
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_use_id="toolu_01",
    )
    assert answered(hook(pre)) is None
    assert "metadata" not in seen(project, "before_tool_call")


def test_an_ask_is_the_events_ask(project: Path) -> None:
    out = answered(hook(skill_line(guarded(project), "git push")))
    assert out == decided("ask", "pushing needs a yes")


def test_a_rewrite_is_never_reported_as_applied_it_blocks(project: Path) -> None:
    # Claude Code 2.1.332 never runs a PreSkillShellCommand updatedInput: an answer
    # carrying one would tell the guard its rewrite ran. kodelet denies, naming it.
    out = answered(hook(skill_line(guarded(project), "sudo ls")))
    specific = out["hookSpecificOutput"]
    assert "updatedInput" not in specific
    assert specific["permissionDecision"] == "deny"
    assert '{"command": "echo no sudo here"}' in specific["permissionDecisionReason"]
    assert "never runs a rewritten" in specific["permissionDecisionReason"]


def test_no_objection_is_no_answer(project: Path) -> None:
    proc = hook(skill_line(guarded(project), "ls"))
    assert (proc.returncode, proc.stdout) == (0, "")


def test_kodelet_failing_blocks_the_line(project: Path) -> None:
    (guarded(project) / ".kodelet" / "config.toml").write_text("[hooks\n")
    out = answered(hook(skill_line(project, "ls")))
    specific = out["hookSpecificOutput"]
    assert (specific["hookEventName"], specific["permissionDecision"]) == (
        "PreSkillShellCommand",
        "deny",
    )
    assert specific["permissionDecisionReason"].startswith(
        "kodelet could not check this skill's shell line, so it is blocked:"
    )


def test_install_writes_the_event_blocking_when_kodelet_cannot_run(project: Path) -> None:
    done = kodelet("claude", "install", "--scope", "project", cwd=project)
    assert done.returncode == 0, done.stderr
    data = json.loads((project / ".claude" / "settings.json").read_text())
    (entry,) = [h for g in data["hooks"]["PreSkillShellCommand"] for h in g["hooks"]]
    assert entry == {"type": "command", "command": entry["command"], "onFailure": "block"}
    assert unguarded(entry["command"]) == "kodelet-hook claude hook" != entry["command"]


def test_a_claude_settings_hook_on_the_event_runs_for_skill_lines_only() -> None:
    """The other direction (a Claude settings hook inside a kodelet host): a skill line's
    payload goes back as PreSkillShellCommand, and that event's updatedInput is a block,
    as Claude Code refuses any."""
    wire = skill_line(Path("/work"), "rm -rf victim")
    hook_input = input_from_wire(HookEvent.PRE_SKILL_SHELL_COMMAND, wire)
    payload = kodelet_payload(hook_input)
    back = to_claude_input(payload)
    assert isinstance(back, PreSkillShellCommandInput)
    assert (back.tool_name, back.tool_input, back.command_name) == (
        "Bash",
        {"command": "rm -rf victim"},
        "boom",
    )
    rewrite = {"hookSpecificOutput": {"updatedInput": {"command": "true"}}}
    result = to_kodelet_result(HookEvent.PRE_SKILL_SHELL_COMMAND, rewrite, tool_name="Bash")
    assert result is not None and result["blocked"] is True
    assert "input" not in result


def test_status_names_an_older_install_that_lacks_the_event(project: Path) -> None:
    """Entries an older kodelet wrote have no PreSkillShellCommand: skill lines reach no
    hook until install runs again, and status says so."""
    assert kodelet("claude", "install", "--scope", "project", cwd=project).returncode == 0
    path = project / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    del data["hooks"]["PreSkillShellCommand"]
    path.write_text(json.dumps(data))
    status = json.loads(kodelet("claude", "status", "--json", cwd=project).stdout)
    (scope,) = [s for s in status["scopes"] if s["scope"] == "project"]
    assert any(
        "lack PreSkillShellCommand" in p and "kodelet claude install --scope project" in p
        for p in scope["command_problems"]
    ), scope["command_problems"]
    text = kodelet("claude", "status", cwd=project).stdout
    assert "problem: kodelet's entries here lack PreSkillShellCommand" in text
    assert kodelet("claude", "install", "--scope", "project", cwd=project).returncode == 0
    again = json.loads(kodelet("claude", "status", "--json", cwd=project).stdout)
    (scope,) = [s for s in again["scopes"] if s["scope"] == "project"]
    assert not [p for p in scope["command_problems"] if "lack" in p]
