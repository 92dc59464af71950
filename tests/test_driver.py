"""The session driver: the five events in the seeds' order, and what the host does with answers."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from kodelet import hookimpl, load_runtime
from kodelet.host.driver import (
    Driver,
    Reply,
    ToolCall,
    assistant_text,
    blocked_tool_result,
    tool_result_text,
)
from kodelet.host.session import Session
from kodelet.payloads import Message, StructuredToolResult, UsageInfo
from kodelet.recipes.callbacks import CallbackRegistry
from kodelet.runtime import Runtime
from kodelet.testing import write_hook


class Recorder:
    """Records every event it sees, with the fields a test wants to check."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    @hookimpl
    def user_message_send(self, message: str) -> None:
        self.seen.append(("user_message_send", message))

    @hookimpl
    def before_tool_call(self, tool_name: str, tool_input: dict[str, Any]) -> None:
        self.seen.append(("before_tool_call", (tool_name, dict(tool_input))))

    @hookimpl
    def after_tool_call(self, tool_name: str, tool_output: StructuredToolResult) -> None:
        self.seen.append(("after_tool_call", tool_output))

    @hookimpl
    def after_turn(
        self, turn_number: int, tools_used: bool, usage: UsageInfo, messages: list[Message] | None
    ) -> None:
        self.seen.append(("after_turn", (turn_number, tools_used, usage, list(messages or []))))

    @hookimpl
    def agent_stop(self, messages: list[Message]) -> None:
        self.seen.append(("agent_stop", list(messages)))

    def events(self) -> list[str]:
        return [name for name, _ in self.seen]


def make_runtime(tmp_path: Path, *plugins: Any, builtins: bool = False) -> Runtime:
    """An isolated runtime; pluggy calls the plugins given last first."""
    return load_runtime(
        cwd=tmp_path,
        entry_points=False,
        executables=False,
        builtins=builtins,
        plugins=[(f"p{i}", p) for i, p in enumerate(plugins)],
    )


def ok(name: str, text: str = "done") -> StructuredToolResult:
    return StructuredToolResult(
        tool_name=name, success=True, metadata={"output": text}, timestamp="2025-01-01T00:00:00Z"
    )


def script(*replies: Reply) -> Any:
    """A model that answers with ``replies`` in order and remembers what it was shown."""
    queue = list(replies)
    shown: list[list[Message]] = []

    def step(messages: list[Message]) -> Reply:
        shown.append(messages)
        return queue.pop(0)

    step.shown = shown  # type: ignore[attr-defined]
    return step


def test_run_fires_events_in_the_seeds_order(tmp_path: Path) -> None:
    rec = Recorder()
    with make_runtime(tmp_path, rec) as rt:
        driver = Driver(Session(rt, conv_id="c1"), max_context_window=1000)
        step = script(
            Reply(
                content="Listing.",
                tool_calls=[ToolCall(id="t1", name="bash", input={"command": "ls"})],
                usage=UsageInfo(input_tokens=100, output_tokens=10, current_context_window=110),
            ),
            Reply(content="Two files.", usage=UsageInfo(input_tokens=150, output_tokens=5)),
        )
        ran: list[tuple[str, dict[str, Any]]] = []

        def run_tool(name: str, tool_input: dict[str, Any]) -> StructuredToolResult:
            ran.append((name, tool_input))
            return ok(name, "a.py b.py")

        outcome = driver.run("what is here?", step=step, run_tool=run_tool)

    assert outcome.sent.sent and outcome.stopped and outcome.turns == 2
    assert rec.events() == [
        "user_message_send",
        "before_tool_call",
        "after_tool_call",
        "after_turn",
        "after_turn",
        "agent_stop",
    ]
    assert ran == [("bash", {"command": "ls"})]
    turn1 = rec.seen[3][1]
    assert turn1[0] == 1 and turn1[1] is True
    assert turn1[2].max_context_window == 1000  # filled in from the driver's window
    turn2 = rec.seen[4][1]
    assert turn2[0] == 2 and turn2[1] is False
    # The history a host keeps: the user message, then one assistant message per turn
    # holding the response, its tool use and the tool's result.
    roles = [m.role for m in driver.messages]
    assert roles == ["user", "assistant", "assistant"]
    call = ToolCall(id="t1", name="bash", input={"command": "ls"})
    assert driver.messages[1].content == "\n".join(
        [assistant_text("Listing.", [call]), tool_result_text("t1", ok("bash", "a.py b.py"))]
    )
    assert driver.messages[1].content.splitlines()[1] == '[tool_use bash t1] {"command": "ls"}'
    assert rec.seen[5][1] == driver.messages
    # The model saw the tool result before answering the second time.
    assert step.shown[1][-1].content.splitlines()[-1].startswith("[tool_result bash t1 ok]")


class BlockSecrets:
    @hookimpl
    def user_message_send(self, message: str) -> dict[str, Any] | None:
        if "AKIA" in message:
            return {"blocked": True, "reason": "secret in message"}
        return None


def test_blocked_user_message_never_joins_history_and_no_model_call(tmp_path: Path) -> None:
    rec = Recorder()
    with make_runtime(tmp_path, rec, BlockSecrets()) as rt:
        driver = Driver(Session(rt))
        step = script()
        outcome = driver.run("key AKIAIOSFODNN7EXAMPLE", step=step, run_tool=lambda n, i: ok(n))
    assert not outcome.sent.sent
    assert outcome.sent.reason == "secret in message"
    assert driver.messages == []
    assert step.shown == []
    assert rec.events() == []  # deny-fast: the recorder after the blocker never ran


class Guard:
    @hookimpl
    def before_tool_call(self, tool_name: str, tool_input: dict[str, Any]) -> dict[str, Any] | None:
        command = tool_input.get("command", "")
        if "rm -rf" in command:
            return {"blocked": True, "reason": "Security policy: 'rm -rf' is not allowed"}
        if command == "ls":
            return {"input": {"command": "ls -la"}}
        return None

    @hookimpl
    def after_tool_call(self, tool_output: StructuredToolResult) -> dict[str, Any] | None:
        meta = tool_output.metadata or {}
        if "hunter2" in str(meta.get("output", "")):
            return {
                "output": {
                    "toolName": tool_output.tool_name,
                    "success": True,
                    "metadata": {"output": "[redacted]"},
                }
            }
        return None


def test_blocked_call_gets_the_seeds_blocked_result_and_after_tool_call_still_fires(
    tmp_path: Path,
) -> None:
    rec = Recorder()
    with make_runtime(tmp_path, rec, Guard()) as rt:
        driver = Driver(Session(rt))
        driver.send_user_message("clean up")
        driver.begin_turn(
            "Cleaning.", [ToolCall(id="t9", name="bash", input={"command": "rm -rf /"})]
        )
        ran: list[Any] = []
        outcome = driver.call_tool(
            "bash", {"command": "rm -rf /"}, "t9", run=ran.append, timestamp="2025-01-01T00:00:00Z"
        )
    assert ran == []
    assert outcome.blocked and outcome.reason == "Security policy: 'rm -rf' is not allowed"
    expected = StructuredToolResult(
        tool_name="bash",
        success=False,
        error="Security policy: 'rm -rf' is not allowed",
        timestamp="2025-01-01T00:00:00Z",
    )
    assert (
        outcome.output
        == expected
        == blocked_tool_result(
            "bash", "Security policy: 'rm -rf' is not allowed", "2025-01-01T00:00:00Z"
        )
    )
    # The recorder comes after the guard: a block stops the before_tool_call chain,
    # but after_tool_call still sees the blocked result.
    assert rec.events() == ["user_message_send", "after_tool_call"]
    assert rec.seen[1][1] == expected
    assert driver.messages[-1].content.splitlines()[-1] == tool_result_text("t9", expected)
    assert driver.tool_records[-1].success is False


def test_rewritten_input_runs_and_rewritten_output_is_what_the_model_sees(tmp_path: Path) -> None:
    with make_runtime(tmp_path, Guard()) as rt:
        driver = Driver(Session(rt))
        driver.begin_turn("", [ToolCall(id="t1", name="bash", input={"command": "ls"})])
        ran: list[dict[str, Any]] = []

        def run(tool_input: dict[str, Any]) -> StructuredToolResult:
            ran.append(tool_input)
            return ok("bash", "password=hunter2")

        outcome = driver.call_tool("bash", {"command": "ls"}, "t1", run=run)
    assert ran == [{"command": "ls -la"}]
    assert outcome.input_rewritten and outcome.output_rewritten and not outcome.blocked
    assert outcome.output.metadata == {"output": "[redacted]"}
    assert "hunter2" not in driver.messages[-1].content
    assert "[redacted]" in driver.messages[-1].content


class Mutator:
    @hookimpl
    def after_turn(self, turn_number: int) -> dict[str, Any] | None:
        if turn_number == 2:
            return {"result": "mutate", "messages": [{"role": "user", "content": "summary"}]}
        return None


def test_after_turn_mutate_replaces_history_and_saves(tmp_path: Path) -> None:
    saves: list[int] = []
    replaced: list[list[Message]] = []
    with make_runtime(tmp_path, Mutator()) as rt:
        driver = Driver(
            Session(rt),
            save_conversation=lambda: saves.append(len(driver.messages)),
            on_replace=replaced.append,
        )
        driver.send_user_message("hi")
        driver.begin_turn("one")
        assert driver.end_turn().applied.action == "none"
        driver.begin_turn("two")
        outcome = driver.end_turn()
    assert outcome.applied.action == "mutate"
    assert driver.messages == [Message("user", "summary")]
    assert replaced == [[Message("user", "summary")]]
    assert saves == [1]


def test_builtin_compaction_runs_the_compact_recipe_through_the_registry(tmp_path: Path) -> None:
    with make_runtime(tmp_path, builtins=True) as rt:
        driver = Driver(
            Session(rt),
            max_context_window=1000,
            auto_compact_enabled=True,
            auto_compact_threshold=0.8,
            registry=CallbackRegistry.default(rt.places, env={}),
        )
        driver.send_user_message("Fix the parser in src/parse.py")
        driver.begin_turn(
            "Reading.", [ToolCall(id="t1", name="file_read", input={"file_path": "src/parse.py"})]
        )
        driver.call_tool(
            "file_read",
            {"file_path": "src/parse.py"},
            "t1",
            run=lambda i: ok("file_read", "def parse(): ..."),
        )
        below = driver.end_turn(
            UsageInfo(input_tokens=700, output_tokens=99, current_context_window=799)
        )
        assert below.applied.action == "none" and len(driver.messages) == 2
        driver.begin_turn("Editing.", [ToolCall(id="t2", name="bash", input={"command": "pytest"})])
        driver.call_tool(
            "bash",
            {"command": "pytest"},
            "t2",
            run=lambda i: StructuredToolResult(tool_name="bash", success=False, error="1 failed"),
        )
        at = driver.end_turn(
            UsageInfo(input_tokens=700, output_tokens=100, current_context_window=800)
        )
    assert at.applied.action == "callback"
    assert len(driver.messages) == 1 and driver.messages[0].role == "user"
    summary = driver.messages[0].content
    assert "Fix the parser in src/parse.py" in summary
    assert "src/parse.py" in summary and "1 failed" in summary
    assert driver.tool_records == []  # what they described now lives in the summary


class UnknownCallback:
    @hookimpl
    def after_turn(self) -> dict[str, Any]:
        return {"result": "callback", "callback": "no-such-recipe"}


def test_unknown_callback_leaves_history_alone_with_a_warning(tmp_path: Path) -> None:
    with make_runtime(tmp_path, UnknownCallback()) as rt:
        driver = Driver(Session(rt), registry=CallbackRegistry.default(rt.places, env={}))
        driver.send_user_message("hi")
        driver.begin_turn("hello")
        before = list(driver.messages)
        outcome = driver.end_turn()
    assert driver.messages == before
    assert outcome.applied.warning and "no-such-recipe" in outcome.applied.warning


class FollowUpOnce:
    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def agent_stop(self, messages: list[Message]) -> dict[str, Any] | None:
        self.calls += 1
        if not any("run the linter" in m.content for m in messages):
            return {"follow_up_messages": ["Please also run the linter"]}
        return None


def test_follow_ups_are_appended_and_the_loop_asks_the_model_again(tmp_path: Path) -> None:
    hook = FollowUpOnce()
    rec = Recorder()
    with make_runtime(tmp_path, hook, rec) as rt:
        driver = Driver(Session(rt))
        step = script(Reply(content="Done."), Reply(content="Linter is clean."))
        outcome = driver.run("fix it", step=step, run_tool=lambda n, i: ok(n))
    assert outcome.stopped and outcome.turns == 2
    assert hook.calls == 2
    assert [m.content for m in driver.messages] == [
        "fix it",
        "Done.",
        "Please also run the linter",
        "Linter is clean.",
    ]
    # Follow-ups are appended without user_message_send (the seeds' AddUserMessage).
    assert rec.events().count("user_message_send") == 1
    assert step.shown[1][-1] == Message("user", "Please also run the linter")


class MutateAndFollowUp:
    @hookimpl
    def agent_stop(self) -> dict[str, Any]:
        return {
            "result": "mutate",
            "messages": [{"role": "user", "content": "compacted"}],
            "follow_up_messages": ["carry on"],
        }


def test_agent_stop_mutates_first_then_appends_follow_ups(tmp_path: Path) -> None:
    with make_runtime(tmp_path, MutateAndFollowUp()) as rt:
        driver = Driver(Session(rt))
        driver.send_user_message("hi")
        driver.begin_turn("hello")
        driver.end_turn()
        stop = driver.stop()
    assert stop.applied.action == "mutate"
    assert stop.follow_ups == ("carry on",)
    assert driver.messages == [Message("user", "compacted"), Message("user", "carry on")]


def test_run_stops_after_max_turns(tmp_path: Path) -> None:
    with make_runtime(tmp_path) as rt:
        driver = Driver(Session(rt))
        busy = Reply(content="again", tool_calls=[ToolCall(id="t", name="bash", input={})])
        outcome = driver.run("loop", step=lambda m: busy, run_tool=lambda n, i: ok(n), max_turns=3)
    assert outcome.turns == 3 and not outcome.stopped
    assert driver.turn_number == 3


class Failing:
    @hookimpl
    def before_tool_call(self) -> None:
        raise RuntimeError("boom")


def test_a_failing_hook_that_fails_open_is_no_action_for_the_host(tmp_path: Path) -> None:
    (tmp_path / ".kodelet").mkdir()
    (tmp_path / ".kodelet" / "config.toml").write_text('[hooks."p0"]\nfail_closed = false\n')
    with make_runtime(tmp_path, Failing()) as rt:
        session = Session(rt)
        driver = Driver(session)
        outcome = driver.call_tool("bash", {"command": "ls"}, "t", run=lambda i: ok("bash"))
        assert session.last is not None
        assert session.last.trace == ()  # the last dispatch was after_tool_call, with no hooks
    assert not outcome.blocked and outcome.output == ok("bash")
    # Without a turn to join, the result starts an assistant message of its own.
    assert driver.messages == [Message("assistant", tool_result_text("t", ok("bash")))]


@pytest.mark.parametrize("reason", ["", "plain reason"])
def test_blocked_tool_result_shape(reason: str) -> None:
    result = blocked_tool_result("bash", reason, "T")
    assert (result.tool_name, result.success, result.error, result.metadata, result.timestamp) == (
        "bash",
        False,
        reason,
        None,
        "T",
    )


# -- the async twin --------------------------------------------------------------


GUARD_EXE = """#!{python}
import json, sys
if sys.argv[1] == "hook":
    print("before_tool_call"); sys.exit(0)
command = json.load(sys.stdin)["tool_input"].get("command", "")
if "rm -rf" in command:
    print(json.dumps({{"blocked": True, "reason": "no rm -rf"}}))
"""


def test_arun_matches_run_with_an_executable_hook_and_async_callables(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "guard", GUARD_EXE.format(python=sys.executable))
    replies = [
        Reply(
            content="Cleaning.",
            tool_calls=[
                ToolCall(id="t1", name="bash", input={"command": "rm -rf /"}),
                ToolCall(id="t2", name="bash", input={"command": "ls"}),
            ],
        ),
        Reply(content="Done."),
    ]

    def sync_run() -> tuple[list[Message], list[str]]:
        rec = Recorder()
        with load_runtime(cwd=project, entry_points=False, plugins=[("rec", rec)]) as rt:
            driver = Driver(Session(rt), clock=lambda: "2025-01-01T00:00:00Z")
            driver.run("tidy up", step=script(*replies), run_tool=lambda n, i: ok(n))
        return driver.messages, rec.events()

    async def async_run() -> tuple[list[Message], list[str]]:
        rec = Recorder()
        ran: list[dict[str, Any]] = []
        queue = list(replies)

        async def step(messages: list[Message]) -> Reply:
            await asyncio.sleep(0)
            return queue.pop(0)

        async def run_tool(name: str, tool_input: dict[str, Any]) -> StructuredToolResult:
            ran.append(tool_input)
            return ok(name)

        with load_runtime(cwd=project, entry_points=False, plugins=[("rec", rec)]) as rt:
            driver = Driver(Session(rt), clock=lambda: "2025-01-01T00:00:00Z")
            outcome = await driver.arun("tidy up", step=step, run_tool=run_tool)
        assert outcome.stopped and outcome.turns == 2
        assert ran == [{"command": "ls"}]
        return driver.messages, rec.events()

    sync_messages, sync_events = sync_run()
    async_messages, async_events = asyncio.run(async_run())
    assert async_messages == sync_messages
    assert async_events == sync_events
    blocked = [m.content for m in sync_messages if "[tool_result bash t1 error]" in m.content]
    assert blocked and '"error": "no rm -rf"' in blocked[0]


# -- what a host hands the driver ----------------------------------------------------


def test_reply_usage_may_be_a_dict_like_session_accepts(tmp_path: Path) -> None:
    rec = Recorder()
    with make_runtime(tmp_path, rec) as rt:
        driver = Driver(Session(rt), max_context_window=1000)
        step = script(Reply(content="Hi.", usage={"input_tokens": 40, "output_tokens": 2}))
        assert driver.run("hello", step=step, run_tool=lambda n, i: ok(n)).stopped
        driver.begin_turn("again")
        driver.end_turn({"input_tokens": 50, "current_context_window": 60})
    usages = [fields[2] for event, fields in rec.seen if event == "after_turn"]
    assert usages == [
        UsageInfo(input_tokens=40, output_tokens=2, max_context_window=1000),
        UsageInfo(input_tokens=50, current_context_window=60, max_context_window=1000),
    ]
    with pytest.raises(ValueError, match=r"usage\.input_tokens"):
        Reply(usage={"input_tokens": "many"})


def test_run_tool_may_return_the_wire_dict(tmp_path: Path) -> None:
    rec = Recorder()
    with make_runtime(tmp_path, rec) as rt:
        driver = Driver(Session(rt))
        step = script(
            Reply(content="Listing.", tool_calls=[ToolCall(id="t1", name="bash", input={})]),
            Reply(content="Done."),
        )
        driver.run(
            "ls",
            step=step,
            run_tool=lambda n, i: {"toolName": n, "success": True, "metadata": {"output": "a"}},
        )
    outputs = [fields for event, fields in rec.seen if event == "after_tool_call"]
    assert outputs == [
        StructuredToolResult(tool_name="bash", success=True, metadata={"output": "a"})
    ]


def test_run_tool_returning_anything_else_is_a_type_error_naming_it(tmp_path: Path) -> None:
    def bad_tool(name: str, tool_input: dict[str, Any]) -> Any:
        return "a.py b.py"

    async def abad_tool(name: str, tool_input: dict[str, Any]) -> Any:
        return None

    def listing() -> Any:
        return script(
            Reply(content="Listing.", tool_calls=[ToolCall(id="t1", name="bash", input={})]),
            Reply(content="Done."),
        )

    with make_runtime(tmp_path) as rt:
        with pytest.raises(TypeError, match=r"run_tool\('bash', \.\.\.\) must return .*got str"):
            Driver(Session(rt)).run("ls", step=listing(), run_tool=bad_tool)
        with pytest.raises(TypeError, match=r"run_tool\('bash', \.\.\.\) must .*got NoneType"):
            asyncio.run(Driver(Session(rt)).arun("ls", step=listing(), run_tool=abad_tool))
        with pytest.raises(ValueError, match=r"run_tool\('bash', \.\.\.\) result.*success"):
            Driver(Session(rt)).run("ls", step=listing(), run_tool=lambda n, i: {"toolName": n})
        driver = Driver(Session(rt))
        with pytest.raises(TypeError, match="run must return"):
            driver.call_tool("bash", {}, "t1", run=lambda i: 42)  # type: ignore[arg-type,return-value]


def test_the_replay_docs_driver_snippet_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/REPLAY.md's agent-loop example, with stand-ins for the model, tools and store."""
    doc = (Path(__file__).parent.parent / "docs" / "REPLAY.md").read_text()
    section = doc[doc.index("## Using the driver in an agent loop") :]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]

    class Obj:
        def __init__(self, **kw: Any) -> None:
            self.__dict__.update(kw)

    call = Obj(id="toolu_1", name="bash", input={"command": "ls"})
    responses = [
        Obj(text="Listing.", usage={"input_tokens": 900, "output_tokens": 20}, calls=[call]),
        Obj(text="All green.", usage={"input_tokens": 950, "output_tokens": 5}, calls=[]),
    ]
    saved: list[Any] = []
    ran: list[tuple[str, dict[str, Any]]] = []

    def run(name: str, tool_input: dict[str, Any]) -> Obj:
        ran.append((name, tool_input))
        return Obj(ok=True, error=None, output="a.py")

    namespace: dict[str, Any] = {
        "model": Obj(complete=lambda messages: responses.pop(0)),
        "tools": Obj(run=run),
        "store": Obj(save=saved.append),
    }
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/REPLAY.md", "exec"), namespace)
    assert not responses and ran == [("bash", {"command": "ls"})]
    assert namespace["outcome"].stopped and namespace["outcome"].turns == 2
    messages = namespace["driver"].messages
    assert [m.role for m in messages] == ["user", "assistant", "assistant"]
    assert (
        '[tool_result bash toolu_1 ok] {"toolName": "bash", "success": true' in messages[1].content
    )
