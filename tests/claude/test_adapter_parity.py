"""Claude Code settings hooks under kodelet (the adapter, ``claude run``, ``hooks run``)
decide as the pinned Claude Code 2.1.332 does; what cannot be the same is listed in
docs/CLAUDE.md. Real settings files, real shell commands, real kodelet processes."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kodelet.assembly import load_runtime
from kodelet.claude.transcript import recent_messages
from kodelet.payloads import AgentStopPayload, BeforeToolCallPayload, Message
from kodelet.runtime import Runtime
from kodelet.wire import payload_to_wire

from tests.kit.cli import run_before_tool_call, run_kodelet
from tests.kit.repos import git


def settings(project: Path, hooks: dict[str, Any], name: str = "settings.json") -> Path:
    path = project / ".claude" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))
    return path


def entry(cmd: str, matcher: str | None = None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"hooks": [{"type": "command", "command": cmd, **extra}]}
    if matcher is not None:
        found["matcher"] = matcher
    return found


def runtime(cwd: Path) -> Runtime:
    return load_runtime(cwd=cwd, entry_points=False)


def before(cwd: Path, tool: str = "bash", **tool_input: Any) -> BeforeToolCallPayload:
    return BeforeToolCallPayload(
        conv_id="c1",
        cwd=str(cwd),
        tool_name=tool,
        tool_input=tool_input or {"command": "ls"},
        tool_user_id="t1",
    )


def dispatch(cwd: Path, payload: Any) -> Any:
    rt = runtime(cwd)
    try:
        return rt.dispatch(payload).result
    finally:
        rt.close()


def claude_run(project: Path, event: str, data: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return run_kodelet(
        "--cwd", str(project), "claude", "run", event, "-p", "-", stdin=json.dumps(data)
    )


def deny(reason: str) -> str:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    return f"echo '{json.dumps(answer)}'"


@pytest.fixture
def repo(project: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def test_a_matcher_with_spaces_guards_bash(project: Path) -> None:
    settings(project, {"PreToolUse": [entry(deny("spaced"), "Edit | Bash")]})
    result = dispatch(project, before(project))
    assert result.blocked and result.reason == "spaced"


def test_on_failure_block_fails_closed_under_kodelet(project: Path) -> None:
    settings(
        project,
        {
            "PreToolUse": [
                entry("echo oops >&2; exit 1", "Bash", onFailure="block"),
                entry("exit 1", "Write"),
            ]
        },
    )
    blocked = dispatch(project, before(project))
    assert blocked.blocked
    assert 'blocking because onFailure is "block"' in blocked.reason
    assert not dispatch(project, before(project, "file_write", file_path="a", text="b")).blocked


def test_an_unknown_on_failure_is_read_as_block(project: Path, caplog: Any) -> None:
    settings(project, {"PreToolUse": [entry("exit 1", "Bash", onFailure="deny")]})
    with caplog.at_level(logging.WARNING, logger="kodelet.claude"):
        assert dispatch(project, before(project)).blocked
    assert "onFailure 'deny'" in caplog.text


def test_if_and_async_rewake_are_said_not_ignored(project: Path) -> None:
    marker = project / "ran"
    settings(
        project,
        {
            "PreToolUse": [entry(f"touch {marker}", "Bash", **{"if": "Bash(rm *)"})],
            "PostToolUse": [entry("true", "Bash", asyncRewake=True)],
        },
    )
    listed = run_kodelet("--cwd", str(project), "hooks", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.count("'if' is not evaluated by kodelet") == 1
    assert listed.stderr.count("'asyncRewake' runs as 'async'") == 1
    notes = {r["name"]: r["reason"] or "" for r in json.loads(listed.stdout)}
    assert "'if' is not evaluated" in notes["claude:project:PreToolUse:0:0"]
    # It runs (a superset of Claude Code's calls): a guard never fails open.
    assert not dispatch(project, before(project)).blocked
    assert marker.exists()


def test_claude_project_dir_is_the_project_not_the_subfolder(
    repo: Path, isolated_home: Path
) -> None:
    seen = repo / "seen"
    user = isolated_home / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(
        json.dumps({"hooks": {"PreToolUse": [entry(f'echo "$CLAUDE_PROJECT_DIR" > {seen}')]}})
    )
    sub = repo / "src"
    sub.mkdir()
    dispatch(sub, before(sub))
    assert seen.read_text().strip() == str(repo)
    seen.unlink()
    ran = claude_run(repo, "PreToolUse", {"tool_name": "Bash", "cwd": str(sub)})
    assert ran.returncode == 0, ran.stderr
    assert seen.read_text().strip() == str(repo)


# --- kodelet claude run -------------------------------------------------------------


def test_claude_run_keeps_a_stop_block_beside_additional_context(project: Path) -> None:
    answer = {
        "decision": "block",
        "reason": "tests are red",
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "see ci.log"},
    }
    settings(project, {"Stop": [entry(f"echo '{json.dumps(answer)}'")]})
    ran = claude_run(project, "Stop", {})
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == answer


def test_claude_run_says_when_a_hook_fails(project: Path) -> None:
    settings(project, {"PreToolUse": [entry("echo broken >&2; exit 3", "Bash")]})
    ran = claude_run(project, "PreToolUse", {"tool_name": "Bash"})
    assert ran.returncode == 0 and json.loads(ran.stdout) == {}
    (line,) = [x for x in ran.stderr.splitlines() if "claude:project:PreToolUse:0:0" in x]
    assert "failed" in line and "exited with status 3" in line


def test_claude_run_does_not_wait_for_async_hooks_silently(project: Path) -> None:
    settings(
        project,
        {"PostToolUse": [entry("sleep 1; echo late >&2; exit 1", "Bash", **{"async": True})]},
    )
    ran = claude_run(project, "PostToolUse", {"tool_name": "Bash", "tool_response": {}})
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {}
    lines = ran.stderr.splitlines()
    assert any("claude:project:PostToolUse:0:0" in x and "async" in x for x in lines), lines
    assert any("claude:project:PostToolUse:0:0" in x and "failed" in x for x in lines), lines


def test_claude_run_shows_what_session_start_wrote_to_claude_env_file(project: Path) -> None:
    settings(project, {"SessionStart": [entry('echo "export A=1" >> "$CLAUDE_ENV_FILE"')]})
    ran = claude_run(project, "SessionStart", {"source": "startup"})
    assert ran.returncode == 0, ran.stderr
    assert "CLAUDE_ENV_FILE: export A=1" in ran.stderr


# --- kodelet hooks run: transcript_path -------------------------------------------------


def test_hooks_run_gives_claude_hooks_a_transcript_of_the_payload(project: Path) -> None:
    copy = project / "transcript-copy.jsonl"
    settings(project, {"Stop": [entry(f"jq -r .transcript_path | xargs cat > {copy}")]})
    payload = AgentStopPayload(
        conv_id="c1",
        cwd=str(project),
        messages=[
            Message(role="user", content="fix it"),
            Message(role="assistant", content="done"),
        ],
    )
    ran = run_kodelet(
        "--cwd",
        str(project),
        "hooks",
        "run",
        "agent_stop",
        "-p",
        "-",
        stdin=json.dumps(payload_to_wire(payload)),
    )
    assert ran.returncode == 0, ran.stderr
    lines = [json.loads(x) for x in copy.read_text().splitlines()]
    assert [(x["type"], x["message"]["content"]) for x in lines] == [
        ("user", "fix it"),
        ("assistant", [{"type": "text", "text": "done"}]),
    ]
    assert [m.content for m in recent_messages(str(copy))] == ["fix it", "done"]


def test_hooks_run_transcript_option_passes_a_real_one(project: Path, tmp_path: Path) -> None:
    seen = project / "seen"
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("")
    settings(project, {"PreToolUse": [entry(f"jq -r .transcript_path > {seen}", "Bash")]})
    ran = run_before_tool_call(
        project, json.dumps({"tool_name": "bash"}), "--transcript", str(transcript)
    )
    assert ran.returncode == 0, ran.stderr
    assert seen.read_text().strip() == str(transcript)


# --- answers mapped onto kodelet's results ----------------------------------------------


def echo(answer: dict[str, Any]) -> str:
    return f"echo '{json.dumps(answer)}'"


def stop_payload(project: Path) -> AgentStopPayload:
    return AgentStopPayload(conv_id="c1", cwd=str(project), messages=[])


def test_continue_false_on_pre_tool_use_lets_the_tool_run(project: Path) -> None:
    # Claude Code 2.1.332 runs the tool, then ends the session (kodelet cannot end it).
    settings(project, {"PreToolUse": [entry(echo({"continue": False, "stopReason": "halt"}))]})
    assert not dispatch(project, before(project)).blocked


def test_updated_input_without_a_decision_rewrites_the_call(project: Path) -> None:
    rewrite = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "updatedInput": {"file_path": "a", "content": "SAFE"},
        }
    }
    settings(project, {"PreToolUse": [entry(echo(rewrite), "Write")]})
    result = dispatch(project, before(project, "file_write", file_path="a", text="x"))
    assert not result.blocked and result.input == {"file_path": "a", "text": "SAFE"}


def test_stop_context_keeps_the_agent_going_as_claude_code_does(project: Path) -> None:
    context = {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "see ci.log"}}
    settings(project, {"Stop": [entry(echo(context))]})
    assert dispatch(project, stop_payload(project)).follow_up_messages == ["see ci.log"]


def test_stop_block_with_context_follows_up_with_both(project: Path) -> None:
    answer = {
        "decision": "block",
        "reason": "tests are red",
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "see ci.log"},
    }
    settings(project, {"Stop": [entry(echo(answer))]})
    result = dispatch(project, stop_payload(project))
    assert result.follow_up_messages == ["tests are red", "see ci.log"]


def test_continue_false_beside_a_stop_block_stops(project: Path) -> None:
    answer = {"continue": False, "decision": "block", "reason": "more"}
    settings(project, {"Stop": [entry(echo(answer))]})
    assert not dispatch(project, stop_payload(project)).follow_up_messages


# --- plugins add: a Claude-layout plugin's scripts are run by its hooks.json only -------


@pytest.mark.parametrize("with_hooks_json", [True, False], ids=["hooks.json", "plugin.json"])
def test_discovery_never_asks_a_claude_plugins_scripts_hook(
    project: Path, tmp_path: Path, with_hooks_json: bool
) -> None:
    asked = tmp_path / "asked"
    src = tmp_path / "git" / "acme" / "guards"
    hooks = src / "hooks"
    hooks.mkdir(parents=True)
    for name in ("guard.sh", "helper.sh"):
        (hooks / name).write_text(
            f'#!/bin/sh\nif [ "$1" = hook ]; then echo {name} >> {asked}; echo before_tool_call; '
            'exit 0; fi\necho "plugin guard" >&2\nexit 2\n'
        )
        (hooks / name).chmod(0o755)
    (src / ".claude-plugin").mkdir()
    (src / ".claude-plugin" / "plugin.json").write_text('{"name": "guards"}')
    if with_hooks_json:
        guard = entry('"${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh"', "Bash")
        (hooks / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [guard]}}))
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "x")):
        git(src, *args)
    env = {"KODELET_PLUGIN_GIT_BASE": f"file://{tmp_path / 'git'}"}
    added = run_kodelet("plugins", "add", "acme/guards", cwd=project, env=env)
    assert added.returncode == 0, added.stderr
    listed = run_kodelet("--cwd", str(project), "hooks", "list", "--json")
    names = [r["name"] for r in json.loads(listed.stdout)]
    assert not any(n.startswith("acme/guards/") for n in names), names
    ran = run_before_tool_call(
        project, json.dumps({"tool_name": "bash", "tool_input": {"command": "ls"}})
    )
    expected = (
        {"blocked": True, "reason": "plugin guard"} if with_hooks_json else {"blocked": False}
    )
    assert json.loads(ran.stdout) == expected, ran.stderr
    assert not asked.exists(), f"discovery asked {asked.read_text().split()} `hook`"
