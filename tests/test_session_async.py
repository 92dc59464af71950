"""The host's API: a Session bound to a conversation, sync and async, validating every
payload before any hook runs; ``async def`` impls work whichever API the host uses."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kodelet import (
    AfterToolCallResult,
    AfterTurnResult,
    AgentStopResult,
    BeforeToolCallResult,
    Dispatch,
    Event,
    Message,
    Outcome,
    Runtime,
    Session,
    StructuredToolResult,
    UsageInfo,
    UserMessageSendResult,
    hookimpl,
    load_runtime,
)
from kodelet.testing import isolated_runtime
from kodelet.wire import payload_from_wire


def plugin(**impls: Callable[..., Any]) -> SimpleNamespace:
    return SimpleNamespace(**{n: hookimpl(f) for n, f in impls.items()})


def isolated(tmp_path: Path, *named: tuple[str, Any]) -> Runtime:
    return isolated_runtime(tmp_path, *named)


OUT = {"toolName": "bash", "success": True, "timestamp": "2024-01-15T10:30:00Z"}
MESSAGES = [Message("user", "fix it"), Message("assistant", "done")]


# -- a plugin set mixing sync and async impls, used by both APIs ------------------------------


def mixed_plugins(log: list[str]) -> list[tuple[str, Any]]:
    """Registered in this order; the call order is the reverse (LIFO)."""

    async def a_rewrite(tool_input: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        log.append("a_rewrite")
        return {"input": {**tool_input, "safe": True}}

    def s_rewrite(tool_input: dict[str, Any]) -> Any:
        log.append("s_rewrite")
        return BeforeToolCallResult(input={**tool_input, "checked": "yes"})

    async def a_output(tool_output: StructuredToolResult) -> Any:
        await asyncio.sleep(0)
        return AfterToolCallResult(
            output=StructuredToolResult(
                tool_name=tool_output.tool_name, success=False, error="rewritten"
            )
        )

    async def a_guard(message: str) -> Any:
        await asyncio.sleep(0)
        log.append("a_guard")
        return {"blocked": "secret" in message, "reason": "secret"}

    def s_guard(message: str) -> Any:
        log.append("s_guard")
        return None

    async def a_turn(turn_number: int) -> Any:
        await asyncio.sleep(0)
        if turn_number > 2:
            return {"result": "callback", "callback": "compact"}
        return None

    def s_turn(usage: UsageInfo) -> Any:
        return AfterTurnResult(result="mutate", messages=[Message("user", "short")])

    async def a_stop(messages: list[Message]) -> Any:
        await asyncio.sleep(0)
        return {"follow_up_messages": [f"saw {len(messages)}"]}

    def s_stop(invoked_recipe: str) -> Any:
        return AgentStopResult(follow_up_messages=["lint"], result="callback", callback="c")

    async def a_raise() -> Any:
        await asyncio.sleep(0)
        raise RuntimeError("async boom")

    return [
        (
            "async-1",
            plugin(
                before_tool_call=a_rewrite,
                user_message_send=a_guard,
                after_turn=a_turn,
                agent_stop=a_stop,
            ),
        ),
        (
            "sync-1",
            plugin(
                before_tool_call=s_rewrite,
                user_message_send=s_guard,
                after_turn=s_turn,
                agent_stop=s_stop,
            ),
        ),
        ("async-2", plugin(after_tool_call=a_output, agent_stop=a_raise)),
    ]


def run_all_sync(session: Session) -> list[Any]:
    return [
        session.before_tool_call("bash", {"command": "ls"}, "t1"),
        session.after_tool_call("bash", {"command": "ls"}, OUT, "t1"),
        session.user_message_send("my secret"),
        session.user_message_send("hello"),
        session.after_turn(1, usage={"current_context_window": 1, "max_context_window": 10}),
        session.after_turn(3, tools_used=True),
        session.agent_stop(MESSAGES, invoked_recipe="r"),
    ]


async def run_all_async(session: Session) -> list[Any]:
    return [
        await session.abefore_tool_call("bash", {"command": "ls"}, "t1"),
        await session.aafter_tool_call("bash", {"command": "ls"}, OUT, "t1"),
        await session.auser_message_send("my secret"),
        await session.auser_message_send("hello"),
        await session.aafter_turn(1, usage={"current_context_window": 1, "max_context_window": 10}),
        await session.aafter_turn(3, tools_used=True),
        await session.aagent_stop(MESSAGES, invoked_recipe="r"),
    ]


EXPECTED = [
    BeforeToolCallResult(input={"command": "ls", "checked": "yes", "safe": True}),
    AfterToolCallResult(
        output=StructuredToolResult(tool_name="bash", success=False, error="rewritten")
    ),
    UserMessageSendResult(blocked=True, reason="secret"),
    UserMessageSendResult(),
    AfterTurnResult(result="mutate", messages=[Message("user", "short")]),
    AfterTurnResult(result="mutate", messages=[Message("user", "short")]),
    AgentStopResult(result="callback", callback="c", follow_up_messages=["lint", "saw 2"]),
]


def _recording_session(rt: Runtime) -> tuple[Session, list[Dispatch]]:
    seen: list[Dispatch] = []
    return Session(rt, conv_id="c1", on_dispatch=seen.append), seen


def _outcomes(dispatches: list[Dispatch]) -> list[list[tuple[str, Outcome]]]:
    return [[(r.name, r.outcome) for r in d.trace] for d in dispatches]


def test_sync_and_async_apis_give_identical_merged_results(tmp_path: Path) -> None:
    sync_log: list[str] = []
    async_log: list[str] = []
    with isolated(tmp_path, *mixed_plugins(sync_log)) as rt:
        session, sync_seen = _recording_session(rt)
        sync_results = run_all_sync(session)
    with isolated(tmp_path, *mixed_plugins(async_log)) as rt:
        session, async_seen = _recording_session(rt)
        async_results = asyncio.run(run_all_async(session))
    assert sync_results == EXPECTED
    assert async_results == EXPECTED
    assert _outcomes(sync_seen) == _outcomes(async_seen)
    assert sync_log == async_log
    # sync-1 runs first (LIFO): it rewrites before async-1 sees the input
    assert sync_log[:2] == ["s_rewrite", "a_rewrite"]
    errors = [r for d in sync_seen for r in d.trace if r.outcome is Outcome.ERROR]
    assert [(r.name, r.error) for r in errors] == [("async-2", "RuntimeError: async boom")]


def test_sync_api_runs_async_impls_inside_a_running_loop(tmp_path: Path) -> None:
    threads: list[int] = []

    async def a_guard(message: str) -> Any:
        threads.append(threading.get_ident())
        await asyncio.sleep(0.01)
        return {"blocked": True, "reason": message}

    with isolated(tmp_path, ("guard", plugin(user_message_send=a_guard))) as rt:
        session = Session(rt)

        async def host() -> UserMessageSendResult:
            # a host that calls the sync API from async code
            return session.user_message_send("inside a loop")

        assert asyncio.run(host()) == UserMessageSendResult(blocked=True, reason="inside a loop")
        assert session.user_message_send("no loop") == UserMessageSendResult(
            blocked=True, reason="no loop"
        )
        assert session.user_message_send("again") == UserMessageSendResult(
            blocked=True, reason="again"
        )
    assert len(threads) == 3
    assert threads[0] != threading.get_ident()


def test_the_whole_mixed_set_from_inside_a_running_loop(tmp_path: Path) -> None:
    with isolated(tmp_path, *mixed_plugins([])) as rt:
        session = Session(rt, conv_id="c1")

        async def host() -> list[Any]:
            return run_all_sync(session)

        assert asyncio.run(host()) == EXPECTED


def test_session_fills_the_base_fields(tmp_path: Path) -> None:
    got: list[tuple[Any, ...]] = []

    def spy(event: str, conv_id: str, cwd: str, invoked_by: str, recipe_name: str) -> None:
        got.append((event, conv_id, cwd, invoked_by, recipe_name))

    impls = {e.value: spy for e in Event}
    with isolated(tmp_path, ("spy", plugin(**impls))) as rt:
        session = Session(rt, conv_id="c9", invoked_by="subagent", recipe_name="deploy")
        session.before_tool_call("bash")
        session.after_tool_call(
            "bash", tool_output=StructuredToolResult(tool_name="bash", success=True)
        )
        session.user_message_send("hi")
        session.after_turn(1)
        session.agent_stop()
        asyncio.run(session.aagent_stop([Message("user", "x")]))
    cwd = str(tmp_path)
    assert got == [
        ("before_tool_call", "c9", cwd, "subagent", "deploy"),
        ("after_tool_call", "c9", cwd, "subagent", "deploy"),
        ("user_message_send", "c9", cwd, "subagent", "deploy"),
        ("after_turn", "c9", cwd, "subagent", "deploy"),
        ("agent_stop", "c9", cwd, "subagent", "deploy"),
        ("agent_stop", "c9", cwd, "subagent", "deploy"),
    ]


def test_session_records_the_last_dispatch(tmp_path: Path) -> None:
    with isolated(tmp_path, ("g", plugin(user_message_send=lambda: {"blocked": True}))) as rt:
        seen: list[Dispatch] = []
        session = Session(rt, on_dispatch=seen.append)
        result = session.user_message_send("x")
        assert session.last is not None and session.last.result is result
        assert seen == [session.last]
        assert [(r.name, r.outcome) for r in session.last.trace] == [("g", Outcome.BLOCKED)]


# -- bad input from the host: ValueError naming the field, before any hook runs -----------------


def _tripwire() -> tuple[list[str], SimpleNamespace]:
    ran: list[str] = []

    def hit(event: str) -> None:
        ran.append(str(event))

    return ran, plugin(**{e.value: hit for e in Event})


BAD_CALLS: list[Any] = [
    pytest.param("before_tool_call", (), {}, "tool_name", id="btc-no-tool_name"),
    pytest.param("before_tool_call", (3,), {}, "tool_name", id="btc-int-tool_name"),
    pytest.param("before_tool_call", ("bash", ["ls"]), {}, "tool_input", id="btc-list-input"),
    pytest.param("after_tool_call", ("bash",), {}, "tool_output", id="atc-no-output"),
    pytest.param("after_tool_call", (), {"tool_output": OUT}, "tool_name", id="atc-no-tool_name"),
    pytest.param(
        "after_tool_call",
        ("bash", {}, {"success": True}),
        {},
        "tool_output.toolName",
        id="atc-output-no-toolName",
    ),
    pytest.param("user_message_send", (), {}, "message", id="ums-no-message"),
    pytest.param("user_message_send", (None,), {}, "message", id="ums-none-message"),
    pytest.param("after_turn", (), {}, "turn_number", id="turn-no-number"),
    pytest.param("after_turn", ("5",), {}, "turn_number", id="turn-str-number"),
    pytest.param(
        "after_turn",
        (1,),
        {"usage": {"input_tokens": "x"}},
        "usage.input_tokens",
        id="turn-bad-usage",
    ),
    pytest.param(
        "agent_stop", ([{"role": "user"}],), {}, "messages[0].content", id="stop-bad-message"
    ),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "field"), BAD_CALLS)
def test_bad_host_call_is_a_value_error_before_any_hook_runs(
    tmp_path: Path, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], field: str
) -> None:
    ran, spy = _tripwire()
    with isolated(tmp_path, ("spy", spy)) as rt:
        session = Session(rt)
        with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
            getattr(session, method)(*args, **kwargs)
        with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
            asyncio.run(getattr(session, "a" + method)(*args, **kwargs))
    assert ran == []


def test_bad_base_field_is_a_value_error(tmp_path: Path) -> None:
    ran, spy = _tripwire()
    with isolated(tmp_path, ("spy", spy)) as rt:
        with pytest.raises(ValueError, match="invoked_by"):
            Session(rt, invoked_by="robot").user_message_send("hi")
        with pytest.raises(ValueError, match="conv_id"):
            Session(rt, conv_id=7).user_message_send("hi")  # type: ignore[arg-type]
    assert ran == []


@pytest.mark.parametrize(
    ("event", "data", "field"),
    [
        (Event.BEFORE_TOOL_CALL, {"tool_input": {"command": "ls"}}, "tool_name"),
        (Event.AFTER_TOOL_CALL, {"tool_name": "bash"}, "tool_output"),
        (Event.USER_MESSAGE_SEND, {"event": "user_message_send", "conv_id": "c"}, "message"),
        (Event.AFTER_TURN, {"tools_used": True}, "turn_number"),
        (Event.AGENT_STOP, {"messages": "all"}, "messages"),
        (Event.USER_MESSAGE_SEND, {"event": "agent_stop", "message": "x"}, "agent_stop"),
    ],
)
def test_a_bad_wire_payload_is_a_value_error_before_any_hook_runs(
    tmp_path: Path, event: Event, data: dict[str, Any], field: str
) -> None:
    ran, spy = _tripwire()
    with isolated(tmp_path, ("spy", spy)) as rt, pytest.raises(ValueError, match=field):
        rt.dispatch(payload_from_wire(event, data))
    assert ran == []


def test_a_wire_payload_with_unknown_fields_dispatches(tmp_path: Path) -> None:
    ran, spy = _tripwire()
    with isolated(tmp_path, ("spy", spy)) as rt:
        d = rt.dispatch(
            payload_from_wire(Event.USER_MESSAGE_SEND, {"message": "hi", "client": "v2"})
        )
    assert d.result == UserMessageSendResult()
    assert ran == ["user_message_send"]


# -- the async path's own error isolation ----------------------------------------------------------


class Custom(BaseException):
    pass


def fails_open(cwd: Path) -> None:
    """``[hooks] fail_closed = false``: for tests of what a failure does to the hooks
    after it, which a fail-closed block would stop (tests/test_fail_closed.py has those)."""
    (cwd / ".kodelet").mkdir(exist_ok=True)
    (cwd / ".kodelet" / "config.toml").write_text("[hooks]\nfail_closed = false\n")


@pytest.mark.parametrize(
    "exc",
    [Custom("odd"), GeneratorExit(), asyncio.CancelledError(), ValueError("v")],
    ids=["custom", "generator-exit", "cancelled-by-itself", "value-error"],
)
@pytest.mark.parametrize("api", ["sync", "async"])
def test_async_impl_failures_never_escape(tmp_path: Path, exc: BaseException, api: str) -> None:
    async def bad() -> None:
        await asyncio.sleep(0)
        raise exc

    fails_open(tmp_path)
    with isolated(
        tmp_path,
        ("good", plugin(user_message_send=lambda: {"blocked": True, "reason": "good"})),
        ("bad", plugin(user_message_send=bad)),
    ) as rt:
        session, seen = _recording_session(rt)
        if api == "sync":
            result = session.user_message_send("hi")
        else:
            result = asyncio.run(session.auser_message_send("hi"))
    assert result == UserMessageSendResult(blocked=True, reason="good")
    assert [(r.name, r.outcome) for r in seen[0].trace] == [
        ("bad", Outcome.ERROR),
        ("good", Outcome.BLOCKED),
    ]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("api", ["sync", "async"])
def test_interrupts_from_async_impls_propagate(tmp_path: Path, exc: type, api: str) -> None:
    async def bad() -> None:
        raise exc()

    with isolated(tmp_path, ("bad", plugin(user_message_send=bad))) as rt:
        session = Session(rt)
        with pytest.raises(exc):
            if api == "sync":
                session.user_message_send("hi")
            else:
                asyncio.run(session.auser_message_send("hi"))


def test_cancelling_the_host_task_cancels_the_dispatch(tmp_path: Path) -> None:
    entered = asyncio.Event()

    async def slow() -> None:
        entered.set()
        await asyncio.sleep(30)

    async def host(rt: Runtime) -> None:
        task = asyncio.create_task(Session(rt).auser_message_send("hi"))
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with isolated(tmp_path, ("slow", plugin(user_message_send=slow))) as rt:
        asyncio.run(asyncio.wait_for(host(rt), 5))


@pytest.mark.parametrize("api", ["sync", "async"])
def test_async_impl_gets_the_hook_time_limit(tmp_path: Path, api: str) -> None:
    async def slow() -> Any:
        await asyncio.sleep(30)

    async def own_timeout() -> Any:
        raise TimeoutError("upstream API")

    fails_open(tmp_path)
    with load_runtime(
        cwd=tmp_path,
        entry_points=False,
        builtins=False,
        executables=False,
        timeout=0.2,
        plugins=[
            ("own", plugin(user_message_send=own_timeout)),
            ("slow", plugin(user_message_send=slow)),
        ],
    ) as rt:
        session, seen = _recording_session(rt)
        started = time.perf_counter()
        if api == "sync":
            session.user_message_send("hi")
        else:
            asyncio.run(session.auser_message_send("hi"))
        assert time.perf_counter() - started < 5
    assert [(r.name, r.outcome, r.error) for r in seen[0].trace] == [
        ("slow", Outcome.ERROR, "timed out after 0.2s"),
        ("own", Outcome.ERROR, "TimeoutError: upstream API"),
    ]


def test_agent_stop_invoked_recipe_defaults_to_the_sessions_recipe():
    seen = []

    class Spy:
        @hookimpl
        def agent_stop(self, recipe_name, invoked_recipe):
            seen.append((recipe_name, invoked_recipe))

    rt = load_runtime(entry_points=False, executables=False, plugins=[Spy()])
    session = Session(rt, recipe_name="review")
    session.agent_stop([])
    session.agent_stop([], invoked_recipe="")
    session.agent_stop([], invoked_recipe="compact")
    rt.close()
    assert seen == [("review", "review"), ("review", ""), ("review", "compact")]
