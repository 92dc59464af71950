"""`kodelet claude hook` as Claude Code runs it, and `kodelet claude install/uninstall/status`.

Every hook test is a real ``python -m kodelet claude hook`` process fed a hook input
shaped like the ones Claude Code sends, in a project whose ``.kodelet/hooks`` holds
real bash hooks; the assertions are on the exact JSON Claude Code would act on.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kodelet.claude.installed import unguarded
from kodelet.testing import write_hook

from tests.kit.claude import our_commands
from tests.kit.claude_hook import (
    BROKEN_PRE,
    POST,
    PRE,
    PROMPT,
    STOP,
    answered,
    claude_input,
    hook,
    seen,
)
from tests.kit.cli import run_kodelet as kodelet

NATIVE = """
from kodelet import hookimpl


@hookimpl
def before_tool_call(tool_name, tool_input):
    print("native plugin chatter on stdout")
    if "DROP TABLE" in str(tool_input.get("command", "")):
        return {"blocked": True, "reason": "native: no DROP TABLE"}
    return None
"""


@pytest.fixture
def native_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A native plugin installed the way pip installs one: a module and a dist-info
    with a ``kodelet.plugins`` entry point, on the path of the hook's interpreter."""
    site = tmp_path / "site"
    info = site / "kodelet_test_native-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "kodelet_test_native.py").write_text(NATIVE)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: kodelet-test-native\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text("[kodelet.plugins]\nnative = kodelet_test_native\n")
    monkeypatch.setenv("PYTHONPATH", str(site))


@pytest.fixture
def claude_project(project: Path) -> Path:
    hooks = project / ".kodelet" / "hooks"
    for name, text in [("pre", PRE), ("post", POST), ("prompt", PROMPT), ("stop", STOP)]:
        write_hook(hooks, name, text)
    return project


def pre_tool(project: Path, command: str, tool: str = "Bash") -> dict[str, Any]:
    return claude_input(
        project,
        "PreToolUse",
        tool_name=tool,
        tool_input={"command": command, "description": "d"},
        tool_use_id="toolu_01",
    )


def decided(decision: str, reason: str) -> dict[str, Any]:
    """Claude Code's answer for a PreToolUse hook that decides, with its reason."""
    specific = {"permissionDecision": decision, "permissionDecisionReason": reason}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **specific}}


def test_pre_tool_use_blocked_is_a_deny(claude_project: Path) -> None:
    out = answered(hook(pre_tool(claude_project, "rm -rf /")))
    assert out == decided("deny", "rm -rf is not allowed")
    payload = seen(claude_project, "before_tool_call")
    assert payload["tool_name"] == "bash"
    assert payload["conv_id"] == "a1b2c3d4-session"
    assert payload["cwd"] == str(claude_project)
    assert payload["tool_user_id"] == "toolu_01"
    assert payload["tool_input"]["command"] == "rm -rf /"


def test_pre_tool_use_rewrite_is_updated_input(claude_project: Path) -> None:
    out = answered(hook(pre_tool(claude_project, "sudo ls")))
    # No permission decision: Claude Code applies the rewrite and still asks its own
    # permission rules (Claude Code 2.1.332; an "allow" would skip them).
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "updatedInput": {"command": "echo no sudo here"},
        }
    }


def test_pre_tool_use_ask_is_claude_codes_ask(claude_project: Path) -> None:
    out = answered(hook(pre_tool(claude_project, "git push")))
    assert out == decided("ask", "pushing needs a yes")
    rewritten = answered(hook(pre_tool(claude_project, "curl example.com")))
    assert rewritten["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "network",
        "updatedInput": {"command": "curl -sS x"},
    }


def test_pre_tool_use_no_action_is_empty_output(claude_project: Path) -> None:
    proc = hook(pre_tool(claude_project, "ls"))
    assert (proc.returncode, proc.stdout) == (0, "")


def test_native_plugin_blocks_and_its_prints_stay_off_stdout(
    claude_project: Path, native_plugin: None
) -> None:
    out = answered(hook(pre_tool(claude_project, "psql -c 'DROP TABLE users'")))
    assert out == decided("deny", "native: no DROP TABLE")
    proc = hook(pre_tool(claude_project, "ls"))
    assert (proc.returncode, proc.stdout) == (0, "")
    assert "native plugin chatter" in proc.stderr


def test_unknown_tool_passes_unchanged(claude_project: Path) -> None:
    data = pre_tool(claude_project, "ls", tool="mcp__github__list_issues")
    assert answered(hook(data)) is None
    assert seen(claude_project, "before_tool_call")["tool_name"] == "mcp__github__list_issues"


def test_read_is_file_read(claude_project: Path) -> None:
    data = claude_input(
        claude_project, "PreToolUse", tool_name="Read", tool_input={"file_path": "/etc/hosts"}
    )
    assert answered(hook(data)) is None
    payload = seen(claude_project, "before_tool_call")
    assert (payload["tool_name"], payload["tool_input"]["file_path"]) == ("file_read", "/etc/hosts")


def test_fail_closed_hook_that_breaks_denies(claude_project: Path) -> None:
    write_hook(claude_project / ".kodelet" / "hooks", "guard", BROKEN_PRE)
    config = claude_project / ".kodelet" / "config.toml"
    config.write_text('[hooks."guard"]\nfail_closed = true\n')
    out = answered(hook(pre_tool(claude_project, "ls")))
    spec = out["hookSpecificOutput"]
    assert (spec["hookEventName"], spec["permissionDecision"]) == ("PreToolUse", "deny")
    assert "guard" in spec["permissionDecisionReason"]


def test_broken_hook_denies_by_default(claude_project: Path) -> None:
    write_hook(claude_project / ".kodelet" / "hooks", "guard", BROKEN_PRE)
    out = answered(hook(pre_tool(claude_project, "ls")))
    spec = out["hookSpecificOutput"]
    assert (spec["hookEventName"], spec["permissionDecision"]) == ("PreToolUse", "deny")
    reason = spec["permissionDecisionReason"]
    assert reason.startswith("hook guard failed (fail-closed): ")
    assert reason.endswith('[hooks."guard"] fail_closed = false')


def test_broken_hook_with_fail_closed_false_does_not_block(claude_project: Path) -> None:
    write_hook(claude_project / ".kodelet" / "hooks", "guard", BROKEN_PRE)
    config = claude_project / ".kodelet" / "config.toml"
    config.write_text('[hooks."guard"]\nfail_closed = false\n')
    proc = hook(pre_tool(claude_project, "ls"))
    assert (proc.returncode, proc.stdout) == (0, "")
    assert "guard" in proc.stderr


def test_post_tool_use_maps_response_and_a_rewrite_replaces_the_result(
    claude_project: Path,
) -> None:
    data = claude_input(
        claude_project,
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "cat .env"},
        tool_response={"stdout": "SECRET=1", "stderr": "", "interrupted": False},
        tool_use_id="toolu_02",
    )
    out = answered(hook(data))
    payload = seen(claude_project, "after_tool_call")
    assert payload["tool_output"] == {
        "toolName": "bash",
        "success": True,
        "metadata": {
            "output": "SECRET=1",
            "tool_response": {"stdout": "SECRET=1", "stderr": "", "interrupted": False},
        },
        "timestamp": "",
    }
    # The hook answered a result with no metadata, only an error: the model is shown
    # that error in the result's place, never the old result beside it.
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {"stdout": "redacted", "stderr": "", "interrupted": False},
        }
    }
    assert "SECRET" not in json.dumps(out)


def test_post_tool_use_failure_is_a_failed_after_tool_call(claude_project: Path) -> None:
    data = claude_input(
        claude_project,
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "false"},
        tool_use_id="toolu_03",
        error="Exit code 1",
    )
    assert answered(hook(data)) is None
    output = seen(claude_project, "after_tool_call")["tool_output"]
    assert (output["success"], output["error"], output["toolName"]) == (
        False,
        "Exit code 1",
        "bash",
    )


def test_user_prompt_submit(claude_project: Path) -> None:
    data = claude_input(claude_project, "UserPromptSubmit", prompt="my password is hunter2")
    assert answered(hook(data)) == {"decision": "block", "reason": "no passwords in prompts"}
    assert seen(claude_project, "user_message_send")["message"] == "my password is hunter2"
    ok = claude_input(claude_project, "UserPromptSubmit", prompt="fix the bug")
    assert answered(hook(ok)) is None


@pytest.mark.parametrize(("event", "invoked_by"), [("Stop", "main"), ("SubagentStop", "subagent")])
def test_stop_follow_ups_continue_once(claude_project: Path, event: str, invoked_by: str) -> None:
    data = claude_input(claude_project, event, stop_hook_active=False)
    assert answered(hook(data)) == {"decision": "block", "reason": "run the tests\n\nthen commit"}
    assert seen(claude_project, "agent_stop")["invoked_by"] == invoked_by
    again = claude_input(claude_project, event, stop_hook_active=True)
    proc = hook(again)
    assert (proc.returncode, proc.stdout) == (0, "")


@pytest.mark.parametrize("event", ["SessionStart", "Notification", "PreCompact", "SessionEnd"])
def test_events_kodelet_lacks_are_no_action(claude_project: Path, event: str) -> None:
    proc = hook(claude_input(claude_project, event, message="hi", source="startup"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"cwd": "/"}', "'hook_event_name'"),
    ],
)
def test_an_input_without_an_event_exits_2_which_blocks(raw: str, problem: str) -> None:
    proc = hook(None, raw=raw)
    assert proc.returncode == 2  # Claude Code blocks a tool call or prompt on exit 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("kodelet: error: ")
    assert problem in proc.stderr
    assert proc.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("raw", "problem", "key"),
    [
        ('{"hook_event_name": "PreToolUse", "cwd": "/", "tool_input": {}}', "tool_name", "deny"),
        ('{"hook_event_name": "UserPromptSubmit", "cwd": "/", "prompt": 3}', "prompt", "block"),
        ('{"hook_event_name": "PostToolUse", "cwd": "/", "tool_name": 3}', "tool_name", None),
    ],
)
def test_a_malformed_input_of_a_known_event_fails_closed(
    raw: str, problem: str, key: str | None
) -> None:
    proc = hook(None, raw=raw)
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    if key == "deny":
        specific = out["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny"
        assert problem in specific["permissionDecisionReason"]
        assert "on_failure" in specific["permissionDecisionReason"]
    elif key == "block":
        assert out["decision"] == "block" and problem in out["reason"]
    else:
        assert problem in out["systemMessage"]
    assert proc.stderr.startswith("kodelet: error: ") and problem in proc.stderr


def test_trace_goes_to_stderr(claude_project: Path) -> None:
    proc = hook(pre_tool(claude_project, "rm -rf x"), "--trace")
    records = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [(r["name"], r["outcome"]) for r in records] == [("pre", "blocked")]


def test_trace_file_gets_one_line_per_hook(claude_project: Path, tmp_path: Path) -> None:
    log = tmp_path / "trace.jsonl"
    for command in ("ls", "sudo ls"):
        assert hook(pre_tool(claude_project, command), "--trace-file", str(log)).returncode == 0
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["name"], r["outcome"]) for r in lines] == [
        ("pre", "no-action"),
        ("builtin:protect-kodelet", "no-action"),
        ("pre", "modified"),
        ("builtin:protect-kodelet", "no-action"),
    ]


def test_rewritten_input_goes_back_in_claudes_keys(claude_project: Path) -> None:
    pytest.importorskip("kodelet.claude.mapping")
    data = claude_input(
        claude_project,
        "PreToolUse",
        tool_name="Write",
        tool_input={"file_path": "/tmp/x", "content": "hello"},
    )
    out = answered(hook(data))
    assert seen(claude_project, "before_tool_call")["tool_input"] == {
        "file_path": "/tmp/x",
        "text": "hello",
    }
    assert out["hookSpecificOutput"]["updatedInput"] == {"file_path": "/tmp/x", "content": "safe"}


def test_claude_settings_hooks_are_never_run(claude_project: Path) -> None:
    marker = claude_project / "ran"
    settings = claude_project / ".claude" / "settings.json"
    settings.parent.mkdir()
    command = f"touch {marker}"
    entry = {"matcher": "*", "hooks": [{"type": "command", "command": command}]}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [entry]}}))
    assert answered(hook(pre_tool(claude_project, "ls"))) is None
    assert not marker.exists()


# -- install / uninstall / status -------------------------------------------------


OTHER = {
    "permissions": {"allow": ["Bash(npm run test:*)"]},
    "model": "opus",
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint-guard.sh"}]}
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}

MAPPED = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "PreSkillShellCommand",
]


@pytest.mark.parametrize(
    ("scope", "where"),
    [
        ("project", ".claude/settings.json"),
        ("local", ".claude/settings.local.json"),
        ("user", "HOME"),
    ],
)
def test_install_keeps_everything_else_and_is_idempotent(
    tmp_path: Path, isolated_home: Path, scope: str, where: str
) -> None:
    path = isolated_home / ".claude/settings.json" if where == "HOME" else tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    original = json.dumps(OTHER)
    path.write_text(original)
    proc = kodelet("claude", "install", "--scope", scope, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = path.read_bytes()
    data = json.loads(first)
    assert {k: v for k, v in data.items() if k != "hooks"} == {
        "permissions": OTHER["permissions"],
        "model": "opus",
    }
    assert data["hooks"]["PreToolUse"][0] == OTHER["hooks"]["PreToolUse"][0]
    assert data["hooks"]["Notification"] == OTHER["hooks"]["Notification"]
    commands = our_commands(data)
    assert all(len(commands[e]) == 1 for e in MAPPED)
    command = unguarded(commands["PreToolUse"][0])
    # The shared project file names kodelet-hook on PATH; the others this machine's own, and
    # their scope, to stand down for a project entry that does the work.
    tail = " claude hook" if scope == "project" else f" claude hook --scope {scope}"
    assert command.endswith(tail)
    exe = command.rsplit(tail, 1)[0].split(" ")[0]
    assert exe == "kodelet-hook" if scope == "project" else os.path.isabs(exe)
    pre = data["hooks"]["PreToolUse"][1]["hooks"][0]
    assert pre["onFailure"] == "block"
    assert "onFailure" not in data["hooks"]["Stop"][0]["hooks"][0]
    assert data["hooks"]["PreToolUse"][1]["matcher"] == "*"
    assert "matcher" not in data["hooks"]["Stop"][0]
    assert path.with_name(path.name + ".bak").read_text() == original
    again = kodelet("claude", "install", "--scope", scope, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert path.read_bytes() == first

    status = kodelet("claude", "status", "--json", cwd=tmp_path)
    scopes = {s["scope"]: s["events"] for s in json.loads(status.stdout)["scopes"]}
    assert sorted(scopes[scope]) == sorted(MAPPED)

    off = kodelet("claude", "uninstall", "--scope", scope, cwd=tmp_path)
    assert off.returncode == 0, off.stderr
    assert json.loads(path.read_text()) == OTHER


def test_installed_command_really_runs(claude_project: Path) -> None:
    assert kodelet("claude", "install", "--scope", "local", cwd=claude_project).returncode == 0
    settings = json.loads((claude_project / ".claude/settings.local.json").read_text())
    command = settings["hooks"]["PreToolUse"][-1]["hooks"][0]["command"]
    proc = subprocess.run(
        command,
        shell=True,
        input=json.dumps(pre_tool(claude_project, "rm -rf /")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_install_dry_run_prints_diff_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".claude/settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(OTHER))
    before = path.read_bytes()
    proc = kodelet("claude", "install", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"--- {path}\n+++ {path}\n")
    assert '+      "matcher": "*",' in proc.stdout or '"matcher": "*"' in proc.stdout
    assert path.read_bytes() == before
    assert not path.with_name("settings.json.bak").exists()


def test_install_into_a_new_file(tmp_path: Path) -> None:
    assert kodelet("claude", "install", cwd=tmp_path).returncode == 0
    data = json.loads((tmp_path / ".claude/settings.json").read_text())
    assert sorted(data) == ["hooks"]
    assert sorted(data["hooks"]) == sorted(MAPPED)


def test_a_blank_settings_file_is_an_empty_one(tmp_path: Path) -> None:
    path = tmp_path / ".claude/settings.json"
    path.parent.mkdir()
    path.write_text("\n")
    proc = kodelet("claude", "uninstall", cwd=tmp_path)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"unchanged: {path}"), proc.stderr
    assert kodelet("claude", "install", cwd=tmp_path).returncode == 0
    assert sorted(json.loads(path.read_text())["hooks"]) == sorted(MAPPED)


def test_invalid_settings_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / ".claude/settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": ')
    for command in ("install", "uninstall"):
        proc = kodelet("claude", command, cwd=tmp_path)
        assert proc.returncode == 1
        assert proc.stderr.startswith("kodelet: error: ") and "not valid JSON" in proc.stderr
        assert proc.stderr.count("\n") == 1
        assert path.read_text() == '{"hooks": '


def test_uninstall_leaves_a_shared_group_and_other_kodelet_lookalikes(tmp_path: Path) -> None:
    ours = {"type": "command", "command": "/opt/venv/bin/kodelet claude hook"}
    theirs = {"type": "command", "command": "./claude-hook-logger"}
    data = {
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [theirs, ours]}],
            "Stop": [{"hooks": [ours]}],
        },
        "env": {"A": "1"},
    }
    path = tmp_path / ".claude/settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    assert kodelet("claude", "uninstall", cwd=tmp_path).returncode == 0
    assert json.loads(path.read_text()) == {
        "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [theirs]}]},
        "env": {"A": "1"},
    }


def test_status_names_the_hooks_that_would_run(claude_project: Path) -> None:
    proc = kodelet("claude", "status", cwd=claude_project)
    assert proc.returncode == 0, proc.stderr
    assert "project" in proc.stdout and "not installed" in proc.stdout
    for name in ("pre", "post", "prompt", "stop"):
        assert f". {name} (executable)" in proc.stdout


def test_install_never_writes_through_a_planted_link(tmp_path: Path, isolated_home: Path) -> None:
    victim = isolated_home / ".bashrc"
    victim.write_text("# mine\n")
    claude = tmp_path / ".claude"
    claude.mkdir()
    settings = claude / "settings.json"
    settings.write_text('{"model": "x"}\n')
    (claude / "settings.json.bak").symlink_to(victim)
    proc = kodelet("claude", "install", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "# mine\n"
    backup = claude / "settings.json.bak"
    assert not backup.is_symlink() and json.loads(backup.read_text()) == {"model": "x"}

    # A settings file that is a link (to a token file, say) is neither copied nor written.
    secret = isolated_home / "token.json"
    secret.write_text('{"token": "s3cret"}\n')
    settings.unlink()
    backup.unlink()
    settings.symlink_to(secret)
    proc = kodelet("claude", "install", cwd=tmp_path)
    assert proc.returncode == 1 and "symbolic link" in proc.stderr
    assert secret.read_text() == '{"token": "s3cret"}\n'
    assert not backup.exists()
