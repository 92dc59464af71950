"""Persistent (``serve``/jsonl) hooks behave exactly like per-call ones, only faster."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kodelet import (
    AfterToolCallPayload,
    AfterTurnPayload,
    AgentStopPayload,
    BasePayload,
    BeforeToolCallPayload,
    Dispatch,
    Event,
    Message,
    Outcome,
    Runtime,
    StructuredToolResult,
    UsageInfo,
    UserMessageSendPayload,
    load_runtime,
)
from kodelet.adapters.executable import ExecutableHook
from kodelet.adapters.executables import NAME as EXECUTABLES
from kodelet.adapters.persistent import PersistentHook, backoff
from kodelet.testing import executables, per_call_runtime, write_hook

from tests.kit.processes import alive, wait_for

HANDLER = f"""#!{sys.executable}
import os, subprocess, sys, time
from kodelet import hookkit

EVENT = {{event!r}}


def handle(p):
    ev = p["event"]
    if ev == "before_tool_call":
        cmd = p["tool_input"].get("command", "")
        if cmd == "hang":
            time.sleep(60)
        if cmd == "crash":
            os._exit(3)
        if cmd == "raise":
            raise ValueError("boom")
        if cmd == "garbage":
            sys.stdout.write("this is not json\\n")
            sys.stdout.flush()
            return None
        if cmd == "child":
            child = subprocess.Popen(["sleep", "600"])
            with open(p["tool_input"]["pidfile"], "w") as fh:
                fh.write(str(child.pid))
            return None
        if cmd == "stderr":
            print("a note for the log", file=sys.stderr, flush=True)
            return None
        if "rm -rf" in cmd:
            return {{{{"blocked": True, "reason": "no rm -rf"}}}}
        return {{{{"input": {{{{**p["tool_input"], "checked": True}}}}}}}}
    if ev == "after_tool_call":
        out = dict(p["tool_output"])
        out["metadata"] = {{{{"pid_seen": "x", "tool": p["tool_name"]}}}}
        return {{{{"output": out}}}}
    if ev == "user_message_send":
        if "secret" in p["message"]:
            return {{{{"blocked": True, "reason": "leak"}}}}
        return None
    if ev == "after_turn":
        if p["turn_number"] >= 3:
            args = {{{{"n": "3"}}}}
            return {{{{"result": "callback", "callback": "compact", "callback_args": args}}}}
        return {{{{}}}}
    if ev == "agent_stop":
        return {{{{"follow_up_messages": [f"saw {{{{len(p['messages'])}}}} messages"]}}}}
    return None


hookkit.main(EVENT, handle)
"""


def hook_source(event: str) -> str:
    return HANDLER.format(event=event)


PAYLOADS: dict[str, list[BasePayload]] = {
    "before_tool_call": [
        BeforeToolCallPayload(tool_name="bash", tool_input={"command": "ls"}),
        BeforeToolCallPayload(tool_name="bash", tool_input={"command": "rm -rf /"}),
    ],
    "after_tool_call": [
        AfterToolCallPayload(
            tool_name="bash",
            tool_input={"command": "ls"},
            tool_output=StructuredToolResult(tool_name="bash", success=True, timestamp="t"),
        )
    ],
    "user_message_send": [
        UserMessageSendPayload(message="hello"),
        UserMessageSendPayload(message="my secret is 42"),
    ],
    "after_turn": [
        AfterTurnPayload(turn_number=1, usage=UsageInfo(input_tokens=5)),
        AfterTurnPayload(turn_number=3),
    ],
    "agent_stop": [
        AgentStopPayload(messages=[Message("user", "hi"), Message("assistant", "hello")]),
    ],
}


def summary(d: Dispatch) -> tuple[Any, list[tuple[str, Outcome, str | None]]]:
    return d.result, [(r.name, r.outcome, r.error) for r in d.trace]


def runtimes(project: Path, **kw: Any) -> tuple[Runtime, Runtime]:
    return (
        per_call_runtime(cwd=project, entry_points=False, **kw),
        load_runtime(cwd=project, entry_points=False, **kw),
    )


@pytest.mark.parametrize("event", list(PAYLOADS))
def test_persistent_matches_per_call_for_every_event(project: Path, event: str) -> None:
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source(event))
    per_call, persistent = runtimes(project)
    with per_call, persistent:
        (exe,) = executables(persistent)
        assert isinstance(exe, PersistentHook)
        assert not isinstance(executables(per_call)[0], PersistentHook)
        for payload in PAYLOADS[event] * 2:
            expected = summary(per_call.dispatch(payload))
            assert expected[1][0][1] is not Outcome.ERROR
            assert summary(persistent.dispatch(payload)) == expected
            assert summary(asyncio.run(persistent.adispatch(payload))) == expected
        assert exe.starts == 1


def test_results_are_what_the_handler_said(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("before_tool_call"))
    with load_runtime(cwd=project, entry_points=False) as rt:
        ok, blocked = (rt.dispatch(p) for p in PAYLOADS["before_tool_call"])
    assert ok.result.input == {"command": "ls", "checked": True}
    assert blocked.result.blocked and blocked.result.reason == "no rm -rf"


def bad(cmd: str) -> BeforeToolCallPayload:
    return BeforeToolCallPayload(tool_name="bash", tool_input={"command": cmd})


@pytest.mark.parametrize("fail_closed", [False, True])
@pytest.mark.parametrize(
    ("cmd", "error_start"),
    [
        ("hang", "timed out after 1s"),
        ("crash", "exited with status 3"),
        ("raise", "exited with status 1"),
        ("garbage", "output is not JSON"),
    ],
)
def test_failures_match_per_call_and_the_server_restarts(
    project: Path, cmd: str, error_start: str, fail_closed: bool
) -> None:
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("before_tool_call"))
    setting = str(fail_closed).lower()
    (project / ".kodelet" / "config.toml").write_text(f'[hooks."kit"]\nfail_closed = {setting}\n')
    per_call, persistent = runtimes(project, timeout=1)
    with per_call, persistent:
        (exe,) = executables(persistent)
        assert isinstance(exe, PersistentHook)
        persistent.dispatch(bad("ls"))
        first_pid = exe.pid
        expected = per_call.dispatch(bad(cmd))
        started = time.monotonic()
        got = persistent.dispatch(bad(cmd))
        assert time.monotonic() - started < 5
        assert got.result == expected.result
        assert [r.outcome for r in got.trace] == [r.outcome for r in expected.trace]
        # builtin:protect-kodelet runs last, unless a fail-closed block stopped the chain
        assert [r.outcome for r in got.trace] == [Outcome.ERROR] + (
            [] if fail_closed else [Outcome.NO_ACTION]
        )
        for d in (got, expected):
            assert d.trace[0].error is not None and d.trace[0].error.startswith(error_start)
        assert got.result.blocked is fail_closed
        assert first_pid is not None and not alive(first_pid)

        after = persistent.dispatch(bad("ls"))
        assert after.result.input == {"command": "ls", "checked": True}
        assert exe.starts == 2 and exe.pid != first_pid


def test_handler_exception_reaches_the_trace_with_its_message(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("before_tool_call"))
    with load_runtime(cwd=project, entry_points=False) as rt:
        done = rt.dispatch(bad("raise"))
    (record,) = done.trace  # its failure blocks, so the chain stops there
    assert done.result.blocked is True
    assert record.error is not None and "ValueError: boom" in record.error


def test_servers_and_their_children_are_gone_after_close(project: Path, tmp_path: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    for event in PAYLOADS:
        write_hook(hooks, f"kit-{event}", hook_source(event))
    pidfile = tmp_path / "child.pid"
    rt = load_runtime(cwd=project, entry_points=False)
    for payloads in PAYLOADS.values():
        rt.dispatch(payloads[0])
    rt.dispatch(
        BeforeToolCallPayload(
            tool_name="bash", tool_input={"command": "child", "pidfile": str(pidfile)}
        )
    )
    pids = [exe.pid for exe in executables(rt) if isinstance(exe, PersistentHook)]
    child = int(pidfile.read_text())
    assert len(pids) == 5 and all(p is not None and alive(p) for p in pids)
    assert alive(child)
    rt.close()
    assert not any(alive(p) for p in pids if p is not None)
    assert not alive(child)


def test_context_manager_stops_servers(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("after_turn"))
    with load_runtime(cwd=project, entry_points=False) as rt:
        rt.dispatch(PAYLOADS["after_turn"][0])
        (exe,) = executables(rt)
        pid = exe.pid
        assert pid is not None and alive(pid)
    assert not alive(pid)


def test_a_forgotten_runtime_stops_its_servers_at_exit(project: Path, tmp_path: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("after_turn"))
    script = (
        "import sys\n"
        "from kodelet import load_runtime, AfterTurnPayload\n"
        "from kodelet.testing import executables\n"
        f"rt = load_runtime(cwd={str(project)!r}, entry_points=False)\n"
        "rt.dispatch(AfterTurnPayload(turn_number=1))\n"
        "print(executables(rt)[0].pid, flush=True)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    assert wait_for(lambda: not alive(pid), 5)


def test_stderr_goes_to_the_log(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kodelet.persistent")
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("before_tool_call"))
    with load_runtime(cwd=project, entry_points=False) as rt:
        d = rt.dispatch(bad("stderr"))
        assert d.trace[0].outcome is not Outcome.ERROR
        deadline = time.monotonic() + 5
        while "a note for the log" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.02)
    assert "hook kit: a note for the log" in caplog.text


CRASHER = """#!/bin/bash
case "$1" in
  hook) echo "before_tool_call jsonl";;
  serve) read line; echo "dying" >&2; exit 7;;
  run) cat > /dev/null;;
esac
"""


def test_a_crashing_server_backs_off(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "crasher", CRASHER)
    with load_runtime(cwd=project, entry_points=False) as rt:
        (exe,) = executables(rt)
        assert isinstance(exe, PersistentHook)
        errors = [rt.dispatch(bad("ls")).trace[0].error for _ in range(3)]
    assert errors[0] == errors[1] == "exited with status 7: dying"
    assert errors[2] is not None and "next restart in" in errors[2]
    assert exe.starts == 2


def test_backoff_schedule() -> None:
    assert backoff(0) == backoff(1) == 0.0
    assert [backoff(n) for n in (2, 3, 4)] == [0.1, 0.2, 0.4]
    assert backoff(100) == 5.0


PLAIN = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call;;
  run) cat > /dev/null; echo '{"blocked": true, "reason": "plain"}';;
esac
"""


def test_a_plain_hook_keeps_the_per_call_protocol(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "plain", PLAIN)
    with load_runtime(cwd=project, entry_points=False) as rt:
        (exe,) = executables(rt)
        assert type(exe) is ExecutableHook
        assert rt.dispatch(bad("ls")).result.reason == "plain"


def test_closed_hook_refuses_calls(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("before_tool_call"))
    rt = load_runtime(cwd=project, entry_points=False)
    (exe,) = executables(rt)
    rt.close()
    with pytest.raises(Exception, match="closed"):
        exe.run({"event": "before_tool_call", "tool_name": "x", "tool_input": {}}, timeout=5)
    assert exe.pid is None


def test_runners_are_made_when_their_event_is_first_asked_for(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "before", hook_source("before_tool_call"))
    write_hook(hooks, "turn", hook_source("after_turn"))
    with load_runtime(cwd=project, entry_points=False) as rt:
        adapter = rt.adapters[EXECUTABLES]
        assert adapter._runners == {}, "a start makes no runner"
        assert rt.dispatch(bad("ls")).result.blocked is False
        assert list(adapter._runners) == ["before"]
        assert [type(e) for e in executables(rt)] == [PersistentHook, PersistentHook]


def test_a_runner_made_after_close_never_starts_a_server(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("before_tool_call"))
    rt = load_runtime(cwd=project, entry_points=False)
    adapter = rt.adapters[EXECUTABLES]
    rt.close()
    (entry,) = adapter.kodelet_hooks(Event.BEFORE_TOOL_CALL)
    with pytest.raises(Exception, match="closed"):
        entry.run(bad("ls"), 5)
    (exe,) = executables(rt)
    assert exe.pid is None


@pytest.mark.parametrize(("protocols", "answer"), [("", "x_event"), ("jsonl", "x_event jsonl")])
def test_hookkit_advertises_jsonl_only_when_asked(
    tmp_path: Path, protocols: str, answer: str
) -> None:
    path = write_hook(tmp_path, "kit", hook_source("x_event"))
    env = {**os.environ, "KODELET_HOOK_PROTOCOLS": protocols}
    out = subprocess.run([str(path), "hook"], capture_output=True, text=True, env=env, timeout=30)
    assert out.stdout.strip() == answer


def test_hookkit_serves_until_eof(tmp_path: Path) -> None:
    path = write_hook(tmp_path, "kit", hook_source("user_message_send"))
    lines = '{"event": "user_message_send", "message": "a secret"}\n\n'
    lines += '{"event": "user_message_send", "message": "fine"}\n'
    out = subprocess.run(
        [str(path), "serve"], input=lines, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0
    assert out.stdout.splitlines() == ['{"blocked": true, "reason": "leak"}', "{}"]


def test_hookkit_run_prints_nothing_for_no_action(tmp_path: Path) -> None:
    path = write_hook(tmp_path, "kit", hook_source("user_message_send"))
    out = subprocess.run(
        [str(path), "run"],
        input='{"event": "user_message_send", "message": "x"}',
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (out.returncode, out.stdout) == (0, "")


def test_hookkit_rejects_unknown_commands(tmp_path: Path) -> None:
    path = write_hook(tmp_path, "kit", hook_source("user_message_send"))
    out = subprocess.run([str(path), "frobnicate"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "usage" in out.stderr


def test_dispatch_results_behave_like_plain_dispatches(project: Path) -> None:
    import pickle

    import attrs

    write_hook(project / ".kodelet" / "hooks", "kit", hook_source("user_message_send"))
    with load_runtime(cwd=project, entry_points=False) as rt:
        payload = PAYLOADS["user_message_send"][1]
        sync, async_ = rt.dispatch(payload), asyncio.run(rt.adispatch(payload))
    plain = Dispatch(sync.event, sync.result, sync.trace)
    assert isinstance(sync, Dispatch)
    assert plain == sync and sync == plain
    assert (sync != plain) is False
    assert [r.name for r in sync.trace] == [r.name for r in async_.trace] == ["kit"]
    assert pickle.loads(pickle.dumps(sync)) == plain
    assert attrs.evolve(sync, result=None).result is None
    assert repr(sync) == repr(plain)
    assert attrs.asdict(sync, recurse=False)["trace"] == plain.trace


HANGER = """#!/bin/sh
case "$1" in
  hook) echo "before_tool_call jsonl";;
  serve) while read -r line; do
      case "$line" in
        *HANG*) echo $$ > "{hung}"; while [ ! -e "{release}" ]; do sleep 0.05; done;;
      esac
      echo "{{\\"context\\": \\"$$\\"}}"
    done;;
esac
"""


def test_a_hung_server_holds_only_its_own_call(tmp_path: Path) -> None:
    """All calls of a persistent hook took turns on one server: one that hung stalled
    every concurrent call until its timeout. Another server takes the next call."""
    hung, release = tmp_path / "hung", tmp_path / "release"
    path = write_hook(tmp_path / "hooks", "hanger", HANGER.format(hung=hung, release=release))
    env = {**os.environ, "KODELET_HOOK_PROTOCOLS": "jsonl"}
    hook = PersistentHook("hanger", path, Event.BEFORE_TOOL_CALL, env=env)  # type: ignore[arg-type]
    call = {"event": "before_tool_call", "tool_name": "bash", "tool_input": {}}
    first: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: first.update(
            answer=hook.run({**call, "tool_input": {"command": "HANG"}}, timeout=120)
        )
    )
    try:
        worker.start()
        assert wait_for(hung.exists)
        second = hook.run(call, timeout=120)
        assert worker.is_alive()  # answered while the first call still hangs
        assert second["context"] != hung.read_text().strip()  # by another server
    finally:
        release.touch()
        worker.join(120)
        hook.close()
    assert first["answer"]["context"] == hung.read_text().strip()
