"""Attacks on the data path (issue 17, items 1, 9, 10, 20): payloads nested or sized to
break the converter, answers with duplicate keys, NaN or lone surrogates, and hooks
that edit what they were handed in place. Each test reproduces the attack first."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kodelet import jsonio, load_runtime
from kodelet.adapters.executable import HookFailure, parse_answer
from kodelet.bounds import (
    MAX_DEPTH,
    MAX_SIZE,
    BoundsError,
    bounded_copy,
    check_bounds,
    check_model,
)
from kodelet.events import Event
from kodelet.markers import hookimpl
from kodelet.payloads import (
    AfterToolCallPayload,
    BasePayload,
    BeforeToolCallPayload,
    StructuredToolResult,
    UserMessageSendPayload,
)
from kodelet.policy import AfterToolCallReducer, reducer_for
from kodelet.runtime import Runtime
from kodelet.testing import write_hook
from kodelet.trace import Dispatch, Outcome
from kodelet.wire import payload_from_wire


def nested(levels: int, leaf: Any = "rm -rf /") -> dict[str, Any]:
    """``{"a": {"a": ... leaf}}`` with ``levels`` dicts, built without recursion."""
    inner: Any = leaf
    for _ in range(levels):
        inner = {"a": inner}
    return inner  # type: ignore[no-any-return]


GUARD = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
touch "{ran}"
input=$(cat)
case "$input" in *"rm -rf"*) echo '{{"blocked": true, "reason": "no rm -rf"}}';; esac
"""


def guarded(project: Path, **kw: Any) -> tuple[Runtime, Path]:
    ran = project / "guard-ran"
    write_hook(project / ".kodelet" / "hooks", "guard", GUARD.format(ran=ran))
    return load_runtime(cwd=project, entry_points=False, builtins=False, timeout=10, **kw), ran


def fails_open(cwd: Path, name: str) -> None:
    """``fail_closed = false`` for hook ``name``: for tests of which hook a failure is
    charged to and what runs after it, which a fail-closed block would stop."""
    (cwd / ".kodelet").mkdir(exist_ok=True)
    (cwd / ".kodelet" / "config.toml").write_text(f'[hooks."{name}"]\nfail_closed = false\n')


def run(rt: Runtime, payload: BasePayload, mode: str) -> Dispatch:
    if mode == "sync":
        return rt.dispatch(payload)
    return asyncio.run(rt.adispatch(payload))


# -- item 1: depth and size, checked once, before any hook ---------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("levels", [400, 600, 5000])
def test_deep_tool_input_is_refused_before_any_hook_runs(
    project: Path, mode: str, levels: int
) -> None:
    """The attack: a tool_input nested past the recursion limit made every executable
    guardrail 'fail' without running, so `rm -rf /` went through."""
    rt, ran = guarded(project)
    payload = BeforeToolCallPayload(tool_name="bash", tool_input=nested(levels))
    with rt, pytest.raises(BoundsError) as info:
        run(rt, payload, mode)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert message.startswith("payload.tool_input.a.a")
    assert message.endswith(f"nested deeper than {MAX_DEPTH} levels")
    assert "\n" not in message and len(message) < 200
    assert not ran.exists()


def test_depth_limit_is_exact() -> None:
    """The payload is level 1 and tool_input level 2: 63 levels of tool_input fit."""
    fits = BeforeToolCallPayload(tool_name="bash", tool_input=nested(MAX_DEPTH - 1))
    assert check_bounds(fits) > 0
    with pytest.raises(BoundsError, match="nested deeper than 64"):
        check_bounds(BeforeToolCallPayload(tool_name="bash", tool_input=nested(MAX_DEPTH)))


def test_a_guardrail_still_runs_on_a_deep_but_legal_payload(project: Path) -> None:
    rt, ran = guarded(project)
    with rt:
        d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input=nested(60)))
    assert ran.exists() and d.result.blocked and d.result.reason == "no rm -rf"


def test_oversized_payload_is_refused(project: Path) -> None:
    rt, _ran = guarded(project)
    with rt, pytest.raises(BoundsError, match=r"payload\.message: a string over \d+ bytes"):
        rt.dispatch(UserMessageSendPayload(message="x" * (MAX_SIZE + 1)))
    wide = BeforeToolCallPayload(tool_name="bash", tool_input={"k": ["y" * 1000] * 20000})
    with pytest.raises(BoundsError, match=rf"payload\.tool_input\.k: larger than {MAX_SIZE}"):
        check_bounds(wide)


def test_a_deep_wire_payload_is_refused_with_a_value_error(project: Path) -> None:
    rt, ran = guarded(project)
    with rt, pytest.raises(ValueError, match="nested deeper than 64 levels"):
        rt.dispatch(
            payload_from_wire(Event.BEFORE_TOOL_CALL, {"tool_name": "x", "tool_input": nested(900)})
        )
    assert not ran.exists()


class DeepRewriter:
    """A native hook that rewrites tool_input into something 400 levels deep."""

    def __init__(self, value: Any) -> None:
        self.value = value

    @hookimpl(tryfirst=True)
    def before_tool_call(self) -> Any:
        return {"input": self.value}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_rewrite_over_the_bounds_is_the_rewriting_hooks_failure(project: Path, mode: str) -> None:
    """The attack: a native hook returned a 400-deep input; the next hook failed and
    the trace blamed it. Now the rewriter fails, and the guardrail after it runs on
    the original input."""
    fails_open(project, "deep")
    rt, ran = guarded(project, plugins=[("deep", DeepRewriter(nested(400)))])
    with rt:
        d = run(rt, BeforeToolCallPayload(tool_name="bash", tool_input={"c": "rm -rf /"}), mode)
    first, second = d.trace
    assert (first.name, first.outcome) == ("deep", Outcome.ERROR)
    assert first.error is not None and "nested deeper than 64 levels" in first.error
    assert first.error.startswith("result.input.a.a")
    assert (second.name, second.outcome) == ("guard", Outcome.BLOCKED)
    assert ran.exists() and d.result.blocked


def test_a_fail_closed_rewriter_over_the_bounds_blocks(project: Path) -> None:
    (project / ".kodelet" / "config.toml").write_text('[hooks."deep"]\nfail_closed = true\n')
    rt = load_runtime(
        cwd=project,
        entry_points=False,
        builtins=False,
        executables=False,
        plugins=[("deep", DeepRewriter(nested(400)))],
    )
    with rt:
        d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={"c": "ls"}))
    assert d.result.blocked and "hook deep failed (fail-closed)" in d.result.reason


def test_bounds_walk_never_recurses() -> None:
    """A million levels: the check answers at once, without RecursionError."""
    with pytest.raises(BoundsError, match="nested deeper than 64 levels"):
        check_bounds({"tool_input": nested(1_000_000)})
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(BoundsError, match="nested deeper than 64 levels"):
        check_bounds(loop)


def test_bounded_copy_is_deep_and_keeps_shapes() -> None:
    data = {"a": [1, (2, [3, {"b": None}]), "s"], "c": {"d": 1.5}, "é": "ü"}
    copy = bounded_copy(data)
    assert copy == data
    assert copy["a"] is not data["a"] and copy["a"][1][1] is not data["a"][1][1]
    assert isinstance(copy["a"][1], tuple)


# -- item 9: strings that cannot be encoded are the answering hook's failure ----------


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("\ud800", "lone surrogate \\ud800"),
        ("ok \udcff", "lone surrogate \\udcff"),
        (float("nan"), "nan, which is not a JSON number"),
        (float("inf"), "inf, which is not a JSON number"),
        (10**5000, "an integer over"),
        (object(), "a object, which is not JSON data"),
    ],
    ids=["surrogate", "low-surrogate", "nan", "inf", "huge-int", "object"],
)
def test_unencodable_values_are_refused_with_their_path(value: Any, why: str) -> None:
    with pytest.raises(BoundsError) as info:
        check_bounds({"tool_input": {"list": [0, {"k": value}]}})
    assert str(info.value).startswith("payload.tool_input.list[1].k: ")
    assert why in str(info.value)


class Answers:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    @hookimpl(tryfirst=True)
    def before_tool_call(self) -> Any:
        return self.answer


@pytest.mark.parametrize(
    "answer",
    [
        {"blocked": True, "reason": "bad \ud800"},
        {"input": {"command": "ls \udcff"}},
        {"input": {"n": float("nan")}},
    ],
)
def test_an_unencodable_native_answer_is_that_hooks_failure(project: Path, answer: Any) -> None:
    """The attack: a block reason with a lone surrogate crashed the CLI after the
    verdict; a rewrite containing \\udcff was charged to the next hook."""
    fails_open(project, "odd")
    rt, _ran = guarded(project, plugins=[("odd", Answers(answer))])
    with rt:
        d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={"c": "rm -rf /"}))
    first, second = d.trace
    assert (first.name, first.outcome) == ("odd", Outcome.ERROR)
    assert second.outcome is Outcome.BLOCKED
    merged = json.dumps(rt_wire(d), ensure_ascii=False, allow_nan=False)
    merged.encode("utf-8")


def rt_wire(d: Dispatch) -> dict[str, Any]:
    from kodelet.wire import result_to_wire

    return result_to_wire(d.event, d.result)


ECHO = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
cat >/dev/null
printf '%s\\n' '{answer}'
"""


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ('{"blocked": true, "reason": "\\ud800"}', "lone surrogate \\ud800"),
        ('{"input": {"c": "\\udcff"}}', "lone surrogate \\udcff"),
        ('{"blocked": true, "reason": "x", "blocked": false}', 'duplicate key "blocked"'),
        ('{"input": {"a": 1, "a": 2}}', 'duplicate key "a"'),
        ('{"input": {"n": NaN}}', "NaN is not a JSON number"),
        ('{"input": {"n": -Infinity}}', "-Infinity is not a JSON number"),
        ('{"input": {"n": 1e400}}', "inf, which is not a JSON number"),
        ("[" * 70 + "]" * 70, "nested deeper than 64 levels"),
        ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
    ],
)
def test_strict_answers_from_executables(project: Path, answer: str, why: str) -> None:
    """The attack: a naive guardrail echoing the command printed a second "blocked"
    key, and the last one won; NaN was accepted and re-emitted as non-JSON."""
    write_hook(project / ".kodelet" / "hooks", "echo", ECHO.format(answer=answer))
    (project / ".kodelet" / "config.toml").write_text('[hooks."echo"]\nfail_closed = true\n')
    with load_runtime(cwd=project, entry_points=False, builtins=False) as rt:
        d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={"c": "ls"}))
    (rec,) = d.trace
    assert rec.outcome is Outcome.ERROR and rec.error is not None
    assert why in rec.error and "\n" not in rec.error
    assert d.result.blocked and "failed (fail-closed)" in d.result.reason
    json.dumps(rt_wire(d), allow_nan=False).encode("utf-8")


def test_parse_answer_is_strict() -> None:
    with pytest.raises(HookFailure, match='duplicate key "blocked"'):
        parse_answer(b'{"blocked": true, "blocked": false}')
    with pytest.raises(HookFailure, match=r"output is not JSON \(Expecting value\): 'nope'"):
        parse_answer(b"nope")
    assert parse_answer(b'{"blocked": true, "reason": "\\u00e9"}') == {
        "blocked": True,
        "reason": "é",
    }


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"a": 1, "a": 1}', 'duplicate key "a"'),
        ("[NaN]", "NaN is not a JSON number"),
        ("[Infinity]", "Infinity is not a JSON number"),
        ("[1e999]", "inf, which is not a JSON number"),
        ('["\\udfff"]', "lone surrogate \\udfff"),
        ("1" * 5000, "is not JSON (Exceeds the limit"),
        ("{", "is not JSON (Expecting property name enclosed in double quotes)"),
        ("[" * 100_000, "nested deeper than 64 levels"),
    ],
)
def test_the_strict_loader(text: str, why: str) -> None:
    with pytest.raises(jsonio.JSONError) as info:
        jsonio.loads(text, "thing")
    assert why in str(info.value) and str(info.value).startswith("thing")
    with pytest.raises(jsonio.JSONError):
        jsonio.loads(text.encode(), "thing")


def test_the_strict_loader_rejects_invalid_utf8() -> None:
    with pytest.raises(jsonio.JSONError, match="thing is not UTF-8"):
        jsonio.loads(b'"\xed\xa0\x80"', "thing")


# -- item 20: hooks never edit the host's tool_output --------------------------------


class MetadataEditor:
    @hookimpl(tryfirst=True)
    def after_tool_call(self, tool_output: StructuredToolResult) -> None:
        assert tool_output.metadata is not None
        tool_output.metadata["edited"] = True
        tool_output.metadata["nested"]["x"] = 2


class MetadataReader:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    @hookimpl
    def after_tool_call(self, tool_output: StructuredToolResult) -> None:
        assert tool_output.metadata is not None
        self.seen.append(json.loads(json.dumps(tool_output.metadata)))


def after_payload() -> AfterToolCallPayload:
    output = StructuredToolResult(tool_name="bash", success=True, metadata={"nested": {"x": 1}})
    return AfterToolCallPayload(tool_name="bash", tool_output=output)


def test_reducer_hands_hooks_a_copy_of_tool_output() -> None:
    """Driven as the policy's contract says (hand each hook ``red.payload``), an
    in-place edit never reaches the host's object and counts as a rewrite."""
    payload = after_payload()
    red = reducer_for(payload)
    assert isinstance(red, AfterToolCallReducer)
    handed: AfterToolCallPayload = red.payload  # type: ignore[assignment]
    assert handed.tool_output.metadata == payload.tool_output.metadata
    assert handed.tool_output.metadata is not payload.tool_output.metadata
    assert handed.tool_output.metadata is not None
    handed.tool_output.metadata["nested"]["x"] = 2
    assert payload.tool_output.metadata == {"nested": {"x": 1}}
    merged = red.merged()
    assert merged.output is not None and merged.output.metadata == {"nested": {"x": 2}}


def test_in_place_metadata_edits_never_reach_the_hosts_object() -> None:
    """The attack: a native after_tool_call hook edited tool_output.metadata in place;
    the edit reached the host's own object while the trace said no-action."""
    payload = after_payload()
    rt = load_runtime(
        entry_points=False,
        builtins=False,
        executables=False,
        plugins=[("editor", MetadataEditor()), ("reader", MetadataReader())],
    )
    with rt:
        d = rt.dispatch(payload)
    assert payload.tool_output.metadata == {"nested": {"x": 1}}
    assert d.result.output is not None
    assert d.result.output.metadata == {"nested": {"x": 2}, "edited": True}
    # and the trace says which hook edited it
    outcomes = {r.name: r.outcome for r in d.trace}
    assert outcomes == {"editor": Outcome.MODIFIED, "reader": Outcome.NO_ACTION}


def test_an_async_hook_that_swallows_its_cancellation_is_still_timed_out(tmp_path: Path) -> None:
    """The attack: an async hook caught its CancelledError at the time limit and ran on;
    its late answer was traced as no-action, and a block from it would have counted."""
    import asyncio

    from kodelet import BeforeToolCallPayload, hookimpl
    from kodelet.testing import isolated_runtime

    class Stubborn:
        @hookimpl
        async def before_tool_call(self) -> Any:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                await asyncio.sleep(0.3)
            return {"blocked": True, "reason": "late"}

    fails_open(tmp_path, "stubborn")  # so a block could only come from its late answer
    with isolated_runtime(tmp_path, ("stubborn", Stubborn()), timeout=0.2) as rt:
        d = rt.dispatch(BeforeToolCallPayload(tool_name="bash"))
    (rec,) = d.trace
    assert rec.outcome.value == "error" and "ignored its cancellation" in (rec.error or "")
    assert d.result.blocked is False


def test_a_rewrite_whose_comparison_raises_is_its_hooks_failure(tmp_path: Path) -> None:
    """The attack: a native hook returned an ``input`` whose ``__eq__`` raises, which
    escaped the dispatch ("a dispatch never raises"); the next hook still runs."""
    from kodelet import BeforeToolCallPayload, hookimpl
    from kodelet.testing import isolated_runtime

    class Hostile(dict):  # type: ignore[type-arg]
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparing me")

        __hash__ = None  # type: ignore[assignment]

    class Rewriter:
        @hookimpl(tryfirst=True)
        def before_tool_call(self) -> Any:
            return {"input": Hostile(command="ls")}

    class Guard:
        @hookimpl
        def before_tool_call(self, tool_input: dict[str, Any]) -> Any:
            return {"blocked": True, "reason": f"seen {sorted(tool_input)}"}

    with isolated_runtime(tmp_path, ("guard", Guard()), ("rewriter", Rewriter())) as rt:
        d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={"command": "x"}))
    assert [r.name for r in d.trace] == ["rewriter", "guard"]
    assert d.result.blocked is True


def test_a_flat_rewritten_input_is_settled_on_the_quick_path_and_the_rest_walked() -> None:
    """An answer's optional dict (a rewritten ``input``, ``callback_args``) that is a
    flat map of ASCII strings is settled without the full walk (``check_model`` says
    True); anything else still gets the walk and its error names the path."""
    from kodelet.results import AgentStopResult, BeforeToolCallResult

    assert check_model(BeforeToolCallResult(input={"command": "ls -la"}), "result") is True
    assert check_model(BeforeToolCallResult(blocked=True, reason="no"), "result") is True
    assert check_model(AgentStopResult(callback_args={"a": "b"}), "result") is True
    assert check_model(BeforeToolCallResult(input={"a": {"b": "c"}}), "result") is False
    with pytest.raises(BoundsError, match=r"^result\.input: a key that is not a string"):
        check_model(BeforeToolCallResult(input={1: "x"}), "result")
    with pytest.raises(BoundsError, match=r"^result\.input\.x: .*lone surrogate"):
        check_model(BeforeToolCallResult(input={"x": "\ud800"}), "result")
