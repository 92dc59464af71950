"""Spec 07's runner test list, with real scripts: callbacks, command hooks, matchers,
timeouts, continue=false, several matchers and hooks, error isolation, async hooks,
input/output round trips and emission."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from kodelet.claude import (
    CommandHook,
    HookDataError,
    HookEvent,
    HookMatcher,
    HookProgress,
    HookResponse,
    HookStarted,
    Outcome,
    Runner,
    merge,
)
from kodelet.testing import write_hook

from tests.kit.claude_runner import MakeRunner, bash_input
from tests.kit.processes import alive, wait_for

# --- callbacks ------------------------------------------------------------


def test_sync_and_async_callbacks_get_the_sdk_arguments(make_runner: MakeRunner) -> None:
    seen: list[tuple[Any, ...]] = []

    def sync_hook(data: dict[str, Any], tool_use_id: str | None, context: dict[str, Any]) -> None:
        seen.append(("sync", data["tool_name"], tool_use_id, "signal" in context))

    async def async_hook(data: dict[str, Any], tool_use_id: str | None, ctx: dict[str, Any]) -> Any:
        seen.append(("async", data["hook_event_name"], data["session_id"], data["cwd"]))
        return {"systemMessage": "checked"}

    runner = make_runner({"PreToolUse": [HookMatcher("Bash", [sync_hook, async_hook])]})
    results = runner.fire("PreToolUse", bash_input(), tool_use_id="toolu_9")
    assert seen == [
        ("sync", "Bash", "toolu_9", True),
        ("async", "PreToolUse", "sess-1", runner.cwd),
    ]
    assert [r.outcome for r in results] == [Outcome.SUCCESS, Outcome.SUCCESS]
    assert results[1].system_message == "checked"
    assert [r.kind for r in results] == ["callback", "callback"]


def test_afire_runs_on_the_callers_loop(make_runner: MakeRunner) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def hook(*_: Any) -> None:
        loops.append(asyncio.get_running_loop())

    runner = make_runner({"Stop": [HookMatcher(None, [hook])]})

    async def host() -> None:
        results = await runner.afire(HookEvent.STOP, {})
        assert loops == [asyncio.get_running_loop()]
        assert results[0].outcome == Outcome.SUCCESS

    asyncio.run(host())


# --- command hooks --------------------------------------------------------


def test_command_hook_sees_the_input_env_and_cwd(make_runner: MakeRunner, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    record = tmp_path / "seen.json"
    hook = write_hook(
        tmp_path / "hooks",
        "record.sh",
        f"""#!/bin/bash
jq -c --arg pwd "$PWD" --arg project "$CLAUDE_PROJECT_DIR" --arg plugin "$CLAUDE_PLUGIN_ROOT" \\
  '{{input: ., pwd: $pwd, project: $project, plugin: $plugin}}' > {record}
""",
    )
    runner = make_runner(
        {"PreToolUse": [HookMatcher("Bash", [CommandHook(str(hook), plugin_root="/plug")])]}
    )
    data = {**bash_input("ls -la"), "cwd": str(work), "future_field": [1, 2]}
    (result,) = runner.fire("PreToolUse", data, tool_use_id="toolu_1")
    assert result.outcome == Outcome.SUCCESS and result.exit_code == 0
    seen = json.loads(record.read_text())
    assert seen["input"] == {
        "session_id": "sess-1",
        "transcript_path": "",
        "cwd": str(work),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
        "tool_use_id": "",
        "future_field": [1, 2],
    }
    assert seen["pwd"] == str(work)
    assert seen["project"] == runner.cwd
    assert seen["plugin"] == "/plug"


def test_command_runs_through_the_shell(make_runner: MakeRunner) -> None:
    hook = CommandHook('read -r line; test -n "$line" && echo \'{"systemMessage": "piped"}\'')
    runner = make_runner({"Stop": [HookMatcher(None, [hook])]})
    (result,) = runner.fire("Stop", {})
    assert result.system_message == "piped"


def test_plain_stdout_is_a_message_not_an_error(make_runner: MakeRunner) -> None:
    runner = make_runner({"PostToolUse": [HookMatcher(None, [CommandHook("echo formatted ok")])]})
    (result,) = runner.fire("PostToolUse", bash_input())
    assert result.outcome == Outcome.SUCCESS
    assert result.message == "formatted ok"
    assert result.additional_context is None  # only UserPromptSubmit and SessionStart


def test_stdout_is_capped_and_stderr_tail_kept(make_runner: MakeRunner) -> None:
    flood = CommandHook("head -c 17000000 /dev/zero | tr '\\0' x")
    noisy = CommandHook("for i in $(seq 1 3000); do echo line$i >&2; done; exit 2")
    runner = make_runner({"PostToolUse": [HookMatcher(None, [flood, noisy])]})
    big, loud = runner.fire("PostToolUse", bash_input())
    assert big.outcome == Outcome.ERROR and "output exceeded" in (big.error or "")
    assert loud.outcome == Outcome.BLOCKING
    assert loud.message is not None and loud.message.endswith("line3000")
    assert len(loud.message) <= 4096 and "line1\n" not in loud.message


# --- matchers -------------------------------------------------------------


def _tagger(tag: str, ran: list[str]) -> Any:
    def hook(*_: Any) -> None:
        ran.append(tag)

    return hook


@pytest.mark.parametrize(
    ("matcher", "tools_that_run"),
    [
        ("Bash", ["Bash"]),
        ("mcp__*", ["mcp__db__query"]),
        ("Write|Edit", ["Write", "Edit"]),
        ("", ["Bash", "Write", "Edit", "mcp__db__query"]),
        (None, ["Bash", "Write", "Edit", "mcp__db__query"]),
    ],
)
def test_exact_glob_and_empty_matchers(
    make_runner: MakeRunner, matcher: str | None, tools_that_run: list[str]
) -> None:
    ran: list[str] = []

    def hook(data: dict[str, Any], *_: Any) -> None:
        ran.append(data["tool_name"])

    runner = make_runner({"PreToolUse": [HookMatcher(matcher, [hook])]})
    for tool in ["Bash", "Write", "Edit", "mcp__db__query"]:
        runner.fire("PreToolUse", {"tool_name": tool})
    assert ran == tools_that_run


def test_multiple_matchers_and_hooks_run_in_order(make_runner: MakeRunner) -> None:
    ran: list[str] = []
    runner = make_runner(
        {
            "PreToolUse": [
                HookMatcher("Bash", [_tagger("a1", ran), _tagger("a2", ran)]),
                HookMatcher("Write", [_tagger("skipped", ran)]),
                HookMatcher("*", [_tagger("b1", ran)]),
            ]
        }
    )
    results = runner.fire("PreToolUse", bash_input())
    assert ran == ["a1", "a2", "b1"]
    assert [r.hook for r in results] == [
        "_tagger.<locals>.hook",
        "_tagger.<locals>.hook",
        "_tagger.<locals>.hook",
    ]


def test_continue_false_stops_the_rest_of_its_matcher_only(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    ran: list[str] = []
    stopper = write_hook(
        tmp_path,
        "stop.py",
        "#!/usr/bin/env python3\n"
        "import json\n"
        "print(json.dumps({'continue': False, 'stopReason': 'quota reached'}))\n",
    )
    runner = make_runner(
        {
            "PostToolUse": [
                HookMatcher(None, [_tagger("before", ran), CommandHook(str(stopper))]),
                HookMatcher(None, [_tagger("other matcher", ran)]),
            ]
        }
    )
    results = runner.fire("PostToolUse", bash_input())
    assert ran == ["before", "other matcher"]
    assert results[1].continue_ is False and results[1].stop_reason == "quota reached"
    assert merge("PostToolUse", results) == {"continue": False, "stopReason": "quota reached"}

    after: list[str] = []
    runner = make_runner(
        {"PostToolUse": [HookMatcher(None, [CommandHook(str(stopper)), _tagger("after", after)])]}
    )
    results = runner.fire("PostToolUse", bash_input())
    assert after == [] and len(results) == 1


# --- timeouts -------------------------------------------------------------


def test_command_timeout_kills_the_whole_process_group(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    hook = CommandHook(f"sleep 30 & echo $! > {pids}; sleep 30")
    ran: list[str] = []
    runner = make_runner(
        {"PreToolUse": [HookMatcher(None, [hook, _tagger("next", ran)], timeout=0.5)]}
    )
    start = time.monotonic()
    first, second = runner.fire("PreToolUse", bash_input())
    assert time.monotonic() - start < 5
    assert first.outcome == Outcome.TIMEOUT and first.error == "timed out after 0.5s"
    assert second.outcome == Outcome.SUCCESS and ran == ["next"]
    child = int(pids.read_text())
    assert wait_for(lambda: not alive(child), 2)


def test_callback_timeout_is_that_hooks_failure(make_runner: MakeRunner) -> None:
    async def slow(*_: Any) -> dict[str, Any]:
        await asyncio.sleep(10)
        return {"decision": "block"}

    signals: list[Any] = []

    def slow_sync(data: dict[str, Any], tid: str | None, context: dict[str, Any]) -> None:
        signals.append(context["signal"])
        context["signal"].wait(10)

    runner = make_runner({"Stop": [HookMatcher(None, [slow, slow_sync], timeout=0.2)]})
    start = time.monotonic()
    results = runner.fire("Stop", {})
    assert time.monotonic() - start < 3
    assert [r.outcome for r in results] == [Outcome.TIMEOUT, Outcome.TIMEOUT]
    assert signals[0].is_set()  # a sync hook past its time is told to give up
    assert merge("Stop", results) == {}


def test_a_command_hooks_own_timeout_wins(make_runner: MakeRunner) -> None:
    runner = make_runner(
        {"Stop": [HookMatcher(None, [CommandHook("sleep 5", timeout=0.3)], timeout=60)]}
    )
    (result,) = runner.fire("Stop", {})
    assert result.outcome == Outcome.TIMEOUT and result.error == "timed out after 0.3s"


# --- error isolation ------------------------------------------------------


def test_one_hooks_error_never_stops_another(make_runner: MakeRunner, tmp_path: Path) -> None:
    def boom(*_: Any) -> None:
        raise RuntimeError("kaput")

    def bad_shape(*_: Any) -> Any:
        return {"continue": "sure"}

    def not_a_dict(*_: Any) -> Any:
        return ["deny"]

    ran: list[str] = []
    runner = make_runner(
        {
            "PreToolUse": [
                HookMatcher(
                    None,
                    [
                        boom,
                        bad_shape,
                        not_a_dict,
                        CommandHook("echo failing >&2; exit 1"),
                        CommandHook("no-such-command-anywhere"),
                        CommandHook('echo \'{"hookSpecificOutput": {"permissionDecision": 7}}\''),
                        CommandHook("true", name="fine"),
                        _tagger("last", ran),
                    ],
                )
            ]
        }
    )
    results = runner.fire("PreToolUse", bash_input(cwd=str(tmp_path)))
    assert [r.outcome for r in results] == [Outcome.ERROR] * 6 + [Outcome.SUCCESS] * 2
    errors = [r.error for r in results[:6]]
    assert errors[0] == "RuntimeError: kaput"
    assert errors[1] == "expected a boolean, got str @ output.continue"
    assert errors[2] == "output: expected a JSON object, got list"
    assert errors[3] == "exited with status 1: failing"
    assert results[4].exit_code == 127 and "not found" in (errors[4] or "")
    assert "output.hookSpecificOutput.permissionDecision" in (errors[5] or "")
    assert results[6].hook == "fine" and ran == ["last"]
    assert merge("PreToolUse", results) == {}  # errors never deny (nor allow) by accident


def test_bad_input_is_a_one_line_error(make_runner: MakeRunner) -> None:
    runner = make_runner({})
    with pytest.raises(HookDataError, match=r"required field missing @ input\.tool_name"):
        runner.fire("PreToolUse", {"tool_input": {}})
    with pytest.raises(ValueError, match="unknown Claude hook event 'BeforeTool'"):
        runner.fire("BeforeTool", {})
    with pytest.raises(ValueError, match="unknown Claude hook event"):
        Runner({"Stopp": []})


def test_a_missing_cwd_is_the_hooks_failure(make_runner: MakeRunner, tmp_path: Path) -> None:
    runner = make_runner({"Stop": [HookMatcher(None, [CommandHook("true")])]})
    (result,) = runner.fire("Stop", {"cwd": str(tmp_path / "gone")})
    assert result.outcome == Outcome.ERROR and "does not exist" in (result.error or "")


# --- async hooks ----------------------------------------------------------


def test_async_callback_hands_its_late_result_to_the_next_fire(make_runner: MakeRunner) -> None:
    async def background(*_: Any) -> Any:
        yield {"async_": True, "asyncTimeout": 5000}
        await asyncio.sleep(0.1)
        yield {"systemMessage": "tests passed", "hookSpecificOutput": {"additionalContext": "ok"}}

    runner = make_runner({"PostToolUse": [HookMatcher(None, [background])]})
    start = time.monotonic()
    (first,) = runner.fire("PostToolUse", bash_input())
    assert time.monotonic() - start < 0.1
    assert (
        first.is_async and not first.late and first.output == {"async": True, "asyncTimeout": 5000}
    )
    time.sleep(0.3)
    late, now = runner.fire("PostToolUse", bash_input())
    assert late.late and late.system_message == "tests passed"
    assert now.is_async
    assert merge("PostToolUse", [late, now]) == {
        "systemMessage": "tests passed",
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "ok"},
    }
    (drained,) = runner.drain_sync()
    assert drained.late and drained.system_message == "tests passed"


def test_async_command_keeps_running_and_drain_collects_it(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    hook = write_hook(
        tmp_path,
        "bg.sh",
        """#!/bin/bash
echo '{"async": true, "asyncTimeout": 5000}'
sleep 0.3
echo '{"systemMessage": "lint clean"}'
""",
    )
    runner = make_runner({"PostToolUse": [HookMatcher(None, [CommandHook(str(hook))])]})

    async def host() -> None:
        start = time.monotonic()
        (first,) = await runner.afire("PostToolUse", bash_input())
        assert time.monotonic() - start < 0.25
        assert first.is_async
        (late,) = await runner.drain()
        assert late.late and late.outcome == Outcome.SUCCESS
        assert late.system_message == "lint clean"
        assert await runner.drain() == []

    asyncio.run(host())


def test_configured_async_command_answers_at_once(make_runner: MakeRunner, tmp_path: Path) -> None:
    marker = tmp_path / "done"
    hook = CommandHook(f"sleep 0.3; touch {marker}; echo 'Build ok'", async_=True)
    runner = make_runner({"Stop": [HookMatcher(None, [hook])]})
    start = time.monotonic()
    (first,) = runner.fire("Stop", {})
    assert time.monotonic() - start < 0.25 and first.is_async and not marker.exists()
    (late,) = runner.drain_sync()
    assert marker.exists() and late.late and late.message == "Build ok"


def test_async_hook_past_its_async_timeout_is_killed(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    pids = tmp_path / "pid"
    hook = CommandHook(
        f'echo \'{{"async": true, "asyncTimeout": 300}}\'; echo $$ > {pids}; sleep 30'
    )

    async def slow_gen(*_: Any) -> Any:
        yield {"async_": True, "asyncTimeout": 200}
        await asyncio.sleep(30)
        yield {"systemMessage": "never"}

    runner = make_runner({"Stop": [HookMatcher(None, [hook, slow_gen])]})
    runner.fire("Stop", {})
    start = time.monotonic()
    command, callback = runner.drain_sync()
    assert time.monotonic() - start < 3
    assert command.outcome == Outcome.TIMEOUT and command.error == "timed out after 0.3s"
    assert callback.outcome == Outcome.TIMEOUT and callback.late
    assert not alive(int(pids.read_text()))


def test_close_kills_async_hooks_still_running(tmp_path: Path) -> None:
    pids = tmp_path / "pid"
    runner = Runner(
        {"Stop": [HookMatcher(None, [CommandHook(f"echo $$ > {pids}; sleep 30", async_=True)])]},
        cwd=str(tmp_path),
    )
    runner.fire("Stop", {})
    wait_for(lambda: pids.exists() and pids.read_text().strip(), 3)
    runner.close()
    pid = int(pids.read_text())
    assert wait_for(lambda: not alive(pid), 2)
    with pytest.raises(RuntimeError, match="closed"):
        runner.fire("Stop", {})


# --- emission -------------------------------------------------------------


def test_emission_streams_each_line_as_it_arrives(make_runner: MakeRunner) -> None:
    seen: list[tuple[float, Any]] = []
    runner = make_runner(
        {
            "Stop": [
                HookMatcher(None, [CommandHook("echo one; echo warn >&2; sleep 0.4; echo two")])
            ]
        },
        emit=lambda m: seen.append((time.monotonic(), m)),
    )
    (result,) = runner.fire("Stop", {})
    kinds = [type(m).__name__ for _, m in seen]
    assert kinds[0] == "HookStarted" and kinds[-1] == "HookResponse"
    progress = [m for _, m in seen if isinstance(m, HookProgress)]
    assert sorted((p.stdout, p.stderr) for p in progress) == [
        ("", "warn"),
        ("one", ""),
        ("two", ""),
    ]
    first_line_at = next(t for t, m in seen if isinstance(m, HookProgress) and m.stdout == "one")
    done_at = seen[-1][0]
    assert done_at - first_line_at > 0.3  # "one" was emitted while the hook still ran
    response = seen[-1][1]
    assert isinstance(response, HookResponse) and response.result is result
    message = response.to_message()
    assert message["type"] == "system" and message["subtype"] == "hook_response"
    assert message["hook_event"] == "Stop" and message["exit_code"] == 0
    assert message["outcome"] == "success" and message["stdout"] == "one\ntwo"
    assert message["session_id"] == "sess-1" and message["duration_ms"] >= 400
    ids = {m.hook_id for _, m in seen}
    assert len(ids) == 1


def test_emission_into_a_queue(make_runner: MakeRunner) -> None:
    def deny(*_: Any) -> Any:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}

    async def host() -> asyncio.Queue[Any]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        runner = make_runner(
            {"PreToolUse": [HookMatcher(None, [deny, CommandHook("exit 2")])]}, emit=queue
        )
        await runner.afire("PreToolUse", bash_input())
        return queue

    queue = asyncio.run(host())
    messages = [queue.get_nowait().to_message() for _ in range(queue.qsize())]
    assert [(m["subtype"], m.get("outcome")) for m in messages] == [
        ("hook_started", None),
        ("hook_response", "success"),
        ("hook_started", None),
        ("hook_response", "error"),
    ]
    assert messages[1]["hook_name"] == "test_emission_into_a_queue.<locals>.deny"
    assert "exit_code" not in messages[1] and messages[3]["exit_code"] == 2


def test_a_failing_sink_does_not_fail_the_hooks(make_runner: MakeRunner) -> None:
    def sink(_: HookStarted) -> None:
        raise OSError("disk full")

    runner = make_runner({"Stop": [HookMatcher(None, [CommandHook("true")])]}, emit=sink)
    (result,) = runner.fire("Stop", {})
    assert result.outcome == Outcome.SUCCESS
