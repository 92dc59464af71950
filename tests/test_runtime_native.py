"""The runtime with native plugins registered programmatically: argument subsets, call
order, error isolation, wrong answers, disabling, ``no_hooks`` and the trace."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kodelet import (
    AfterToolCallPayload,
    AfterToolCallResult,
    AfterTurnPayload,
    AfterTurnResult,
    AgentStopPayload,
    AgentStopResult,
    BeforeToolCallPayload,
    BeforeToolCallResult,
    Dispatch,
    Event,
    Message,
    Outcome,
    Runtime,
    Source,
    StructuredToolResult,
    UsageInfo,
    UserMessageSendPayload,
    UserMessageSendResult,
    hookimpl,
    load_runtime,
)
from kodelet.payloads import BasePayload, field_names
from kodelet.testing import isolated_runtime, write_hook

BUILTIN = "builtin:compact-trigger"

OUT = StructuredToolResult(tool_name="bash", success=True, timestamp="2024-01-15T10:30:00Z")
PAYLOADS: dict[Event, BasePayload] = {
    Event.BEFORE_TOOL_CALL: BeforeToolCallPayload(
        conv_id="c1",
        cwd="/w",
        recipe_name="code-review",
        tool_name="bash",
        tool_input={"command": "ls"},
        tool_user_id="t1",
    ),
    Event.AFTER_TOOL_CALL: AfterToolCallPayload(
        conv_id="c1",
        cwd="/w",
        invoked_by="subagent",
        tool_name="bash",
        tool_input={"command": "ls"},
        tool_output=OUT,
        tool_user_id="t1",
    ),
    Event.USER_MESSAGE_SEND: UserMessageSendPayload(conv_id="c1", cwd="/w", message="hello"),
    Event.AFTER_TURN: AfterTurnPayload(
        conv_id="c1",
        cwd="/w",
        turn_number=5,
        tools_used=True,
        usage=UsageInfo(
            input_tokens=1, output_tokens=2, current_context_window=3, max_context_window=100
        ),
        auto_compact_enabled=True,
        auto_compact_threshold=0.8,
        messages=[Message("user", "q")],
        response="a",
    ),
    Event.AGENT_STOP: AgentStopPayload(
        conv_id="c1",
        cwd="/w",
        messages=[Message("user", "q"), Message("assistant", "a")],
        usage=UsageInfo(current_context_window=3, max_context_window=100),
        invoked_recipe="deploy",
        auto_compact_threshold=0.5,
    ),
}
# A "does something" answer per event, as a dict and as the equivalent object.
ANSWERS: dict[Event, tuple[dict[str, Any], Any]] = {
    Event.BEFORE_TOOL_CALL: (
        {"input": {"command": "ls -la"}},
        BeforeToolCallResult(input={"command": "ls -la"}),
    ),
    Event.AFTER_TOOL_CALL: (
        {"output": {"toolName": "bash", "success": False, "error": "boom"}},
        AfterToolCallResult(
            output=StructuredToolResult(tool_name="bash", success=False, error="boom")
        ),
    ),
    Event.USER_MESSAGE_SEND: (
        {"blocked": True, "reason": "no"},
        UserMessageSendResult(blocked=True, reason="no"),
    ),
    Event.AFTER_TURN: (
        {"result": "callback", "callback": "compact", "callback_args": {"k": "v"}},
        AfterTurnResult(result="callback", callback="compact", callback_args={"k": "v"}),
    ),
    Event.AGENT_STOP: (
        {
            "result": "mutate",
            "follow_up_messages": ["go on"],
            "messages": [{"role": "user", "content": "s"}],
        },
        AgentStopResult(
            result="mutate", follow_up_messages=["go on"], messages=[Message("user", "s")]
        ),
    ),
}


def plugin(**impls: Callable[..., Any]) -> SimpleNamespace:
    return SimpleNamespace(
        **{n: f if hasattr(f, "kodelet_impl") else hookimpl(f) for n, f in impls.items()}
    )


def isolated(tmp_path: Path, *named: tuple[str, Any], **kw: Any) -> Runtime:
    return isolated_runtime(tmp_path, *named, **kw)


def fails_open(cwd: Path, name: str) -> None:
    """``fail_closed = false`` for hook ``name``: for tests of what its failure does to
    the hooks after it, which a fail-closed block would stop."""
    (cwd / ".kodelet").mkdir(exist_ok=True)
    (cwd / ".kodelet" / "config.toml").write_text(f'[hooks."{name}"]\nfail_closed = false\n')


def names(rt: Runtime, event: Event) -> list[str]:
    return [h.name for h in rt.hooks(event)]


def outcomes(d: Dispatch) -> list[tuple[str, Outcome]]:
    return [(r.name, r.outcome) for r in d.trace]


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    caplog.set_level(logging.WARNING, logger="kodelet")
    return lambda: [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


# -- arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("event", list(Event))
def test_impl_taking_every_field_gets_the_payload(tmp_path: Path, event: Event) -> None:
    got: dict[str, Any] = {}
    args = field_names(event)
    src = f"def {event.value}({', '.join(args)}):\n    got.update(locals())\n"
    scope: dict[str, Any] = {"got": got}
    exec(src, scope)
    rt = isolated(tmp_path, ("all", plugin(**{event.value: scope[event.value]})))
    payload = PAYLOADS[event]
    rt.dispatch(payload)
    assert set(got) == set(args)
    assert got["event"] == event.value
    for name in args[1:]:
        assert got[name] == getattr(payload, name), name


def test_impls_take_any_subset_of_arguments_in_any_order(tmp_path: Path) -> None:
    got: list[Any] = []
    rt = isolated(
        tmp_path,
        ("none", plugin(before_tool_call=lambda: got.append("none"))),
        ("one", plugin(before_tool_call=lambda tool_name: got.append(tool_name))),
        (
            "shuffled",
            plugin(
                before_tool_call=lambda tool_user_id, recipe_name, conv_id: got.append(
                    (tool_user_id, recipe_name, conv_id)
                )
            ),
        ),
        ("event", plugin(before_tool_call=lambda event: got.append(str(event)))),
    )
    rt.dispatch(PAYLOADS[Event.BEFORE_TOOL_CALL])
    assert sorted(map(str, got)) == sorted(
        ["none", "bash", str(("t1", "code-review", "c1")), "before_tool_call"]
    )


def test_methods_on_a_plugin_object_work(tmp_path: Path) -> None:
    class Guard:
        def __init__(self) -> None:
            self.seen: list[str] = []

        @hookimpl
        def user_message_send(self, message: str) -> dict[str, Any]:
            self.seen.append(message)
            return {"blocked": "secret" in message, "reason": "leak"}

    guard = Guard()
    rt = isolated(tmp_path, ("guard", guard))
    d = rt.dispatch(UserMessageSendPayload(message="the secret is 42"))
    assert d.result == UserMessageSendResult(blocked=True, reason="leak")
    assert guard.seen == ["the secret is 42"]


def test_impl_with_an_unknown_argument_fails_registration_and_others_load(
    tmp_path: Path, warnings: Callable[[], list[str]]
) -> None:
    rt = isolated(
        tmp_path,
        ("typo", plugin(before_tool_call=lambda tool_nmae: None)),
        ("fine", plugin(before_tool_call=lambda tool_name: {"blocked": True})),
    )
    info = {p.name: p for p in rt.plugins}
    assert info["typo"].error is not None and "tool_nmae" in info["typo"].error
    assert info["fine"].error is None and info["fine"].events == ["before_tool_call"]
    assert names(rt, Event.BEFORE_TOOL_CALL) == ["fine"]
    assert rt.dispatch(PAYLOADS[Event.BEFORE_TOOL_CALL]).result.blocked


def test_duplicate_plugin_name_is_recorded_not_raised(tmp_path: Path) -> None:
    rt = isolated(
        tmp_path,
        ("same", plugin(user_message_send=lambda: None)),
        ("same", plugin(user_message_send=lambda: {"blocked": True})),
    )
    assert [p.error is None for p in rt.plugins] == [True, False]
    assert names(rt, Event.USER_MESSAGE_SEND) == ["same"]


# -- call order ---------------------------------------------------------------------------


def test_last_registered_runs_first(tmp_path: Path) -> None:
    rt = isolated(tmp_path, *[(n, plugin(agent_stop=lambda: None)) for n in "abc"])
    assert names(rt, Event.AGENT_STOP) == ["c", "b", "a"]


def test_tryfirst_and_trylast(tmp_path: Path) -> None:
    ran: list[str] = []

    def impl(tag: str, **opts: bool) -> Callable[..., Any]:
        def agent_stop() -> Any:
            ran.append(tag)
            return {"follow_up_messages": [tag]}

        return hookimpl(**opts)(agent_stop) if opts else agent_stop

    rt = isolated(
        tmp_path,
        ("first", plugin(agent_stop=impl("first", tryfirst=True))),
        ("plain1", plugin(agent_stop=impl("plain1"))),
        ("last", plugin(agent_stop=impl("last", trylast=True))),
        ("plain2", plugin(agent_stop=impl("plain2"))),
        ("first2", plugin(agent_stop=impl("first2", tryfirst=True))),
    )
    order = ["first2", "first", "plain2", "plain1", "last"]
    assert names(rt, Event.AGENT_STOP) == order
    d = rt.dispatch(PAYLOADS[Event.AGENT_STOP])
    assert ran == order
    assert d.result.follow_up_messages == order


def test_builtins_are_loaded_by_default_and_run_last(tmp_path: Path) -> None:
    ran: list[str] = []

    @hookimpl(trylast=True)
    def after_turn() -> None:
        ran.append("user-trylast")

    rt = load_runtime(
        cwd=tmp_path,
        entry_points=False,
        executables=False,
        plugins=[
            ("mine", plugin(after_turn=after_turn)),
            ("other", plugin(after_turn=lambda: ran.append("other"))),
        ],
    )
    builtin = [p for p in rt.plugins if p.name == BUILTIN]
    assert len(builtin) == 1 and builtin[0].kind == "builtin" and builtin[0].error is None
    assert names(rt, Event.AFTER_TURN) == ["other", "mine", BUILTIN]
    assert [h.source for h in rt.hooks(Event.AFTER_TURN)][-1] is Source.BUILTIN


def _usage(current: int) -> UsageInfo:
    return UsageInfo(current_context_window=current, max_context_window=100)


def test_builtin_compact_trigger_fires_at_the_threshold(tmp_path: Path) -> None:
    rt = load_runtime(cwd=tmp_path, entry_points=False, executables=False)
    below = AfterTurnPayload(turn_number=1, usage=_usage(79), auto_compact_enabled=True)
    at = AfterTurnPayload(turn_number=1, usage=_usage(80), auto_compact_enabled=True)
    off = AfterTurnPayload(turn_number=1, usage=_usage(99), auto_compact_enabled=False)
    custom = AfterTurnPayload(
        turn_number=1, usage=_usage(50), auto_compact_enabled=True, auto_compact_threshold=0.5
    )
    assert rt.dispatch(below).result == AfterTurnResult()
    assert rt.dispatch(off).result == AfterTurnResult()
    for payload in (at, custom):
        d = rt.dispatch(payload)
        assert d.result == AfterTurnResult(result="callback", callback="compact")
        assert [(r.name, r.source, r.outcome) for r in d.trace] == [
            (BUILTIN, Source.BUILTIN, Outcome.ACTION)
        ]


def test_users_own_compaction_hook_wins_over_the_builtin(
    tmp_path: Path, warnings: Callable[[], list[str]]
) -> None:
    mine = plugin(after_turn=lambda: {"result": "callback", "callback": "my-compact"})
    rt = load_runtime(cwd=tmp_path, entry_points=False, executables=False, plugins=[("mine", mine)])
    d = rt.dispatch(AfterTurnPayload(turn_number=1, usage=_usage(95), auto_compact_enabled=True))
    assert d.result == AfterTurnResult(result="callback", callback="my-compact")
    assert outcomes(d) == [("mine", Outcome.ACTION), (BUILTIN, Outcome.ACTION)]


# -- failures of one hook ---------------------------------------------------------------------


def test_impl_that_raises_is_isolated(tmp_path: Path, warnings: Callable[[], list[str]]) -> None:
    ran: list[str] = []

    def boom(tool_input: dict[str, Any]) -> Any:
        ran.append("boom")
        raise RuntimeError("disk on fire")

    fails_open(tmp_path, "boom")
    rt = isolated(
        tmp_path,
        ("after", plugin(before_tool_call=lambda: ran.append("after") or {"input": {"x": 1}})),
        ("boom", plugin(before_tool_call=boom)),
        ("before", plugin(before_tool_call=lambda: ran.append("before"))),
    )
    d = rt.dispatch(PAYLOADS[Event.BEFORE_TOOL_CALL])
    assert ran == ["before", "boom", "after"]
    assert d.result == BeforeToolCallResult(input={"x": 1})
    assert outcomes(d) == [
        ("before", Outcome.NO_ACTION),
        ("boom", Outcome.ERROR),
        ("after", Outcome.MODIFIED),
    ]
    assert d.trace[1].error == "RuntimeError: disk on fire"
    assert any("boom" in w and "disk on fire" in w for w in warnings())


WRONG = [
    pytest.param("blocked", "returned str", id="string"),
    pytest.param(1, "returned int", id="int"),
    pytest.param(True, "returned bool", id="bool"),
    pytest.param([{"blocked": True}], "returned list", id="list"),
    pytest.param(
        UserMessageSendResult(blocked=True),
        "returned UserMessageSendResult",
        id="result-of-another-event",
    ),
    pytest.param(
        AgentStopResult(follow_up_messages=["x"]),
        "returned AgentStopResult",
        id="agent-stop-result",
    ),
    pytest.param({"blocked": "yes"}, "blocked", id="dict-bad-field-type"),
    pytest.param({"input": "rm -rf /"}, "input", id="dict-bad-input"),
    pytest.param(
        BeforeToolCallResult(blocked="yes"),
        "blocked",  # type: ignore[arg-type]
        id="object-bad-field-type",
    ),
    pytest.param(
        BeforeToolCallResult(input="rm -rf /"),
        "input",  # type: ignore[arg-type]
        id="object-bad-input",
    ),
    pytest.param(iter([None]), "returned", id="iterator"),
]


@pytest.mark.parametrize(("wrong", "needle"), WRONG)
def test_wrong_answer_is_that_hooks_failure(
    tmp_path: Path, warnings: Callable[[], list[str]], wrong: Any, needle: str
) -> None:
    fails_open(tmp_path, "wrong")
    rt = isolated(
        tmp_path,
        ("good", plugin(before_tool_call=lambda: {"input": {"command": "ls -l"}})),
        ("wrong", plugin(before_tool_call=lambda: wrong)),
    )
    d = rt.dispatch(PAYLOADS[Event.BEFORE_TOOL_CALL])
    assert d.result == BeforeToolCallResult(input={"command": "ls -l"})
    assert outcomes(d) == [("wrong", Outcome.ERROR), ("good", Outcome.MODIFIED)]
    assert d.trace[0].error is not None and needle in d.trace[0].error
    assert any("wrong" in w for w in warnings())


@pytest.mark.parametrize(
    "wrong",
    [
        pytest.param(
            AfterTurnResult(result="mutate", messages=[{"role": "user"}]),  # type: ignore[list-item]
            id="messages-as-bad-dicts",
        ),
        pytest.param(
            AfterTurnResult(result="mutate", messages=[Message("user", 3)]),  # type: ignore[arg-type]
            id="message-content-int",
        ),
        pytest.param(
            AfterTurnResult(result="mutate", messages="summary"),  # type: ignore[arg-type]
            id="messages-as-string",
        ),
        pytest.param(
            AfterTurnResult(result="callback", callback=["compact"]),  # type: ignore[arg-type]
            id="callback-as-list",
        ),
        pytest.param(AfterTurnResult(result="explode"), id="unknown-action"),  # type: ignore[arg-type]
    ],
)
def test_malformed_result_object_never_escapes(
    tmp_path: Path, warnings: Callable[[], list[str]], wrong: Any
) -> None:
    rt = isolated(
        tmp_path,
        ("good", plugin(after_turn=lambda: {"result": "callback", "callback": "compact"})),
        ("wrong", plugin(after_turn=lambda: wrong)),
    )
    d = rt.dispatch(PAYLOADS[Event.AFTER_TURN])
    assert d.result == AfterTurnResult(result="callback", callback="compact")
    assert outcomes(d) == [("wrong", Outcome.ERROR), ("good", Outcome.ACTION)]


def test_result_object_holding_wire_dicts_converts_like_a_dict(tmp_path: Path) -> None:
    answer = AfterTurnResult(result="mutate", messages=[{"role": "user", "content": "x"}])  # type: ignore[list-item]
    rt = isolated(tmp_path, ("loose", plugin(after_turn=lambda: answer)))
    result = rt.dispatch(PAYLOADS[Event.AFTER_TURN]).result
    assert result == AfterTurnResult(result="mutate", messages=[Message("user", "x")])


class Custom(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("cannot print me")


def _raiser(exc: BaseException) -> Callable[..., Any]:
    def user_message_send() -> None:
        raise exc

    return user_message_send


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(Custom("odd"), id="custom-base-exception"),
        pytest.param(GeneratorExit(), id="generator-exit"),
        pytest.param(asyncio.CancelledError(), id="cancelled"),
        pytest.param(StopIteration(), id="stop-iteration"),
        pytest.param(RecursionError("deep"), id="recursion"),
        pytest.param(MemoryError(), id="memory"),
        pytest.param(Unprintable(), id="unprintable"),
    ],
)
def test_nothing_but_interrupts_escape_dispatch(
    tmp_path: Path, warnings: Callable[[], list[str]], exc: BaseException
) -> None:
    ran: list[str] = []
    fails_open(tmp_path, "bad")
    rt = isolated(
        tmp_path,
        ("later", plugin(user_message_send=lambda: ran.append("later") or {"blocked": True})),
        ("bad", plugin(user_message_send=_raiser(exc))),
    )
    d = rt.dispatch(PAYLOADS[Event.USER_MESSAGE_SEND])
    assert ran == ["later"]
    assert d.result == UserMessageSendResult(blocked=True, reason="blocked by later")
    assert outcomes(d) == [("bad", Outcome.ERROR), ("later", Outcome.BLOCKED)]
    assert d.trace[0].error and type(exc).__name__ in d.trace[0].error


def test_generator_impl_closing_itself_is_isolated(tmp_path: Path) -> None:
    def gen() -> Iterator[None]:
        yield None

    def user_message_send() -> None:
        g = gen()
        next(g)
        g.throw(GeneratorExit)

    rt = isolated(tmp_path, ("gen", plugin(user_message_send=user_message_send)))
    assert outcomes(rt.dispatch(PAYLOADS[Event.USER_MESSAGE_SEND])) == [("gen", Outcome.ERROR)]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_and_system_exit_propagate(tmp_path: Path, exc: type) -> None:
    ran: list[str] = []
    rt = isolated(
        tmp_path,
        ("later", plugin(user_message_send=lambda: ran.append("later"))),
        ("bad", plugin(user_message_send=_raiser(exc()))),
    )
    with pytest.raises(exc):
        rt.dispatch(PAYLOADS[Event.USER_MESSAGE_SEND])
    assert ran == []


# -- dict vs object -------------------------------------------------------------------------


@pytest.mark.parametrize("event", list(Event))
def test_dict_and_object_answers_merge_identically(tmp_path: Path, event: Event) -> None:
    as_dict, as_obj = ANSWERS[event]

    def run(answer: Any) -> Dispatch:
        rt = isolated(
            tmp_path,
            ("observer", plugin(**{event.value: lambda: None})),
            ("actor", plugin(**{event.value: lambda: answer})),
        )
        return rt.dispatch(PAYLOADS[event])

    by_dict, by_obj = run(as_dict), run(as_obj)
    assert by_dict.result == by_obj.result
    assert by_dict.result != type(by_dict.result)()
    assert outcomes(by_dict) == outcomes(by_obj)
    assert by_dict.trace[0].outcome is not Outcome.ERROR


# -- disabling and no_hooks ------------------------------------------------------------------


def test_disable_plugin_by_name(tmp_path: Path) -> None:
    ran: list[str] = []
    named = [(n, plugin(user_message_send=lambda n=n: ran.append(n))) for n in ("a", "b", "c")]
    rt = isolated(tmp_path, *named, disabled=["b"])
    assert names(rt, Event.USER_MESSAGE_SEND) == ["c", "a"]
    assert {p.name: p.disabled for p in rt.plugins} == {"a": False, "b": True, "c": False}
    rt.dispatch(PAYLOADS[Event.USER_MESSAGE_SEND])
    assert ran == ["c", "a"]


def test_disable_plugin_by_name_in_config(tmp_path: Path) -> None:
    (tmp_path / ".kodelet").mkdir()
    (tmp_path / ".kodelet" / "config.toml").write_text(
        f'[plugins]\ndisabled = ["a", "{BUILTIN}"]\n'
    )
    named = [(n, plugin(after_turn=lambda: None)) for n in ("a", "b")]
    rt = load_runtime(cwd=tmp_path, entry_points=False, executables=False, plugins=named)
    assert names(rt, Event.AFTER_TURN) == ["b"]
    assert {p.name for p in rt.plugins if p.disabled} == {"a", BUILTIN}


@pytest.fixture
def project_with_hook(project: Path) -> Path:
    write_hook(
        project / ".kodelet" / "hooks",
        "deny-all",
        '#!/bin/sh\n[ "$1" = hook ] && { echo user_message_send; exit 0; }\n'
        'echo \'{"blocked": true, "reason": "external"}\'\n',
    )
    return project


def test_executable_hooks_run_without_no_hooks(project_with_hook: Path) -> None:
    with load_runtime(cwd=project_with_hook, entry_points=False) as rt:
        assert names(rt, Event.USER_MESSAGE_SEND) == ["deny-all"]
        d = rt.dispatch(UserMessageSendPayload(cwd=str(project_with_hook), message="hi"))
        assert d.result == UserMessageSendResult(blocked=True, reason="external")


@pytest.mark.parametrize("how", ["flag", "env", "env-mapping"])
def test_no_hooks_keeps_builtins_only(
    project_with_hook: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    kw: dict[str, Any] = {}
    if how == "flag":
        kw["no_hooks"] = True
    elif how == "env":
        monkeypatch.setenv("KODELET_NO_HOOKS", "1")
    else:
        import os

        kw["env"] = {**os.environ, "KODELET_NO_HOOKS": "1"}
    with load_runtime(cwd=project_with_hook, **kw) as rt:
        assert rt.no_hooks
        assert [p.name for p in rt.plugins] == [BUILTIN, "builtin:protect-kodelet"]
        for event in Event:
            assert all(h.source is Source.BUILTIN for h in rt.hooks(event))
        assert names(rt, Event.AFTER_TURN) == [BUILTIN]
        d = rt.dispatch(PAYLOADS[Event.USER_MESSAGE_SEND])
        assert d.result == UserMessageSendResult() and d.trace == ()


# -- trace --------------------------------------------------------------------------------------


def test_trace_has_one_record_per_hook_called(tmp_path: Path) -> None:
    def slow() -> None:
        time.sleep(0.05)

    rt = load_runtime(
        cwd=tmp_path,
        entry_points=False,
        executables=False,
        plugins=[
            ("slow", plugin(after_turn=slow)),
            ("raiser", plugin(after_turn=_raiser(ValueError("bad")))),
            (
                "mutator",
                plugin(
                    after_turn=lambda: {
                        "result": "mutate",
                        "messages": [{"role": "user", "content": "s"}],
                    }
                ),
            ),
        ],
    )
    d = rt.dispatch(AfterTurnPayload(turn_number=1, usage=_usage(90), auto_compact_enabled=True))
    rows = [(r.event, r.name, r.source, r.outcome) for r in d.trace]
    assert rows == [
        (Event.AFTER_TURN, "mutator", Source.PYTHON, Outcome.ACTION),
        (Event.AFTER_TURN, "raiser", Source.PYTHON, Outcome.ERROR),
        (Event.AFTER_TURN, "slow", Source.PYTHON, Outcome.NO_ACTION),
        (Event.AFTER_TURN, BUILTIN, Source.BUILTIN, Outcome.ACTION),
    ]
    assert all(r.duration >= 0 for r in d.trace)
    assert d.trace[2].duration >= 0.05
    assert d.duration >= 0.05
    assert d.trace[1].error == "ValueError: bad"
    js = d.trace[1].to_json()
    assert js["name"] == "raiser" and js["source"] == "python" and js["outcome"] == "error"
    assert js["event"] == "after_turn" and js["error"] == "ValueError: bad"
    assert isinstance(js["duration_ms"], float)


def test_closed_runtime_refuses_to_dispatch(tmp_path: Path) -> None:
    rt = isolated(tmp_path)
    rt.close()
    with pytest.raises(RuntimeError, match="closed"):
        rt.dispatch(PAYLOADS[Event.USER_MESSAGE_SEND])
