"""DESIGN.md's merge table, row by row, driven through a real runtime with native plugins.

Side effects (a list each hook appends to) prove which hooks ran, not just what came back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
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
    StructuredToolResult,
    UsageInfo,
    UserMessageSendPayload,
    UserMessageSendResult,
    hookimpl,
    result_to_wire,
)
from kodelet.policy import valid_messages
from kodelet.testing import isolated_runtime


def plugin(**impls: Callable[..., Any]) -> SimpleNamespace:
    return SimpleNamespace(**{name: hookimpl(fn) for name, fn in impls.items()})


def runtime(tmp_path: Path, event: Event, *named: tuple[str, Any]) -> Runtime:
    """An isolated runtime whose call order for ``event`` is the order given."""
    # pluggy calls the last registered first, so register in reverse.
    rt = isolated_runtime(tmp_path, *reversed(named))
    assert [h.name for h in rt.hooks(event)] == [n for n, _ in named]
    return rt


def outcomes(d: Dispatch) -> list[tuple[str, Outcome]]:
    return [(r.name, r.outcome) for r in d.trace]


BTC = BeforeToolCallPayload(conv_id="c1", cwd="/w", tool_name="bash", tool_input={"command": "ls"})
OUT = StructuredToolResult(tool_name="bash", success=True, timestamp="2024-01-15T10:30:00Z")
ATC = AfterToolCallPayload(tool_name="bash", tool_input={"command": "ls"}, tool_output=OUT)
UMS = UserMessageSendPayload(message="please rm -rf /")
TURN = AfterTurnPayload(turn_number=3, usage=UsageInfo(current_context_window=10))
STOP = AgentStopPayload(messages=[Message("user", "fix it"), Message("assistant", "done")])
SUMMARY = [Message("user", "## Summary")]


# -- user_message_send: deny-fast ----------------------------------------------------


def test_user_message_send_deny_fast_skips_later_hooks(tmp_path: Path) -> None:
    ran: list[str] = []

    def watcher(tag: str, answer: Any) -> Callable[..., Any]:
        def impl(message: str) -> Any:
            ran.append(tag)
            return answer

        return impl

    rt = runtime(
        tmp_path,
        Event.USER_MESSAGE_SEND,
        ("allow", plugin(user_message_send=watcher("allow", {"blocked": False}))),
        ("deny", plugin(user_message_send=watcher("deny", {"blocked": True, "reason": "no rm"}))),
        (
            "deny-too",
            plugin(user_message_send=watcher("deny-too", {"blocked": True, "reason": "x"})),
        ),
        ("audit", plugin(user_message_send=watcher("audit", None))),
    )
    d = rt.dispatch(UMS)
    assert ran == ["allow", "deny"]
    assert d.result == UserMessageSendResult(blocked=True, reason="no rm")
    assert outcomes(d) == [("allow", Outcome.NO_ACTION), ("deny", Outcome.BLOCKED)]
    assert result_to_wire(Event.USER_MESSAGE_SEND, d.result) == {"blocked": True, "reason": "no rm"}


def test_user_message_send_without_blocks_runs_everyone(tmp_path: Path) -> None:
    ran: list[str] = []
    rt = runtime(
        tmp_path,
        Event.USER_MESSAGE_SEND,
        ("a", plugin(user_message_send=lambda message: ran.append("a"))),
        ("b", plugin(user_message_send=lambda: ran.append("b") or {"blocked": False})),
    )
    d = rt.dispatch(UMS)
    assert ran == ["a", "b"]
    assert d.result == UserMessageSendResult()
    assert result_to_wire(Event.USER_MESSAGE_SEND, d.result) == {"blocked": False}


@pytest.mark.parametrize("answer", [{"blocked": True}, {"blocked": True, "reason": ""}])
def test_block_without_reason_names_the_hook(tmp_path: Path, answer: dict[str, Any]) -> None:
    rt = runtime(
        tmp_path, Event.USER_MESSAGE_SEND, ("guard", plugin(user_message_send=lambda: answer))
    )
    assert rt.dispatch(UMS).result == UserMessageSendResult(blocked=True, reason="blocked by guard")
    rt = runtime(
        tmp_path,
        Event.BEFORE_TOOL_CALL,
        ("tool-guard", plugin(before_tool_call=lambda: BeforeToolCallResult(blocked=True))),
    )
    result = rt.dispatch(BTC).result
    assert result == BeforeToolCallResult(blocked=True, reason="blocked by tool-guard")


# -- before_tool_call: chained, first block stops ---------------------------------------


def test_before_tool_call_chains_rewrites(tmp_path: Path) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def first(tool_input: dict[str, Any]) -> Any:
        seen.append(("first", dict(tool_input)))
        return {"input": {**tool_input, "command": tool_input["command"] + " -la"}}

    def second(tool_name: str, tool_input: dict[str, Any]) -> Any:
        seen.append(("second", dict(tool_input)))
        return BeforeToolCallResult(input={**tool_input, "timeout": 5})

    def third(tool_input: dict[str, Any]) -> Any:
        seen.append(("third", dict(tool_input)))
        return None

    rt = runtime(
        tmp_path,
        Event.BEFORE_TOOL_CALL,
        ("first", plugin(before_tool_call=first)),
        ("second", plugin(before_tool_call=second)),
        ("third", plugin(before_tool_call=third)),
    )
    d = rt.dispatch(BTC)
    assert seen == [
        ("first", {"command": "ls"}),
        ("second", {"command": "ls -la"}),
        ("third", {"command": "ls -la", "timeout": 5}),
    ]
    assert d.result == BeforeToolCallResult(input={"command": "ls -la", "timeout": 5})
    assert outcomes(d) == [
        ("first", Outcome.MODIFIED),
        ("second", Outcome.MODIFIED),
        ("third", Outcome.NO_ACTION),
    ]
    assert BTC.tool_input == {"command": "ls"}


@pytest.mark.parametrize(
    "answers",
    [
        [None, {"blocked": False}],
        [{"input": {"command": "ls"}}, {"blocked": False, "reason": "fine"}],
        [{"input": {"command": "pwd"}}, {"input": {"command": "ls"}}],  # rewritten, then back
    ],
    ids=["no-answers", "same-input", "rewritten-back"],
)
def test_before_tool_call_merged_input_only_when_changed(
    tmp_path: Path, answers: list[Any]
) -> None:
    a, b = answers
    rt = runtime(
        tmp_path,
        Event.BEFORE_TOOL_CALL,
        ("a", plugin(before_tool_call=lambda: a)),
        ("b", plugin(before_tool_call=lambda: b)),
    )
    d = rt.dispatch(BTC)
    assert d.result == BeforeToolCallResult()
    assert result_to_wire(Event.BEFORE_TOOL_CALL, d.result) == {"blocked": False}


def test_before_tool_call_first_block_stops_the_chain(tmp_path: Path) -> None:
    ran: list[str] = []

    def rewrite(tool_input: dict[str, Any]) -> Any:
        ran.append("rewrite")
        return {"input": {"command": "ls /"}}

    def guard(tool_input: dict[str, Any]) -> Any:
        ran.append("guard")
        assert tool_input == {"command": "ls /"}
        return {"blocked": True, "reason": "no listing of /"}

    def later(tool_input: dict[str, Any]) -> Any:
        ran.append("later")
        return {"blocked": True, "reason": "later"}

    rt = runtime(
        tmp_path,
        Event.BEFORE_TOOL_CALL,
        ("rewrite", plugin(before_tool_call=rewrite)),
        ("guard", plugin(before_tool_call=guard)),
        ("later", plugin(before_tool_call=later)),
    )
    d = rt.dispatch(BTC)
    assert ran == ["rewrite", "guard"]
    assert d.result == BeforeToolCallResult(blocked=True, reason="no listing of /")
    assert result_to_wire(Event.BEFORE_TOOL_CALL, d.result) == {
        "blocked": True,
        "reason": "no listing of /",
    }
    assert outcomes(d) == [("rewrite", Outcome.MODIFIED), ("guard", Outcome.BLOCKED)]


def test_before_tool_call_in_place_edit_counts_as_a_rewrite(tmp_path: Path) -> None:
    def edit(tool_input: dict[str, Any]) -> None:
        tool_input["command"] = "ls -a"

    rt = runtime(tmp_path, Event.BEFORE_TOOL_CALL, ("edit", plugin(before_tool_call=edit)))
    payload = BeforeToolCallPayload(tool_name="bash", tool_input={"command": "ls"})
    assert rt.dispatch(payload).result == BeforeToolCallResult(input={"command": "ls -a"})


def test_an_ask_runs_every_later_hook_and_the_merged_result_asks_blocked(
    tmp_path: Path,
) -> None:
    ran: list[str] = []

    def asker(tool_input: dict[str, Any]) -> Any:
        ran.append("asker")
        return {"ask": True, "reason": "deletes files"}

    def second(tool_input: dict[str, Any]) -> Any:
        ran.append("second")
        return {"ask": True, "reason": "second question", "input": {"command": "ls -a"}}

    def rewrite(tool_input: dict[str, Any]) -> Any:
        ran.append("rewrite")
        assert tool_input == {"command": "ls -a"}
        return {"input": {"command": "ls -la"}}

    rt = runtime(
        tmp_path,
        Event.BEFORE_TOOL_CALL,
        ("asker", plugin(before_tool_call=asker)),
        ("second", plugin(before_tool_call=second)),
        ("rewrite", plugin(before_tool_call=rewrite)),
    )
    d = rt.dispatch(BTC)
    assert ran == ["asker", "second", "rewrite"]
    assert d.result == BeforeToolCallResult(
        blocked=True, ask=True, reason="deletes files", input={"command": "ls -la"}
    )
    assert result_to_wire(Event.BEFORE_TOOL_CALL, d.result) == {
        "blocked": True,
        "ask": True,
        "reason": "deletes files",
        "input": {"command": "ls -la"},
    }
    assert outcomes(d) == [
        ("asker", Outcome.ACTION),
        ("second", Outcome.ACTION),
        ("rewrite", Outcome.MODIFIED),
    ]
    assert [r.detail for r in d.trace[:2]] == [
        "ask: deletes files",
        "ask: second question; input rewritten",
    ]


def test_a_block_after_an_ask_wins(tmp_path: Path) -> None:
    rt = runtime(
        tmp_path,
        Event.BEFORE_TOOL_CALL,
        ("asker", plugin(before_tool_call=lambda: {"ask": True, "reason": "sure?"})),
        ("guard", plugin(before_tool_call=lambda: {"blocked": True, "reason": "never"})),
    )
    d = rt.dispatch(BTC)
    assert d.result == BeforeToolCallResult(blocked=True, reason="never")
    assert "ask" not in result_to_wire(Event.BEFORE_TOOL_CALL, d.result)


def test_an_ask_without_a_reason_names_the_hook_and_no_ask_is_left_out(tmp_path: Path) -> None:
    rt = runtime(
        tmp_path, Event.BEFORE_TOOL_CALL, ("asker", plugin(before_tool_call=lambda: {"ask": True}))
    )
    assert rt.dispatch(BTC).result.reason == "asker asks for approval"
    quiet = BeforeToolCallResult(ask=False, input={"command": "ls"})
    assert result_to_wire(Event.BEFORE_TOOL_CALL, quiet) == {
        "blocked": False,
        "input": {"command": "ls"},
    }


def test_an_ask_that_is_not_a_boolean_is_the_hooks_failure(tmp_path: Path) -> None:
    # Failing open, so the answer shows the ask was not taken as one (not a block).
    (tmp_path / ".kodelet").mkdir()
    (tmp_path / ".kodelet" / "config.toml").write_text('[hooks."asker"]\nfail_closed = false\n')
    rt = runtime(
        tmp_path,
        Event.BEFORE_TOOL_CALL,
        ("asker", plugin(before_tool_call=lambda: {"ask": "yes", "reason": "sure?"})),
    )
    d = rt.dispatch(BTC)
    assert outcomes(d) == [("asker", Outcome.ERROR)]
    assert "result.ask" in (d.trace[0].error or "")
    assert d.result == BeforeToolCallResult()


# -- after_tool_call: chained on tool_output ----------------------------------------------


def test_after_tool_call_chains_output(tmp_path: Path) -> None:
    seen: list[StructuredToolResult] = []

    def fail_it(tool_output: StructuredToolResult) -> Any:
        seen.append(tool_output)
        return {"output": {"toolName": "bash", "success": False, "timestamp": "t"}}

    def explain(tool_output: StructuredToolResult) -> Any:
        seen.append(tool_output)
        return AfterToolCallResult(
            output=StructuredToolResult(
                tool_name=tool_output.tool_name,
                success=tool_output.success,
                error="redacted",
                timestamp=tool_output.timestamp,
            )
        )

    def watch(tool_output: StructuredToolResult) -> None:
        seen.append(tool_output)

    rt = runtime(
        tmp_path,
        Event.AFTER_TOOL_CALL,
        ("fail-it", plugin(after_tool_call=fail_it)),
        ("explain", plugin(after_tool_call=explain)),
        ("watch", plugin(after_tool_call=watch)),
    )
    d = rt.dispatch(ATC)
    final = StructuredToolResult(tool_name="bash", success=False, error="redacted", timestamp="t")
    assert seen == [
        OUT,
        StructuredToolResult(tool_name="bash", success=False, timestamp="t"),
        final,
    ]
    assert d.result == AfterToolCallResult(output=final)
    assert result_to_wire(Event.AFTER_TOOL_CALL, d.result) == {
        "output": {"toolName": "bash", "success": False, "error": "redacted", "timestamp": "t"}
    }
    assert outcomes(d) == [
        ("fail-it", Outcome.MODIFIED),
        ("explain", Outcome.MODIFIED),
        ("watch", Outcome.NO_ACTION),
    ]


def test_after_tool_call_merged_output_only_when_changed(tmp_path: Path) -> None:
    same = {"output": {"toolName": "bash", "success": True, "timestamp": "2024-01-15T10:30:00Z"}}
    rt = runtime(
        tmp_path,
        Event.AFTER_TOOL_CALL,
        ("same", plugin(after_tool_call=lambda: same)),
        ("empty", plugin(after_tool_call=lambda: {})),
        ("none", plugin(after_tool_call=lambda: AfterToolCallResult())),
    )
    d = rt.dispatch(ATC)
    assert d.result == AfterToolCallResult()
    assert result_to_wire(Event.AFTER_TOOL_CALL, d.result) == {}
    assert {r.outcome for r in d.trace} == {Outcome.NO_ACTION}


# -- after_turn: everyone runs, first action wins ------------------------------------------


def test_after_turn_first_action_wins_and_later_conflicts_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[str] = []

    def mutate(turn_number: int) -> Any:
        ran.append("mutate")
        return {"result": "mutate", "messages": [{"role": "user", "content": "## Summary"}]}

    def callback() -> Any:
        ran.append("callback")
        return AfterTurnResult(result="callback", callback="compact")

    def observer(usage: UsageInfo) -> None:
        ran.append("observer")

    rt = runtime(
        tmp_path,
        Event.AFTER_TURN,
        ("observer", plugin(after_turn=observer)),
        ("summarizer", plugin(after_turn=mutate)),
        ("compactor", plugin(after_turn=callback)),
    )
    caplog.set_level(logging.WARNING, logger="kodelet")
    d = rt.dispatch(TURN)
    assert ran == ["observer", "mutate", "callback"]
    assert d.result == AfterTurnResult(result="mutate", messages=SUMMARY)
    assert result_to_wire(Event.AFTER_TURN, d.result) == {
        "result": "mutate",
        "messages": [{"role": "user", "content": "## Summary"}],
    }
    assert outcomes(d) == [
        ("observer", Outcome.NO_ACTION),
        ("summarizer", Outcome.ACTION),
        ("compactor", Outcome.ACTION),
    ]
    assert d.trace[2].detail is not None and "conflict" in d.trace[2].detail
    conflicts = [r.getMessage() for r in caplog.records if "conflict" in r.getMessage()]
    assert len(conflicts) == 1
    assert "compactor" in conflicts[0] and "summarizer" in conflicts[0]


def test_after_turn_callback_first_beats_later_mutate(tmp_path: Path) -> None:
    rt = runtime(
        tmp_path,
        Event.AFTER_TURN,
        (
            "compactor",
            plugin(
                after_turn=lambda: {
                    "result": "callback",
                    "callback": "compact",
                    "callback_args": {"keep": "3"},
                }
            ),
        ),
        (
            "summarizer",
            plugin(after_turn=lambda: AfterTurnResult(result="mutate", messages=SUMMARY)),
        ),
    )
    d = rt.dispatch(TURN)
    assert d.result == AfterTurnResult(
        result="callback", callback="compact", callback_args={"keep": "3"}
    )


@pytest.mark.parametrize("plain", [{}, {"result": ""}, {"result": "continue"}, None])
def test_after_turn_no_action_answers(tmp_path: Path, plain: Any) -> None:
    rt = runtime(tmp_path, Event.AFTER_TURN, ("quiet", plugin(after_turn=lambda: plain)))
    d = rt.dispatch(TURN)
    assert d.result == AfterTurnResult()
    assert result_to_wire(Event.AFTER_TURN, d.result) == {}
    assert outcomes(d) == [("quiet", Outcome.NO_ACTION)]


MALFORMED = [
    pytest.param(
        {"result": "mutate", "messages": [{"role": "system", "content": "x"}]},
        "role",
        id="dict-bad-role",
    ),
    pytest.param(
        AfterTurnResult(result="mutate", messages=[Message("tool", "x")]),
        "role",
        id="object-bad-role",
    ),
    pytest.param(
        AfterTurnResult(result="mutate", messages=[Message("user", 5)]),  # type: ignore[arg-type]
        "content",
        id="object-non-string-content",
    ),
    pytest.param(
        {"result": "mutate", "messages": [{"role": "user", "content": 5}]},
        "content",
        id="dict-non-string-content",
    ),
    pytest.param({"result": "mutate", "messages": []}, "messages", id="empty-list"),
    pytest.param({"result": "mutate"}, "messages", id="no-messages"),
    pytest.param(AfterTurnResult(result="mutate", messages=[]), "messages", id="object-empty"),
]


@pytest.mark.parametrize(("bad", "why"), MALFORMED)
def test_after_turn_malformed_mutate_is_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, bad: Any, why: str
) -> None:
    rt = runtime(
        tmp_path,
        Event.AFTER_TURN,
        ("sloppy", plugin(after_turn=lambda: bad)),
        ("compactor", plugin(after_turn=lambda: {"result": "callback", "callback": "compact"})),
    )
    caplog.set_level(logging.WARNING, logger="kodelet")
    d = rt.dispatch(TURN)
    assert d.result == AfterTurnResult(result="callback", callback="compact")
    assert outcomes(d) == [("sloppy", Outcome.ERROR), ("compactor", Outcome.ACTION)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("sloppy" in w and why in w for w in warnings), warnings
    assert not any("conflict" in w for w in warnings)


def test_after_turn_callback_without_a_name_is_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rt = runtime(
        tmp_path, Event.AFTER_TURN, ("nameless", plugin(after_turn=lambda: {"result": "callback"}))
    )
    caplog.set_level(logging.WARNING, logger="kodelet")
    d = rt.dispatch(TURN)
    assert d.result == AfterTurnResult()
    assert outcomes(d) == [("nameless", Outcome.ERROR)]
    assert any("nameless" in r.getMessage() for r in caplog.records)


# -- agent_stop: follow-ups accumulate, first action wins -----------------------------------


def test_agent_stop_follow_ups_accumulate_in_call_order(tmp_path: Path) -> None:
    ran: list[str] = []

    def one(messages: list[Message]) -> Any:
        ran.append("one")
        return {"follow_up_messages": ["Please also run the linter", "and the tests"]}

    def two() -> Any:
        ran.append("two")
        return None

    def three(invoked_by: str) -> Any:
        ran.append("three")
        return AgentStopResult(result="continue", follow_up_messages=["Remove foo.txt"])

    rt = runtime(
        tmp_path,
        Event.AGENT_STOP,
        ("one", plugin(agent_stop=one)),
        ("two", plugin(agent_stop=two)),
        ("three", plugin(agent_stop=three)),
    )
    d = rt.dispatch(STOP)
    assert ran == ["one", "two", "three"]
    assert d.result == AgentStopResult(
        follow_up_messages=["Please also run the linter", "and the tests", "Remove foo.txt"]
    )
    assert outcomes(d) == [
        ("one", Outcome.ACTION),
        ("two", Outcome.NO_ACTION),
        ("three", Outcome.ACTION),
    ]
    assert result_to_wire(Event.AGENT_STOP, d.result) == {
        "follow_up_messages": ["Please also run the linter", "and the tests", "Remove foo.txt"]
    }


def test_agent_stop_first_action_wins_while_follow_ups_keep_accumulating(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rt = runtime(
        tmp_path,
        Event.AGENT_STOP,
        ("lint", plugin(agent_stop=lambda: {"follow_up_messages": ["lint"]})),
        ("compact", plugin(agent_stop=lambda: {"result": "callback", "callback": "compact"})),
        (
            "summary",
            plugin(
                agent_stop=lambda: {
                    "result": "mutate",
                    "follow_up_messages": ["more"],
                    "messages": [{"role": "user", "content": "s"}],
                }
            ),
        ),
        ("test", plugin(agent_stop=lambda: AgentStopResult(follow_up_messages=["test"]))),
    )
    caplog.set_level(logging.WARNING, logger="kodelet")
    d = rt.dispatch(STOP)
    assert d.result == AgentStopResult(
        result="callback", callback="compact", follow_up_messages=["lint", "more", "test"]
    )
    conflicts = [r.getMessage() for r in caplog.records if "conflict" in r.getMessage()]
    assert len(conflicts) == 1
    assert "summary" in conflicts[0] and "compact" in conflicts[0]


def test_agent_stop_first_mutate_wins(tmp_path: Path) -> None:
    rt = runtime(
        tmp_path,
        Event.AGENT_STOP,
        ("first", plugin(agent_stop=lambda: AgentStopResult(result="mutate", messages=SUMMARY))),
        (
            "second",
            plugin(
                agent_stop=lambda: {
                    "result": "mutate",
                    "messages": [{"role": "user", "content": "other"}],
                }
            ),
        ),
    )
    assert rt.dispatch(STOP).result == AgentStopResult(result="mutate", messages=SUMMARY)


@pytest.mark.parametrize(("bad", "why"), MALFORMED[:1] + MALFORMED[3:6])
def test_agent_stop_malformed_mutate_is_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, bad: Any, why: str
) -> None:
    rt = runtime(
        tmp_path,
        Event.AGENT_STOP,
        ("sloppy", plugin(agent_stop=lambda: bad)),
        (
            "good",
            plugin(
                agent_stop=lambda: {
                    "result": "mutate",
                    "messages": [{"role": "assistant", "content": "ok"}],
                }
            ),
        ),
    )
    caplog.set_level(logging.WARNING, logger="kodelet")
    d = rt.dispatch(STOP)
    assert d.result == AgentStopResult(result="mutate", messages=[Message("assistant", "ok")])
    assert d.trace[0].outcome is Outcome.ERROR
    assert any("sloppy" in r.getMessage() for r in caplog.records)


# -- the reducers' helper ------------------------------------------------------------------


def test_valid_messages() -> None:
    assert valid_messages([Message("user", "a"), Message("assistant", "b")]) is None
    assert valid_messages(None) == "mutate without messages"
    assert valid_messages([]) == "mutate without messages"
    problem = valid_messages([Message("user", "a"), Message("system", "b")])
    assert problem is not None and "messages[1].role" in problem
    problem = valid_messages([Message("user", None)])  # type: ignore[arg-type]
    assert problem is not None and "messages[0].content" in problem
