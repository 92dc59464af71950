"""A hook's ``ask``: the session asks its approver, sync or async, and runs the call only on
``True``; without an approver, or when the approver fails, the call is blocked."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kodelet import (
    BeforeToolCallResult,
    Event,
    Session,
    StructuredToolResult,
    hookimpl,
    load_runtime,
)
from kodelet.host.approval import ApprovalRequest
from kodelet.host.driver import Driver
from kodelet.runtime import Runtime
from kodelet.testing import Approvals, isolated_runtime, write_hook

ASK_HOOK = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'rm '; then echo '{"ask": true, "reason": "this deletes files"}'; fi ;;
esac
"""


class Asker:
    @hookimpl
    def before_tool_call(self, tool_input: dict[str, Any]) -> Any:
        if "rm " in tool_input.get("command", ""):
            return {"ask": True, "reason": "this deletes files", "input": {"command": "rm -i x"}}
        return None


def asking(tmp_path: Path) -> Runtime:
    return isolated_runtime(tmp_path, ("asker", Asker()))


def test_an_executable_hooks_ask_reaches_the_approver_and_the_call_runs(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "ask-rm", ASK_HOOK)
    approvals = Approvals(True)
    with load_runtime(cwd=project, entry_points=False, builtins=False) as rt:
        session = Session(rt, conv_id="c1", approver=approvals)
        result = session.before_tool_call("bash", {"command": "rm x"}, "toolu_1")
        untouched = session.before_tool_call("bash", {"command": "ls"}, "toolu_2")
    assert result == BeforeToolCallResult()
    assert untouched == BeforeToolCallResult()
    (request,) = approvals.requests
    assert request == ApprovalRequest(
        tool_name="bash",
        tool_input={"command": "rm x"},
        reason="this deletes files",
        tool_user_id="toolu_1",
        conv_id="c1",
    )


def test_the_approver_sees_the_input_the_call_would_run_with(tmp_path: Path) -> None:
    approvals = Approvals(True)
    with asking(tmp_path) as rt:
        result = Session(rt, approver=approvals).before_tool_call("bash", {"command": "rm x"})
    assert approvals.requests[0].tool_input == {"command": "rm -i x"}
    assert result == BeforeToolCallResult(input={"command": "rm -i x"})


def test_a_denied_ask_blocks_with_the_hooks_reason(tmp_path: Path) -> None:
    with asking(tmp_path) as rt:
        result = Session(rt, approver=Approvals(False)).before_tool_call(
            "bash", {"command": "rm x"}
        )
    assert result.blocked and not result.ask
    assert result.reason == "this deletes files (not approved)"


def test_without_an_approver_an_ask_is_a_block(tmp_path: Path) -> None:
    with asking(tmp_path) as rt:
        session = Session(rt)
        result = session.before_tool_call("bash", {"command": "rm x"})
        raw = session.last
    assert result.blocked and not result.ask
    assert result.reason.startswith("this deletes files (")
    assert "no one to ask" in result.reason
    assert raw is not None and raw.result.ask and raw.result.blocked


@pytest.mark.parametrize(
    ("approver", "why"),
    [
        pytest.param(lambda r: "yes", "answered str, not a boolean", id="not-a-bool"),
        pytest.param(lambda r: None, "answered NoneType, not a boolean", id="none"),
        pytest.param(lambda r: 1 / 0, "the approver failed: ZeroDivisionError", id="raises"),
    ],
)
@pytest.mark.parametrize("api", ["sync", "async"])
def test_an_approver_that_fails_or_mumbles_blocks(
    tmp_path: Path, approver: Any, why: str, api: str
) -> None:
    with asking(tmp_path) as rt:
        session = Session(rt, approver=approver)
        if api == "sync":
            result = session.before_tool_call("bash", {"command": "rm x"})
        else:
            result = asyncio.run(session.abefore_tool_call("bash", {"command": "rm x"}))
    assert result.blocked and why in result.reason


def test_the_async_api_awaits_an_async_approver(tmp_path: Path) -> None:
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> bool:
        await asyncio.sleep(0)
        asked.append(request.reason)
        return request.tool_input["command"].startswith("rm -i")

    with asking(tmp_path) as rt:
        session = Session(rt, approver=approver)
        result = asyncio.run(session.abefore_tool_call("bash", {"command": "rm x"}))
        plain = asyncio.run(
            Session(rt, approver=Approvals(True)).abefore_tool_call("bash", {"command": "rm x"})
        )
    assert asked == ["this deletes files"]
    assert result == plain == BeforeToolCallResult(input={"command": "rm -i x"})


def test_an_async_approver_on_the_sync_api_is_a_host_error_and_nothing_runs(
    tmp_path: Path,
) -> None:
    async def approver(request: ApprovalRequest) -> bool:
        return True

    with asking(tmp_path) as rt, pytest.raises(TypeError, match="abefore_tool_call"):
        Session(rt, approver=approver).before_tool_call("bash", {"command": "rm x"})


def test_a_block_is_never_put_to_the_approver(tmp_path: Path) -> None:
    class Guard:
        @hookimpl
        def before_tool_call(self) -> Any:
            return {"blocked": True, "reason": "never"}

    approvals = Approvals(True)
    with isolated_runtime(tmp_path, ("guard", Guard()), ("asker", Asker())) as rt:
        result = Session(rt, approver=approvals).before_tool_call("bash", {"command": "rm x"})
    assert result == BeforeToolCallResult(blocked=True, reason="never")
    assert approvals.requests == []


@pytest.mark.parametrize("answer", [True, False])
def test_the_driver_runs_an_approved_call_and_not_a_denied_one(
    tmp_path: Path, answer: bool
) -> None:
    ran: list[dict[str, Any]] = []

    def run(tool_input: dict[str, Any]) -> StructuredToolResult:
        ran.append(tool_input)
        return StructuredToolResult(tool_name="bash", success=True)

    with asking(tmp_path) as rt:
        driver = Driver(Session(rt, approver=Approvals(answer)))
        outcome = driver.call_tool("bash", {"command": "rm x"}, "t1", run=run)
    assert ran == ([{"command": "rm -i x"}] if answer else [])
    assert outcome.blocked is not answer
    if not answer:
        assert outcome.output.error == "this deletes files (not approved)"


def test_sessions_dispatch_keeps_the_raw_ask(tmp_path: Path) -> None:
    """Session.dispatch is the generic path: it answers nothing, and the ask stays blocked."""
    with asking(tmp_path) as rt:
        raw = Session(rt, approver=Approvals(True)).dispatch(
            Event.BEFORE_TOOL_CALL, tool_name="bash", tool_input={"command": "rm x"}
        )
    assert raw.blocked and raw.ask
