"""The ``run`` side of the executable-hook protocol, through a real Runtime.

Every hook here is a real bash script written into a temp project. Each case
runs through both ``Runtime.dispatch`` and ``Runtime.adispatch`` and expects
the same merged result, because a host must not get different answers from
the same hooks depending on which API it happens to use.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kodelet import hookimpl, load_runtime
from kodelet.events import Event
from kodelet.payloads import (
    AfterToolCallPayload,
    AfterTurnPayload,
    AgentStopPayload,
    BasePayload,
    BeforeToolCallPayload,
    Message,
    StructuredToolResult,
    UsageInfo,
    UserMessageSendPayload,
)
from kodelet.process import STDOUT_CAP, arun_process, run_process
from kodelet.results import AgentStopResult, BeforeToolCallResult
from kodelet.runtime import Runtime
from kodelet.testing import write_hook
from kodelet.trace import Dispatch, Outcome, Source
from kodelet.wire import payload_to_wire, result_to_wire

TIMEOUT = 5.0
SHORT = 1.0


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def dispatch(rt: Runtime, payload: BasePayload, mode: str) -> Dispatch:
    if mode == "sync":
        return rt.dispatch(payload)
    return asyncio.run(rt.adispatch(payload))


def bash_hook(directory: Path, name: str, event: str, body: str) -> Path:
    """A bash hook answering ``event`` to ``hook`` and running ``body`` on ``run``."""
    text = f'#!/bin/bash\nif [ "$1" = hook ]; then echo {event}; exit 0; fi\n{body}\n'
    return write_hook(directory, name, text)


def answer(directory: Path, name: str, event: str, result: Any) -> Path:
    """A hook that reads its payload and prints ``result`` as JSON."""
    body = f"cat >/dev/null\ncat <<'JSON'\n{json.dumps(result)}\nJSON"
    return bash_hook(directory, name, event, body)


def make_runtime(project: Path, **kw: Any) -> Runtime:
    kw.setdefault("timeout", TIMEOUT)
    return load_runtime(cwd=project, entry_points=False, builtins=False, **kw)


def hooks_dir(project: Path) -> Path:
    return project / ".kodelet" / "hooks"


def fails_open(project: Path, name: str) -> None:
    """``fail_closed = false`` for hook ``name``: for tests of what its failure does to
    the hooks after it, which a fail-closed block would stop."""
    (project / ".kodelet" / "config.toml").write_text(f'[hooks."{name}"]\nfail_closed = false\n')


def global_hooks(project: Path) -> Path:
    return Path(os.environ["KODELET_HOME"]) / "hooks"


def payload_for(event: Event, cwd: Path, **kw: Any) -> BasePayload:
    base: dict[str, Any] = {"conv_id": "conv-1", "cwd": str(cwd)}
    if event is Event.BEFORE_TOOL_CALL:
        defaults: dict[str, Any] = {
            "tool_name": "bash",
            "tool_input": {"command": "ls -la"},
            "tool_user_id": "call-1",
        }
        return BeforeToolCallPayload(**{**base, **defaults, **kw})
    if event is Event.AFTER_TOOL_CALL:
        defaults = {
            "tool_name": "bash",
            "tool_input": {"command": "ls -la"},
            "tool_output": StructuredToolResult(
                tool_name="bash", success=True, timestamp="2024-01-15T10:30:00Z"
            ),
            "tool_user_id": "call-1",
        }
        return AfterToolCallPayload(**{**base, **defaults, **kw})
    if event is Event.USER_MESSAGE_SEND:
        return UserMessageSendPayload(**{**base, "message": "hello", **kw})
    usage = UsageInfo(
        input_tokens=80000,
        output_tokens=8000,
        current_context_window=88000,
        max_context_window=128000,
    )
    if event is Event.AFTER_TURN:
        defaults = {"turn_number": 5, "tools_used": True, "usage": usage}
        return AfterTurnPayload(**{**base, **defaults, **kw})
    messages = [Message("user", "Please fix the bug"), Message("assistant", "Fixed.")]
    return AgentStopPayload(**{**base, "messages": messages, "usage": usage, **kw})


def token_env(token: str) -> dict[str, str]:
    """The test's environment plus a marker every hook process inherits."""
    return {**os.environ, "KODELET_TEST_TOKEN": token}


def processes_with(token: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries ``token``."""
    needle = f"KODELET_TEST_TOKEN={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        state = stat.rsplit(")", 1)[1].split()[0]
        if state not in ("Z", "X") and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def assert_nothing_left(token: str) -> None:
    """SIGKILL is asynchronous; give the kernel a moment before calling it a leak."""
    deadline = time.monotonic() + 3.0
    while (left := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], f"hook processes left running: {left}"


def summary(d: Dispatch) -> list[tuple[str, Outcome, str | None]]:
    return [(r.name, r.outcome, r.error) for r in d.trace]


# -- what the hook sees ---------------------------------------------------------


def test_hook_gets_payload_env_and_payload_cwd(project: Path, tmp_path: Path, mode: str) -> None:
    record = (
        'cat > payload.json\nprintf "%s\\n%s\\n%s\\n" "$PWD" "$KODELET_HOOK_EVENT" '
        '"${KODELET_PLUGIN_ROOT-unset}" > "seen-$(basename "$0")"'
    )
    bash_hook(hooks_dir(project), "standalone", "user_message_send", record)
    plugin_root = project / ".kodelet" / "plugins" / "acme@tools"
    bash_hook(plugin_root / "hooks", "plugged", "user_message_send", record)
    work = tmp_path / "elsewhere"
    work.mkdir()
    payload = payload_for(Event.USER_MESSAGE_SEND, work, message="hi", recipe_name="review")
    with make_runtime(project) as rt:
        d = dispatch(rt, payload, mode)
    assert [r.name for r in d.trace] == ["standalone", "acme/tools/plugged"]
    assert [r.source for r in d.trace] == [Source.EXECUTABLE] * 2
    assert (work / "seen-standalone").read_text().splitlines() == [
        str(work),
        "user_message_send",
        "unset",
    ]
    assert (work / "seen-plugged").read_text().splitlines() == [
        str(work),
        "user_message_send",
        str(plugin_root),
    ]
    sent = json.loads((work / "payload.json").read_text())
    assert sent == payload_to_wire(payload)
    assert sent["recipe_name"] == "review" and sent["event"] == "user_message_send"


def test_turn_end_hook_runs_as_after_turn(project: Path, mode: str) -> None:
    bash_hook(
        hooks_dir(project),
        "legacy",
        "turn_end",
        'jq -c --arg e "$KODELET_HOOK_EVENT" '
        '\'{result: "callback", callback: "compact", callback_args: {env: $e, got: .event}}\'',
    )
    with make_runtime(project) as rt:
        d = dispatch(rt, payload_for(Event.AFTER_TURN, project), mode)
    assert result_to_wire(Event.AFTER_TURN, d.result) == {
        "result": "callback",
        "callback": "compact",
        "callback_args": {"env": "after_turn", "got": "after_turn"},
    }


# -- every event's result shape --------------------------------------------------

MESSAGES = [{"role": "user", "content": "## Summary\n\nCompacted context..."}]
NEW_OUTPUT = {
    "toolName": "bash",
    "success": False,
    "error": "redacted",
    "metadata": {"lines": 3},
    "timestamp": "2024-01-15T10:30:01Z",
}
SHAPES = [
    ("before_tool_call", {"blocked": True, "reason": "no"}, {"blocked": True, "reason": "no"}),
    (
        "before_tool_call",
        {"blocked": False, "input": {"command": "ls"}},
        {"blocked": False, "input": {"command": "ls"}},
    ),
    ("before_tool_call", {"blocked": False}, {"blocked": False}),
    ("before_tool_call", {"input": {"command": "ls -la"}}, {"blocked": False}),
    ("before_tool_call", "", {"blocked": False}),
    ("after_tool_call", {"output": NEW_OUTPUT}, {"output": NEW_OUTPUT}),
    ("after_tool_call", {}, {}),
    ("after_tool_call", "", {}),
    ("user_message_send", {"blocked": True, "reason": "pii"}, {"blocked": True, "reason": "pii"}),
    ("user_message_send", {"blocked": False}, {"blocked": False}),
    ("user_message_send", "", {"blocked": False}),
    (
        "after_turn",
        {"result": "mutate", "messages": MESSAGES},
        {"result": "mutate", "messages": MESSAGES},
    ),
    (
        "after_turn",
        {"result": "callback", "callback": "compact", "callback_args": {"keep": "3"}},
        {"result": "callback", "callback": "compact", "callback_args": {"keep": "3"}},
    ),
    ("after_turn", {}, {}),
    ("after_turn", "", {}),
    (
        "agent_stop",
        {"follow_up_messages": ["Please also run the linter"]},
        {"follow_up_messages": ["Please also run the linter"]},
    ),
    (
        "agent_stop",
        {"result": "continue", "follow_up_messages": ["again"]},
        {"follow_up_messages": ["again"]},
    ),
    (
        "agent_stop",
        {"result": "mutate", "messages": MESSAGES},
        {"result": "mutate", "messages": MESSAGES},
    ),
    (
        "agent_stop",
        {"result": "callback", "callback": "compact"},
        {"result": "callback", "callback": "compact"},
    ),
    ("agent_stop", "", {}),
]


@pytest.mark.parametrize(("event", "printed", "merged"), SHAPES)
def test_result_shape(
    project: Path, mode: str, event: str, printed: Any, merged: dict[str, Any]
) -> None:
    if printed == "":
        bash_hook(hooks_dir(project), "h", event, "cat >/dev/null")
    else:
        answer(hooks_dir(project), "h", event, printed)
    ev = Event(event)
    with make_runtime(project) as rt:
        d = dispatch(rt, payload_for(ev, project), mode)
    assert result_to_wire(ev, d.result) == merged
    (record,) = d.trace
    assert record.error is None
    expected = Outcome.NO_ACTION
    if merged.get("blocked"):
        expected = Outcome.BLOCKED
    elif "input" in merged or "output" in merged:
        expected = Outcome.MODIFIED
    elif merged not in ({}, {"blocked": False}):
        expected = Outcome.ACTION
    assert record.outcome is expected


# -- merge policy across executables and native impls ----------------------------


@pytest.mark.parametrize("event", ["user_message_send", "before_tool_call"])
def test_deny_fast_second_executable_never_runs(project: Path, mode: str, event: str) -> None:
    marker = project / "second-ran"
    deny = (
        "payload=$(cat)\n"
        'if echo "$payload" | grep -q forbidden; then\n'
        '  echo \'{"blocked": true, "reason": "first says no"}\'\n'
        "fi"
    )
    bash_hook(hooks_dir(project), "10-deny", event, deny)
    bash_hook(
        hooks_dir(project),
        "20-marker",
        event,
        f'cat >/dev/null; touch "{marker}"; echo \'{{"blocked": true, "reason": "second"}}\'',
    )
    ev = Event(event)
    if ev is Event.USER_MESSAGE_SEND:
        bad = payload_for(ev, project, message="something forbidden")
        good = payload_for(ev, project, message="fine")
    else:
        bad = payload_for(ev, project, tool_input={"command": "forbidden"})
        good = payload_for(ev, project, tool_input={"command": "fine"})
    with make_runtime(project) as rt:
        d = dispatch(rt, bad, mode)
        assert d.result.blocked and d.result.reason == "first says no"
        assert summary(d) == [("10-deny", Outcome.BLOCKED, None)]
        assert not marker.exists()
        # The marker does appear when the first hook lets the call through.
        d = dispatch(rt, good, mode)
    assert marker.exists()
    assert d.result.blocked and d.result.reason == "second"
    assert [r.outcome for r in d.trace] == [Outcome.NO_ACTION, Outcome.BLOCKED]


class Appender:
    """A native impl that records the input it saw and appends its own step."""

    def __init__(self, step: str, seen: list[list[str]]) -> None:
        self.step = step
        self.seen = seen

    def _add(self, tool_input: dict[str, Any]) -> BeforeToolCallResult:
        steps = list(tool_input["steps"])
        self.seen.append(steps)
        return BeforeToolCallResult(input={**tool_input, "steps": [*steps, self.step]})


class First(Appender):
    @hookimpl(tryfirst=True)
    def before_tool_call(self, tool_input: dict[str, Any]) -> BeforeToolCallResult:
        return self._add(tool_input)


class Later(Appender):
    @hookimpl
    def before_tool_call(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        result = self._add(tool_input)
        return {"input": result.input}


APPEND = (
    "payload=$(cat)\n"
    'echo "$payload" | jq -c .tool_input.steps > "seen-$(basename "$0")"\n'
    'me=$(basename "$0")\n'
    'echo "$payload" | jq -c --arg me "$me" \'{input: (.tool_input | .steps += [$me])}\''
)


def test_tool_input_chains_through_native_and_executable(project: Path, mode: str) -> None:
    seen: list[list[str]] = []
    bash_hook(hooks_dir(project), "e1", "before_tool_call", APPEND)
    bash_hook(hooks_dir(project), "e2", "before_tool_call", APPEND)
    bash_hook(global_hooks(project), "e3", "before_tool_call", APPEND)
    plugins = [
        ("n1", First("n1", seen)),
        ("n2", First("n2", seen)),
        ("n3", Later("n3", seen)),
    ]
    payload = payload_for(Event.BEFORE_TOOL_CALL, project, tool_input={"steps": [], "keep": 1})
    with make_runtime(project, plugins=plugins) as rt:
        order = [h.name for h in rt.hooks(Event.BEFORE_TOOL_CALL)]
        d = dispatch(rt, payload, mode)
    # pluggy calls the later-registered of two tryfirst impls first.
    assert order == ["n2", "n1", "e1", "e2", "e3", "n3"]
    assert d.result == BeforeToolCallResult(input={"steps": order, "keep": 1})
    assert seen == [[], ["n2"], ["n2", "n1", "e1", "e2", "e3"]]
    for i, name in enumerate(["e1", "e2"], start=2):
        assert json.loads((project / f"seen-{name}").read_text()) == order[:i]
    assert json.loads((project / "seen-e3").read_text()) == order[:4]
    assert [r.outcome for r in d.trace] == [Outcome.MODIFIED] * 6


class OutputNative:
    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    @hookimpl(tryfirst=True)
    def after_tool_call(self, tool_output: StructuredToolResult) -> dict[str, Any]:
        self.seen.append(tool_output.metadata)
        return {"output": {"toolName": "bash", "success": True, "metadata": {"steps": ["n"]}}}


class OutputNativeLast:
    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    @hookimpl
    def after_tool_call(self, tool_output: StructuredToolResult) -> None:
        self.seen.append(tool_output.metadata)


def test_tool_output_chains_native_to_executable_and_back(project: Path, mode: str) -> None:
    seen: list[Any] = []
    bash_hook(
        hooks_dir(project),
        "e",
        "after_tool_call",
        'jq -c \'{output: (.tool_output | .metadata.steps += ["e"] | .error = "e was here")}\'',
    )
    plugins = [("first", OutputNative(seen)), ("last", OutputNativeLast(seen))]
    with make_runtime(project, plugins=plugins) as rt:
        d = dispatch(rt, payload_for(Event.AFTER_TOOL_CALL, project), mode)
    assert [r.name for r in d.trace] == ["first", "e", "last"]
    assert seen == [None, {"steps": ["n", "e"]}]
    assert result_to_wire(Event.AFTER_TOOL_CALL, d.result) == {
        "output": {
            "toolName": "bash",
            "success": True,
            "error": "e was here",
            "metadata": {"steps": ["n", "e"]},
            "timestamp": "",
        }
    }


class FollowUps:
    def __init__(self, messages: list[str], result: str = "", **kw: Any) -> None:
        self.answer = {"result": result, "follow_up_messages": messages, **kw}

    def agent_stop(self) -> dict[str, Any]:
        return self.answer


class FollowUpsFirst(FollowUps):
    @hookimpl(tryfirst=True)
    def agent_stop(self) -> dict[str, Any]:
        return self.answer


class FollowUpsLast(FollowUps):
    @hookimpl
    def agent_stop(self) -> dict[str, Any]:
        return self.answer


def test_follow_ups_accumulate_in_call_order(project: Path, mode: str) -> None:
    answer(
        hooks_dir(project),
        "a",
        "agent_stop",
        {"result": "mutate", "messages": MESSAGES, "follow_up_messages": ["a1", "a2"]},
    )
    bash_hook(hooks_dir(project), "b-silent", "agent_stop", "cat >/dev/null")
    answer(
        project / ".kodelet" / "plugins" / "acme@x" / "hooks",
        "c",
        "agent_stop",
        {"follow_up_messages": ["c1"]},
    )
    answer(global_hooks(project), "d", "agent_stop", {"follow_up_messages": ["d1"]})
    plugins = [
        ("native-first", FollowUpsFirst(["n1"])),
        ("native-last", FollowUpsLast(["n2"], result="callback", callback="compact")),
    ]
    with make_runtime(project, plugins=plugins) as rt:
        d = dispatch(rt, payload_for(Event.AGENT_STOP, project), mode)
    assert [r.name for r in d.trace] == [
        "native-first",
        "a",
        "b-silent",
        "acme/x/c",
        "d",
        "native-last",
    ]
    assert d.result == AgentStopResult(
        result="mutate",
        follow_up_messages=["n1", "a1", "a2", "c1", "d1", "n2"],
        messages=[Message("user", MESSAGES[0]["content"])],
    )
    last = d.trace[-1]
    assert last.outcome is Outcome.ACTION
    assert last.detail is not None and "conflict" in last.detail


# -- failures: each is that hook's, and the others still run ---------------------

FAILURES = [
    ("garbage", "cat >/dev/null; echo 'this is not json'", "output is not JSON"),
    ("truncated", "cat >/dev/null; echo '{\"follow_up_messages\": ['", "output is not JSON"),
    ("non-utf8", 'cat >/dev/null; printf \'{"x": "\\xff\\xfe"}\'', "output is not UTF-8"),
    ("wrong-type", "cat >/dev/null; echo '[1, 2]'", "returned list"),
    ("bad-field", 'cat >/dev/null; echo \'{"follow_up_messages": "x"}\'', "follow_up_messages"),
    (
        "exit-3",
        'cat >/dev/null; for i in $(seq 1 50); do echo "noise $i" >&2; done; '
        "echo 'boom: disk on fire' >&2; echo '{\"follow_up_messages\": [\"ignored\"]}'; exit 3",
        "exited with status 3: noise 49 | noise 50 | boom: disk on fire",
    ),
    ("killed", "cat >/dev/null; kill -TERM $$", "killed by signal SIGTERM"),
]


@pytest.mark.parametrize(("name", "body", "error"), FAILURES, ids=[f[0] for f in FAILURES])
def test_bad_hook_is_its_own_failure(
    project: Path, mode: str, name: str, body: str, error: str
) -> None:
    bash_hook(hooks_dir(project), f"a-{name}", "agent_stop", body)
    answer(hooks_dir(project), "b-good", "agent_stop", {"follow_up_messages": ["still ran"]})
    with make_runtime(project) as rt:
        d = dispatch(rt, payload_for(Event.AGENT_STOP, project), mode)
    assert d.result == AgentStopResult(follow_up_messages=["still ran"])
    bad, good = d.trace
    assert bad.outcome is Outcome.ERROR and bad.error is not None
    assert error in bad.error
    assert "noise 1 " not in bad.error
    assert good.outcome is Outcome.ACTION and good.error is None


def test_sync_and_async_agree_on_everything(project: Path) -> None:
    """One runtime with every kind of answer at once: both APIs, same result and trace."""
    for name, body, _ in FAILURES:
        bash_hook(hooks_dir(project), f"bad-{name}", "agent_stop", body)
    for i, (event, printed, _) in enumerate(SHAPES):
        if printed == "":
            bash_hook(hooks_dir(project), f"shape-{i:02}", event, "cat >/dev/null")
        else:
            answer(hooks_dir(project), f"shape-{i:02}", event, printed)
    with make_runtime(project) as rt:
        for ev in Event:
            payload = payload_for(ev, project)
            sync, asyn = rt.dispatch(payload), asyncio.run(rt.adispatch(payload))
            assert sync.result == asyn.result
            assert summary(sync) == summary(asyn)
            assert len(sync.trace) >= 1


def test_blocking_event_fails_closed_by_default(project: Path, mode: str) -> None:
    bash_hook(hooks_dir(project), "broken", "before_tool_call", "cat >/dev/null; exit 1")
    with make_runtime(project) as rt:
        d = dispatch(rt, payload_for(Event.BEFORE_TOOL_CALL, project), mode)
    assert result_to_wire(Event.BEFORE_TOOL_CALL, d.result) == {
        "blocked": True,
        "reason": "hook broken failed (fail-closed): exited with status 1; fix: fix the hook, "
        "or switch it off (kodelet hooks disable broken); to let calls through when it "
        'fails: [hooks."broken"] fail_closed = false',
    }
    assert d.trace[0].error == "exited with status 1"


def test_blocking_event_fails_open_when_told(project: Path, mode: str) -> None:
    bash_hook(hooks_dir(project), "broken", "before_tool_call", "cat >/dev/null; exit 1")
    fails_open(project, "broken")
    with make_runtime(project) as rt:
        d = dispatch(rt, payload_for(Event.BEFORE_TOOL_CALL, project), mode)
    assert result_to_wire(Event.BEFORE_TOOL_CALL, d.result) == {"blocked": False}
    assert d.trace[0].error == "exited with status 1"


def test_hook_deleted_after_discovery(project: Path, mode: str) -> None:
    gone = bash_hook(hooks_dir(project), "a-gone", "user_message_send", "exit 0")
    answer(hooks_dir(project), "b-deny", "user_message_send", {"blocked": True, "reason": "b"})
    fails_open(project, "a-gone")
    with make_runtime(project) as rt:
        gone.unlink()
        d = dispatch(rt, payload_for(Event.USER_MESSAGE_SEND, project), mode)
    assert d.result.blocked and d.result.reason == "b"
    assert d.trace[0].outcome is Outcome.ERROR
    assert d.trace[0].error is not None and "cannot run" in d.trace[0].error


# -- the host always gets control back -------------------------------------------


def test_timeout_kills_backgrounded_grandchild(project: Path, mode: str) -> None:
    token = uuid.uuid4().hex
    bash_hook(hooks_dir(project), "a-hang", "user_message_send", "sleep 600 &\nwait")
    answer(hooks_dir(project), "b-deny", "user_message_send", {"blocked": True, "reason": "b"})
    fails_open(project, "a-hang")
    with make_runtime(project, timeout=SHORT, env=token_env(token)) as rt:
        start = time.monotonic()
        d = dispatch(rt, payload_for(Event.USER_MESSAGE_SEND, project), mode)
        elapsed = time.monotonic() - start
    assert SHORT <= elapsed < SHORT + 2.0
    assert d.result.blocked and d.result.reason == "b"
    assert summary(d)[0] == ("a-hang", Outcome.ERROR, f"timed out after {SHORT:g}s")
    assert_nothing_left(token)


def test_finished_hook_is_not_held_by_its_leftover_child(project: Path, mode: str) -> None:
    """The hook answered and exited; a child it left holding stdout must not
    turn that answer into a timeout (nor outlive the call)."""
    token = uuid.uuid4().hex
    bash_hook(
        hooks_dir(project),
        "bg",
        "user_message_send",
        'cat >/dev/null\necho \'{"blocked": true, "reason": "answered"}\'\nsleep 600 &\nexit 0',
    )
    with make_runtime(project, timeout=TIMEOUT, env=token_env(token)) as rt:
        start = time.monotonic()
        d = dispatch(rt, payload_for(Event.USER_MESSAGE_SEND, project), mode)
        elapsed = time.monotonic() - start
    assert elapsed < TIMEOUT / 2
    assert d.result.blocked and d.result.reason == "answered"
    assert summary(d) == [("bg", Outcome.BLOCKED, None)]
    assert_nothing_left(token)


def test_timeout_from_environment(
    project: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = uuid.uuid4().hex
    monkeypatch.setenv("KODELET_HOOK_TIMEOUT", "0.5")
    monkeypatch.setenv("KODELET_TEST_TOKEN", token)
    bash_hook(hooks_dir(project), "slow", "agent_stop", "sleep 600")
    with load_runtime(cwd=project, entry_points=False, builtins=False) as rt:
        start = time.monotonic()
        d = dispatch(rt, payload_for(Event.AGENT_STOP, project), mode)
        elapsed = time.monotonic() - start
    assert elapsed < 2.5
    assert summary(d) == [("slow", Outcome.ERROR, "timed out after 0.5s")]
    assert_nothing_left(token)


BIG = 10 * 1024 * 1024


@pytest.fixture
def big_payload(project: Path) -> Iterator[BasePayload]:
    yield payload_for(Event.USER_MESSAGE_SEND, project, message="x" * BIG)


def test_large_payload_to_hook_that_never_reads_stdin(
    project: Path, mode: str, big_payload: BasePayload
) -> None:
    answer_only = '{"blocked": true, "reason": "never read it"}'
    bash_hook(hooks_dir(project), "a-deaf", "user_message_send", f"sleep 0.3; echo '{answer_only}'")
    with make_runtime(project) as rt:
        start = time.monotonic()
        d = dispatch(rt, big_payload, mode)
        elapsed = time.monotonic() - start
    assert elapsed < TIMEOUT - 0.5
    assert d.result.blocked and d.result.reason == "never read it"


def test_large_payload_arrives_whole(project: Path, mode: str, big_payload: BasePayload) -> None:
    bash_hook(
        hooks_dir(project),
        "counter",
        "user_message_send",
        'n=$(wc -c)\necho "{\\"blocked\\": true, \\"reason\\": \\"$n\\"}"',
    )
    with make_runtime(project) as rt:
        d = dispatch(rt, big_payload, mode)
    expected = len(json.dumps(payload_to_wire(big_payload), ensure_ascii=False).encode())
    assert expected > BIG
    assert d.result.reason == str(expected)


def test_huge_output_is_a_failure_not_a_memory_blow_up(project: Path, mode: str) -> None:
    token = uuid.uuid4().hex
    done = project / "wrote-everything"
    bash_hook(
        hooks_dir(project),
        "a-flood",
        "agent_stop",
        f'cat >/dev/null; yes xxxxxxxxxxxxxxx | head -c {50 * 1024 * 1024}; touch "{done}"',
    )
    answer(hooks_dir(project), "b-good", "agent_stop", {"follow_up_messages": ["ok"]})
    with make_runtime(project, env=token_env(token)) as rt:
        start = time.monotonic()
        d = dispatch(rt, payload_for(Event.AGENT_STOP, project), mode)
        elapsed = time.monotonic() - start
    assert elapsed < TIMEOUT - 0.5
    assert d.result == AgentStopResult(follow_up_messages=["ok"])
    assert summary(d)[0] == ("a-flood", Outcome.ERROR, f"output exceeded {STDOUT_CAP} bytes")
    # Killed once over the cap: the hook never got to write the other 49 MiB.
    assert not done.exists()
    assert_nothing_left(token)


def test_process_runner_keeps_at_most_the_cap(tmp_path: Path, mode: str) -> None:
    flood = write_hook(tmp_path, "flood", f"#!/bin/bash\nyes | head -c {50 * 1024 * 1024}\n")
    argv = [str(flood)]
    env = dict(os.environ)
    if mode == "sync":
        res = run_process(argv, b"", cwd=str(tmp_path), env=env, timeout=TIMEOUT)
    else:
        res = asyncio.run(arun_process(argv, b"", cwd=str(tmp_path), env=env, timeout=TIMEOUT))
    assert res.overflow and not res.timed_out
    assert len(res.stdout) == STDOUT_CAP


def test_whitespace_only_output_is_no_action(project: Path, mode: str) -> None:
    bash_hook(hooks_dir(project), "blank", "before_tool_call", "cat >/dev/null; printf '\\n  \\n'")
    with make_runtime(project) as rt:
        d = dispatch(rt, payload_for(Event.BEFORE_TOOL_CALL, project), mode)
    assert summary(d) == [("blank", Outcome.NO_ACTION, None)]
    assert result_to_wire(Event.BEFORE_TOOL_CALL, d.result) == {"blocked": False}


def test_dispatch_sends_the_payload_json_and_a_raw_pluggy_call_runs_no_executable(
    project: Path,
) -> None:
    """An executable reads exactly the payload's wire JSON. It runs only through the
    runtime's dispatch (call order, merge policy, trace): a raw ``pm.hook.<event>(...)``
    call outside it gets nothing from the adapter and starts no process."""
    seen = project / "seen.json"
    bash_hook(hooks_dir(project), "spy", "before_tool_call", f"cat > {seen}\necho '{{}}'")
    payload = payload_for(Event.BEFORE_TOOL_CALL, project)
    with make_runtime(project) as rt:
        fields = ("conv_id", "cwd", "invoked_by", "recipe_name", "tool_name", "tool_input")
        kwargs = {"event": payload.EVENT.value, **{a: getattr(payload, a) for a in fields}}
        assert rt.pm.hook.before_tool_call(**kwargs, tool_user_id=None) == []
        assert not seen.exists()
        rt.dispatch(payload)
        assert json.loads(seen.read_text()) == payload_to_wire(payload)
