"""Claude Code's own hooks (settings files and plugin repositories) run inside kodelet.

Real settings files in temp dirs, real bash/jq/python command hooks, real runtimes."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet.assembly import load_runtime
from kodelet.events import Event
from kodelet.kinds import Source
from kodelet.listing import hook_rows
from kodelet.markers import hookimpl
from kodelet.payloads import (
    AfterToolCallPayload,
    AgentStopPayload,
    BeforeToolCallPayload,
    Message,
    StructuredToolResult,
    UserMessageSendPayload,
)
from kodelet.runtime import Runtime
from kodelet.testing import write_hook
from kodelet.wire import result_to_wire

from tests.kit.claude import NO_RM, command, project_settings, script, settings
from tests.kit.cli import no_traceback, run_kodelet

PY = sys.executable


DECIDE = """#!/bin/bash
jq -c --arg d "$1" --arg r "$2" \
  '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: $d,
    permissionDecisionReason: $r}}' < /dev/null -n
"""

UPPERCASE_WRITE = """#!/bin/bash
jq -c '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow",
  updatedInput: (.tool_input + {content: (.tool_input.content | ascii_upcase)})}}'
"""

POST_CONTEXT = f"""#!{PY}
import json, sys
data = json.load(sys.stdin)
print(json.dumps({{"hookSpecificOutput": {{"hookEventName": data["hook_event_name"],
    "additionalContext": "saw " + data["tool_name"]}}}}))
"""


def runtime(project: Path, **kw: Any) -> Runtime:
    return load_runtime(cwd=project, entry_points=False, **kw)


def before(project: Path, tool: str, tool_input: dict[str, Any]) -> BeforeToolCallPayload:
    return BeforeToolCallPayload(
        conv_id="c1", cwd=str(project), tool_name=tool, tool_input=tool_input, tool_user_id="t1"
    )


def stop(project: Path, invoked_by: str = "main") -> AgentStopPayload:
    return AgentStopPayload(
        conv_id="c1",
        cwd=str(project),
        invoked_by=invoked_by,  # type: ignore[arg-type]
        messages=[Message(role="assistant", content="done")],
    )


def test_exit_2_denies_only_the_matching_tool(project: Path) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    always = script(project, "always.sh", "#!/bin/bash\necho 'never on bash' >&2\nexit 2\n")
    settings(
        project_settings(project),
        {"PreToolUse": [command(guard, "Bash"), command(always, "Write")]},
    )
    rt = runtime(project)
    try:
        denied = rt.dispatch(before(project, "bash", {"command": "rm -rf /"}))
        assert denied.result.blocked and denied.result.reason == "no rm -rf here"
        assert [r.source for r in denied.trace] == [Source.CLAUDE]
        fine = rt.dispatch(before(project, "bash", {"command": "ls"}))
        assert not fine.result.blocked
        write = rt.dispatch(before(project, "file_write", {"file_path": "a", "text": "x"}))
        assert write.result.blocked and write.result.reason == "never on bash"
    finally:
        rt.close()


def test_permission_decision_deny_and_ask(project: Path) -> None:
    decide = script(project, "decide.sh", DECIDE)
    settings(
        project_settings(project),
        {
            "PreToolUse": [
                command(f"{decide} deny 'not in prod'", "Bash"),
                command(f"{decide} ask 'please check'", "Read"),
            ]
        },
    )
    rt = runtime(project)
    try:
        denied = rt.dispatch(before(project, "bash", {"command": "ls"})).result
        assert denied.blocked and denied.reason == "not in prod"
        asked = rt.dispatch(before(project, "file_read", {"file_path": "x"})).result
        assert asked.blocked and asked.ask and asked.reason == "please check"
    finally:
        rt.close()


def test_updated_input_is_translated_back_to_kodelet_keys(project: Path) -> None:
    upper = script(project, "upper.sh", UPPERCASE_WRITE)
    settings(project_settings(project), {"PreToolUse": [command(upper, "Write")]})
    rt = runtime(project)
    try:
        res = rt.dispatch(before(project, "file_write", {"file_path": "a.txt", "text": "hi"}))
        assert res.result.input == {"file_path": "a.txt", "text": "HI"}
    finally:
        rt.close()


def test_additional_context_accumulates_in_call_order(project: Path) -> None:
    write_hook(
        project / ".kodelet" / "hooks",
        "ctx",
        "#!/bin/sh\n"
        'if [ "$1" = hook ]; then echo after_tool_call; exit 0; fi\n'
        'cat >/dev/null; echo \'{"additional_context": ["from executable"]}\'\n',
    )

    class Native:
        @hookimpl
        def after_tool_call(self) -> dict[str, Any]:
            return {"additional_context": ["from native"]}

    post = script(project, "post.py", POST_CONTEXT)
    settings(project_settings(project), {"PostToolUse": [command(post)]})
    rt = runtime(project, plugins=[("native", Native())])
    try:
        payload = AfterToolCallPayload(
            conv_id="c1",
            cwd=str(project),
            tool_name="bash",
            tool_input={"command": "ls"},
            tool_user_id="t1",
            tool_output=StructuredToolResult(tool_name="bash", success=True),
        )
        res = rt.dispatch(payload)
        assert [r.source for r in res.trace] == [Source.EXECUTABLE, Source.PYTHON, Source.CLAUDE]
        assert res.result.additional_context == ["from executable", "from native", "saw Bash"]
        assert result_to_wire(Event.AFTER_TOOL_CALL, res.result)["additional_context"] == [
            "from executable",
            "from native",
            "saw Bash",
        ]
        failed = attrs_evolve_failed(payload)
        assert rt.dispatch(failed).result.additional_context == ["from executable", "from native"]
    finally:
        rt.close()


def attrs_evolve_failed(payload: AfterToolCallPayload) -> AfterToolCallPayload:
    import attrs

    out = StructuredToolResult(tool_name="bash", success=False, error="boom")
    return attrs.evolve(payload, tool_output=out)


def test_empty_additional_context_is_left_off_the_wire(project: Path) -> None:
    rt = runtime(project)
    try:
        res = rt.dispatch(before(project, "bash", {"command": "ls"}))
        assert "additional_context" not in result_to_wire(Event.BEFORE_TOOL_CALL, res.result)
    finally:
        rt.close()


def test_plain_text_and_continue_false_on_user_prompt_submit(project: Path) -> None:
    settings(
        project_settings(project),
        {"UserPromptSubmit": [command('echo "branch is $(jq -r .prompt | wc -c) long"')]},
    )
    local = project / ".claude" / "settings.local.json"
    settings(
        local,
        {
            "UserPromptSubmit": [
                command(
                    'jq -c \'if (.prompt|test("freeze")) then '
                    '{continue: false, stopReason: "frozen"} else {} end\''
                )
            ]
        },
    )
    rt = runtime(project)
    try:
        msg = UserMessageSendPayload(conv_id="c1", cwd=str(project), message="hello")
        res = rt.dispatch(msg).result
        assert not res.blocked and res.additional_context == ["branch is 6 long"]
        frozen = UserMessageSendPayload(conv_id="c1", cwd=str(project), message="freeze")
        res = rt.dispatch(frozen).result
        assert res.blocked and res.reason == "frozen"
    finally:
        rt.close()


def test_stop_block_becomes_follow_up_and_subagent_stop_is_separate(project: Path) -> None:
    settings(
        project_settings(project),
        {
            "Stop": [command("""echo '{"decision": "block", "reason": "run the tests"}'""")],
            "SubagentStop": [command("echo 'subagent not done' >&2; exit 2")],
        },
    )
    rt = runtime(project)
    try:
        main = rt.dispatch(stop(project)).result
        assert main.follow_up_messages == ["run the tests"]
        sub = rt.dispatch(stop(project, "subagent")).result
        assert sub.follow_up_messages == ["subagent not done"]
    finally:
        rt.close()


def test_disable_by_name_in_config(project: Path) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    settings(project_settings(project), {"PreToolUse": [command(guard, "Bash")]})
    name = "claude:project:PreToolUse:0:0"
    (project / ".kodelet" / "config.toml").write_text(f'[hooks."{name}"]\nenabled = false\n')
    rt = runtime(project)
    try:
        assert not rt.dispatch(before(project, "bash", {"command": "rm -rf /"})).result.blocked
        row = next(r for r in hook_rows(rt) if r["name"] == name)
        assert row["status"] == "disabled" and row["kind"] == "claude"
        assert row["event"] == "before_tool_call"
    finally:
        rt.close()


def test_fail_closed_claude_hook_blocks_when_it_fails(project: Path) -> None:
    settings(project_settings(project), {"PreToolUse": [command("exit 1")]})
    name = "claude:project:PreToolUse:0:0"
    (project / ".kodelet" / "config.toml").write_text(f'[hooks."{name}"]\nfail_closed = true\n')
    rt = runtime(project)
    try:
        res = rt.dispatch(before(project, "bash", {"command": "ls"}))
        assert res.result.blocked and name in res.result.reason
    finally:
        rt.close()


def test_claude_hooks_switch_off(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    settings(project_settings(project), {"PreToolUse": [command(guard, "Bash")]})

    def claude_hooks(rt: Runtime) -> list[str]:
        try:
            return [h.name for h in rt.hooks(Event.BEFORE_TOOL_CALL) if h.source == Source.CLAUDE]
        finally:
            rt.close()

    assert claude_hooks(runtime(project)) == ["claude:project:PreToolUse:0:0"]
    assert claude_hooks(runtime(project, no_hooks=True)) == []
    assert claude_hooks(runtime(project, claude=False)) == []
    monkeypatch.setenv("KODELET_NO_HOOKS", "1")
    assert claude_hooks(runtime(project)) == []
    monkeypatch.delenv("KODELET_NO_HOOKS")
    (project / ".kodelet" / "config.toml").write_text("[claude]\nhooks = false\n")
    assert claude_hooks(runtime(project)) == []
    (project / ".kodelet" / "config.toml").write_text('[claude]\nhooks = "no"\n')
    with pytest.raises(ValueError, match=r"claude\.hooks"):
        runtime(project)


def test_broken_files_and_entries_are_skipped_with_reasons(
    project: Path, isolated_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    user = isolated_home / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text('{"hooks": {"PreToolUse": [')
    guard = script(project, "no_rm.sh", NO_RM)
    settings(
        project_settings(project),
        {
            "PreToolUse": [
                command(guard, "Bash"),
                {"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "is it safe?"}]},
                {"matcher": "Bash", "hooks": [{"type": "webhook", "url": "x"}]},
                {"matcher": "Bash(", "hooks": [{"type": "command", "command": "true"}]},
                "not an entry",
            ],
            "SessionStart": [command("echo hi")],
            "Bogus": [command("echo hi")],
        },
    )
    local = project / ".claude" / "settings.local.json"
    local.write_text('{"hooks": ["PreToolUse"]}')
    with caplog.at_level(logging.WARNING, logger="kodelet.claude"):
        rt = runtime(project)
    try:
        assert rt.dispatch(before(project, "bash", {"command": "rm -rf /"})).result.blocked
        rows = {r["name"]: r for r in hook_rows(rt) if r["kind"] == "claude"}
    finally:
        rt.close()
    assert rows["claude:user"]["status"] == "skipped"
    assert "not valid JSON" in rows["claude:user"]["reason"]
    assert rows["claude:user"]["path"] == str(user)
    assert rows["claude:project:PreToolUse:0:0"]["status"] == "active"
    assert rows["claude:project:PreToolUse:1:0"]["reason"] == (
        "prompt hooks need a model (not configured)"
    )
    assert "unknown hook type 'webhook'" in rows["claude:project:PreToolUse:2:0"]["reason"]
    assert "matcher" in rows["claude:project:PreToolUse:3"]["reason"]
    assert "hooks.PreToolUse[4]" in rows["claude:project:PreToolUse:4"]["reason"]
    session = rows["claude:project:SessionStart:0:0"]
    assert session["event"] is None and "no kodelet counterpart" in session["reason"]
    assert "unknown Claude Code event" in rows["claude:project:Bogus"]["reason"]
    assert "key 'hooks'" in rows["claude:local"]["reason"]
    warned = "\n".join(r.getMessage() for r in caplog.records)
    assert str(user) in warned and "not valid JSON" in warned
    assert "hooks.PreToolUse[2].hooks[0].type" in warned


def test_plugin_hooks_json_with_plugin_root(project: Path, kodelet_home: Path) -> None:
    repo = kodelet_home / "plugins" / "acme@guards"
    write_hook(repo / "scripts", "guard.sh", NO_RM)
    settings(
        repo / "hooks" / "hooks.json",
        {"PreToolUse": [command("${CLAUDE_PLUGIN_ROOT}/scripts/guard.sh", "Bash")]},
    )
    rt = runtime(project)
    try:
        names = [h.name for h in rt.hooks(Event.BEFORE_TOOL_CALL)]
        assert names == ["claude:plugin:acme/guards:PreToolUse:0:0", "builtin:protect-kodelet"]
        assert not [r for r in hook_rows(rt) if r["path"] and r["kind"] == "executable"]
        res = rt.dispatch(before(project, "bash", {"command": "rm -rf x"}))
        assert res.result.blocked and res.result.reason == "no rm -rf here"
    finally:
        rt.close()


def test_order_user_project_local_and_after_kodelet_hooks(
    project: Path, isolated_home: Path
) -> None:
    log = project / "order.log"
    settings(
        isolated_home / ".claude" / "settings.json", {"Stop": [command(f"echo user >> {log}")]}
    )
    settings(project_settings(project), {"Stop": [command(f"echo project >> {log}")]})
    settings(
        project / ".claude" / "settings.local.json", {"Stop": [command(f"echo local >> {log}")]}
    )
    write_hook(
        project / ".kodelet" / "hooks",
        "first",
        f'#!/bin/sh\nif [ "$1" = hook ]; then echo agent_stop; exit 0; fi\necho exe >> {log}\n',
    )
    rt = runtime(project)
    try:
        entries = rt.hooks(Event.AGENT_STOP)
        assert [e.source for e in entries] == [Source.EXECUTABLE] + [Source.CLAUDE] * 3
        assert [e.rank for e in entries] == sorted(e.rank for e in entries)
        rt.dispatch(stop(project))
    finally:
        rt.close()
    assert log.read_text().split() == ["exe", "user", "project", "local"]


def test_cli_hooks_list_run_and_disable(project: Path) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    settings(project_settings(project), {"PreToolUse": [command(guard, "Bash")]})
    name = "claude:project:PreToolUse:0:0"
    listed = run_kodelet("--cwd", str(project), "hooks", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in json.loads(listed.stdout) if r["name"] == name)
    assert row["kind"] == "claude" and row["status"] == "active"
    assert row["path"] == str(project_settings(project))
    payload = '{"tool_name": "bash", "tool_input": {"command": "rm -rf /"}}'
    ran = run_kodelet(
        "--cwd", str(project), "hooks", "run", "before_tool_call", "--payload", "-", stdin=payload
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"blocked": True, "reason": "no rm -rf here"}
    off = run_kodelet("--cwd", str(project), "hooks", "disable", name)
    assert off.returncode == 0, off.stderr
    again = run_kodelet(
        "--cwd", str(project), "hooks", "run", "before_tool_call", "--payload", "-", stdin=payload
    )
    assert json.loads(again.stdout) == {"blocked": False}
    missing = run_kodelet("--cwd", str(project), "hooks", "disable", "claude:project:Stop:0:0")
    assert missing.returncode == 1 and "no Claude Code hook" in missing.stderr
    no_traceback(missing)


def test_cli_claude_run(project: Path) -> None:
    guard = script(project, "no_rm.sh", NO_RM)
    settings(
        project_settings(project),
        {
            "PreToolUse": [command(guard, "Bash")],
            "SessionStart": [command("echo 'welcome back'")],
        },
    )
    payload = '{"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}'
    res = run_kodelet(
        "--cwd", str(project), "claude", "run", "PreToolUse", "-p", "-", stdin=payload
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"] == "no rm -rf here"
    started = run_kodelet(
        "--cwd",
        str(project),
        "claude",
        "run",
        "SessionStart",
        "-p",
        "-",
        stdin='{"source": "startup"}',
    )
    assert json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"] == "welcome back"
    bad = run_kodelet("--cwd", str(project), "claude", "run", "Nope")
    assert bad.returncode == 2 and "unknown Claude hook event" in bad.stderr
    no_traceback(bad)


def test_async_dispatch_and_context_kept_when_a_later_hook_blocks(project: Path) -> None:
    import asyncio

    write_hook(
        project / ".kodelet" / "hooks",
        "ctx",
        "#!/bin/sh\n"
        'if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi\n'
        'cat >/dev/null; echo \'{"additional_context": ["checked by kodelet"]}\'\n',
    )
    guard = script(project, "no_rm.sh", NO_RM)
    settings(project_settings(project), {"PreToolUse": [command(guard, "Bash")]})
    rt = runtime(project)
    try:
        res = asyncio.run(rt.adispatch(before(project, "bash", {"command": "rm -rf /"})))
        assert res.result.blocked and res.result.reason == "no rm -rf here"
        assert res.result.additional_context == ["checked by kodelet"]
        ok = asyncio.run(rt.adispatch(before(project, "bash", {"command": "ls"})))
        assert not ok.result.blocked
    finally:
        rt.close()


def test_the_adapter_is_registered_under_its_own_name() -> None:
    from kodelet.adapters.claude_hooks import NAME
    from kodelet.assembly import CLAUDE_ADAPTER

    assert NAME == CLAUDE_ADAPTER


@pytest.mark.parametrize("kind", ["fifo", "duplicate key"])
def test_a_hostile_settings_file_is_a_listed_problem_not_a_hang(project: Path, kind: str) -> None:
    """A cloned repository writes .claude/settings.json: a FIFO there must not hang a
    start, and a duplicate key must not decide which hooks exist."""
    import os

    path = project_settings(project)
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text('{"hooks": {}, "hooks": {"PreToolUse": []}}')
    res = run_kodelet("--cwd", str(project), "hooks", "list", "--json", timeout=30)
    assert res.returncode == 0, res.stderr
    rows = [r for r in json.loads(res.stdout) if r["name"] == "claude:project"]
    assert len(rows) == 1 and rows[0]["status"] == "skipped", rows
    reason = str(rows[0]["reason"])
    assert ("not a regular file" in reason) if kind == "fifo" else ("duplicate" in reason), reason


@pytest.mark.parametrize("timeout", [0, True, 1e12, "5"])
def test_a_settings_timeout_is_checked_as_kodelets_own(project: Path, timeout: Any) -> None:
    """Past ~2.1e6 s timers fail (fail open); the hook is listed as not run instead."""
    settings(project_settings(project), {"PreToolUse": [command("true", timeout=timeout)]})
    with runtime(project) as rt:
        rows = [r for r in hook_rows(rt) if r["name"].startswith("claude:project")]
    assert [r["status"] for r in rows] == ["skipped"], rows
    assert "'timeout'" in str(rows[0]["reason"]), rows
