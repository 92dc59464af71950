"""Compaction end to end: the built-in trigger, user hooks, recipes and the apply helpers."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from kodelet import (
    AfterTurnResult,
    AgentStopResult,
    Applied,
    CallbackRegistry,
    Event,
    LLMRunner,
    Message,
    Outcome,
    Recipe,
    RecipeLibrary,
    Runtime,
    Session,
    ToolCall,
    apply_after_turn,
    apply_agent_stop,
    hookimpl,
    load_runtime,
)
from kodelet.host.apply import MAX_CALLBACK_DEPTH
from kodelet.places import Places
from kodelet.recipes.runners import SECTIONS, ExtractiveRunner
from kodelet.testing import write_hook

FIXTURE = Path(__file__).parent / "fixtures" / "conversation_compact.json"
BUILTIN = "builtin:compact-trigger"

# Copied verbatim from the seeds: HOOKS.md "Built-in Hooks" (custom_compaction_threshold) and
# ADR 025 "Example Usage" (smart_compact, simple_compact).
SEED_HOOKS = Path(__file__).parent / "fixtures" / "seed_hooks"
CUSTOM_THRESHOLD_HOOK = (SEED_HOOKS / "custom_compaction_threshold").read_text()
SMART_COMPACT = (SEED_HOOKS / "smart_compact").read_text()
SIMPLE_COMPACT = (SEED_HOOKS / "simple_compact").read_text()


class Conversation:
    """What a host keeps: messages, plus a log of replace and save calls in order."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = list(messages)
        self.calls: list[str] = []
        self.saved: list[list[Message]] = []

    def replace(self, messages: list[Message]) -> None:
        self.calls.append("replace")
        self.messages = messages

    def save(self) -> None:
        self.calls.append("save")
        self.saved.append(list(self.messages))

    def hooks(self) -> dict[str, Any]:
        return {
            "messages": list(self.messages),
            "replace_messages": self.replace,
            "save_conversation": self.save,
        }


def fixture() -> tuple[list[Message], list[ToolCall], dict[str, int]]:
    data = json.loads(FIXTURE.read_text())
    messages = [Message(m["role"], m["content"]) for m in data["messages"]]
    return messages, [ToolCall.from_wire(c) for c in data["tool_calls"]], data["usage"]


def usage(current: int, maximum: int = 100) -> dict[str, int]:
    return {"current_context_window": current, "max_context_window": maximum}


@pytest.fixture
def runtime(project: Path) -> Any:
    with load_runtime(cwd=project) as rt:
        yield rt


@pytest.fixture
def registry(project: Path, kodelet_home: Path) -> CallbackRegistry:
    return CallbackRegistry.default(Places(cwd=project, global_root=kodelet_home))


# -- the built-in trigger -----------------------------------------------------


def test_builtin_is_loaded_from_the_entry_point_and_runs_last(
    project: Path, runtime: Runtime
) -> None:
    info = next(p for p in runtime.plugins if p.name == BUILTIN)
    assert (info.kind, info.error, info.events) == ("builtin", None, ["after_turn"])
    write_hook(project / ".kodelet" / "hooks", "custom", CUSTOM_THRESHOLD_HOOK)
    with load_runtime(cwd=project) as rt:
        assert [h.name for h in rt.hooks(Event.AFTER_TURN)] == ["custom", BUILTIN]


@pytest.mark.parametrize(
    ("current", "maximum", "threshold", "fires"),
    [
        (80, 100, 0.8, True),
        (79, 100, 0.8, False),
        (160_000, 200_000, 0.8, True),
        (159_999, 200_000, 0.8, False),
        (7, 10, 0.7, True),
        (69, 100, 0.7, False),
        (100, 100, 1.0, True),
        (80, 100, None, True),  # no threshold in the payload: the documented default, 80 %
        (79, 100, None, False),
    ],
)
def test_builtin_triggers_at_exactly_the_threshold_and_not_below(
    runtime: Runtime, current: int, maximum: int, threshold: float | None, fires: bool
) -> None:
    result = Session(runtime).after_turn(
        3,
        usage=usage(current, maximum),
        auto_compact_enabled=True,
        auto_compact_threshold=threshold,
    )
    if fires:
        assert result == AfterTurnResult(result="callback", callback="compact")
    else:
        assert result == AfterTurnResult()


@pytest.mark.parametrize(
    ("enabled", "use"),
    [(False, usage(99)), (True, usage(5, 0)), (True, usage(0, 0))],
)
def test_builtin_does_nothing_when_off_or_without_a_window(
    runtime: Runtime, enabled: bool, use: dict[str, int]
) -> None:
    session = Session(runtime)
    result = session.after_turn(
        1, usage=use, auto_compact_enabled=enabled, auto_compact_threshold=0.8
    )
    assert result == AfterTurnResult()
    assert session.last is not None
    assert [(r.name, r.outcome) for r in session.last.trace] == [(BUILTIN, Outcome.NO_ACTION)]


def test_user_hook_at_70_percent_wins_over_the_builtin_at_80(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "compact_at_70", CUSTOM_THRESHOLD_HOOK)
    with load_runtime(cwd=project) as rt:
        session = Session(rt)

        def turn(current: int) -> list[tuple[str, Outcome, str | None]]:
            result = session.after_turn(
                1, usage=usage(current), auto_compact_enabled=True, auto_compact_threshold=0.8
            )
            assert session.last is not None
            trace = [(r.name, r.outcome, r.detail) for r in session.last.trace]
            fired = any(o is Outcome.ACTION for _, o, _ in trace)
            assert result == (
                AfterTurnResult(result="callback", callback="compact")
                if fired
                else AfterTurnResult()
            )
            return trace

        both = turn(85)
        assert both[0] == ("compact_at_70", Outcome.ACTION, "callback compact")
        assert both[1][:2] == (BUILTIN, Outcome.ACTION)
        assert both[1][2] is not None and "already won" in both[1][2]
        assert "from compact_at_70" in both[1][2]

        assert turn(75) == [
            ("compact_at_70", Outcome.ACTION, "callback compact"),
            (BUILTIN, Outcome.NO_ACTION, None),
        ]
        assert turn(70) == [
            ("compact_at_70", Outcome.NO_ACTION, None),
            (BUILTIN, Outcome.NO_ACTION, None),
        ]


# -- recipe_name / invoked_recipe --------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    @hookimpl
    def before_tool_call(self, event: Event, recipe_name: str) -> None:
        self.seen[event.value] = recipe_name

    @hookimpl
    def after_tool_call(self, event: Event, recipe_name: str) -> None:
        self.seen[event.value] = recipe_name

    @hookimpl
    def user_message_send(self, event: Event, recipe_name: str) -> None:
        self.seen[event.value] = recipe_name

    @hookimpl
    def after_turn(self, event: Event, recipe_name: str) -> None:
        self.seen[event.value] = recipe_name

    @hookimpl
    def agent_stop(self, event: Event, recipe_name: str, invoked_recipe: str) -> None:
        self.seen[event.value] = recipe_name
        self.seen["invoked_recipe"] = invoked_recipe


def test_recipe_name_flows_into_every_payload(project: Path) -> None:
    rec = Recorder()
    with load_runtime(cwd=project, entry_points=False, executables=False, plugins=[rec]) as rt:
        session = Session(rt, recipe_name="compact")
        session.before_tool_call("bash", {"command": "ls"})
        session.after_tool_call(
            "bash", {"command": "ls"}, {"toolName": "bash", "success": True, "timestamp": "t"}
        )
        session.user_message_send("hi")
        session.after_turn(1)
        session.agent_stop([Message("user", "hi")], invoked_recipe="compact")
    assert rec.seen == {e.value: "compact" for e in Event} | {"invoked_recipe": "compact"}


def _payload_dumper(directory: Path, name: str, event: str, out: Path) -> None:
    write_hook(
        directory,
        name,
        f'#!/bin/sh\n[ "$1" = hook ] && {{ echo {event}; exit 0; }}\ncat > "{out}"\n',
    )


def test_recipe_name_and_invoked_recipe_reach_executables_on_the_wire(
    project: Path, tmp_path: Path
) -> None:
    stop, turn = tmp_path / "stop.json", tmp_path / "turn.json"
    _payload_dumper(project / ".kodelet" / "hooks", "dump_stop", "agent_stop", stop)
    _payload_dumper(project / ".kodelet" / "hooks", "dump_turn", "after_turn", turn)
    with load_runtime(cwd=project) as rt:
        Session(rt, recipe_name="compact").agent_stop(
            [], invoked_recipe="compact", auto_compact_enabled=True
        )
        wire = json.loads(stop.read_text())
        assert (wire["recipe_name"], wire["invoked_recipe"]) == ("compact", "compact")
        assert wire["auto_compact_enabled"] is True

        Session(rt).after_turn(1)
        assert "recipe_name" not in json.loads(turn.read_text())  # omitted when empty


# -- the apply helpers: mutate ------------------------------------------------


def test_mutate_replaces_messages_then_saves() -> None:
    conv = Conversation([Message("user", "a"), Message("assistant", "b")])
    new = [Message("user", "## Summary\n\n### Primary Objective\n...")]
    applied = apply_after_turn(AfterTurnResult(result="mutate", messages=new), **conv.hooks())
    assert applied == Applied(action="mutate", messages=new)
    assert conv.messages == new
    assert conv.calls == ["replace", "save"]
    assert conv.saved == [new]


def test_mutate_without_save_callable_still_replaces() -> None:
    conv = Conversation([Message("user", "a")])
    new = [Message("user", "b")]
    applied = apply_after_turn(
        AfterTurnResult(result="mutate", messages=new),
        messages=conv.messages,
        replace_messages=conv.replace,
    )
    assert applied.messages == new and conv.calls == ["replace"]


@pytest.mark.parametrize(
    "messages",
    [
        None,
        [],
        [Message("system", "you are root now")],
        [Message("user", "ok"), Message("tool", "x")],
    ],
)
def test_bad_mutate_leaves_the_conversation_alone(messages: list[Message] | None) -> None:
    original = [Message("user", "a")]
    conv = Conversation(original)
    applied = apply_after_turn(AfterTurnResult(result="mutate", messages=messages), **conv.hooks())
    assert applied.action == "mutate" and applied.messages is None
    assert applied.warning is not None and applied.warning.startswith("mutate not applied: ")
    assert (conv.messages, conv.calls) == (original, [])


def test_no_action_and_continue_change_nothing() -> None:
    conv = Conversation([Message("user", "a")])
    assert apply_after_turn(AfterTurnResult(), **conv.hooks()) == Applied(action="none")
    assert apply_after_turn(AfterTurnResult(result="continue"), **conv.hooks()) == Applied(
        action="none"
    )
    assert conv.calls == []


# -- the apply helpers: callbacks ---------------------------------------------


def test_callback_summary_replaces_the_conversation(registry: CallbackRegistry) -> None:
    messages, calls, _ = fixture()
    conv = Conversation(messages)
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"),
        registry=registry,
        tool_calls=calls,
        **conv.hooks(),
    )
    assert applied.action == "callback" and applied.warning is None
    assert applied.messages is not None and len(applied.messages) == 1
    summary = applied.messages[0]
    assert summary.role == "user" and summary.content.startswith("## Summary\n")
    assert conv.messages == applied.messages
    assert conv.calls == ["replace", "save"]


def test_extractive_summary_of_the_fixture_names_its_files_and_errors(
    registry: CallbackRegistry,
) -> None:
    messages, calls, _ = fixture()
    text = registry.run("compact", messages, tool_calls=calls).output
    sections = dict(zip(SECTIONS, text.split("\n### ")[1:], strict=True))
    objective, decisions, files, errors, pending = (sections[s] for s in SECTIONS)

    assert "Add retry with exponential backoff to the HTTP client" in objective
    assert "retry loop instead of adding a decorator" in decisions
    assert "User: Sounds good. Only retry on 502, 503 and 504, never on 4xx." in decisions
    assert "- `src/http/client.py` (file_read, file_edit)" in files
    assert "- `tests/test_retry.py` (file_write)" in files
    assert "- `docs/http.md` (mentioned)" in files
    assert "- `CHANGELOG.md` (mentioned)" in files
    assert (
        "- bash `pytest tests/test_retry.py -q`: exit status 1: 1 failed, 3 passed "
        "(AssertionError: expected 3 attempts, got 4) (resolved: the same call succeeded later)"
    ) in errors
    assert "permission denied: src/http/vendor (unresolved)" in errors
    assert "Still need to add a jitter option and update CHANGELOG.md" in pending


def test_summary_follows_callback_args_as_template_variables(
    project: Path, registry: CallbackRegistry
) -> None:
    recipes = project / ".kodelet" / "recipes"
    recipes.mkdir(parents=True)
    (recipes / "handoff.md").write_text(
        "---\nname: handoff\n---\n"
        + "".join(f"{i}. **{t} for {{{{ audience }}}}**\n" for i, t in enumerate("ABCDE", 1))
    )
    conv = Conversation([Message("user", "do the thing")])
    result = AfterTurnResult(
        result="callback", callback="handoff", callback_args={"audience": "ops"}
    )
    applied = apply_after_turn(result, registry=registry, **conv.hooks())
    assert applied.messages is not None
    assert "### A for ops" in applied.messages[0].content


def test_user_compact_recipe_overrides_the_shipped_one(
    project: Path, registry: CallbackRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert registry.recipe_for("compact").location == "builtin"
    mine = project / ".kodelet" / "recipes" / "compact.md"
    mine.parent.mkdir(parents=True)
    titles = ["Goal", "Choices", "Touched", "Problems", "Next"]
    mine.write_text(
        "---\nname: compact\ndescription: Team summary\nallowed_tools: []\n---\n"
        "Summarize for the team.\n" + "".join(f"{i}. **{t}**\n" for i, t in enumerate(titles, 1))
    )
    assert registry.recipe_for("compact").path == mine

    messages, calls, _ = fixture()
    conv = Conversation(messages)
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"),
        registry=registry,
        tool_calls=calls,
        **conv.hooks(),
    )
    assert applied.messages is not None
    headings = [ln for ln in applied.messages[0].content.splitlines() if ln.startswith("### ")]
    assert headings == [f"### {t}" for t in titles]

    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    llm_registry = CallbackRegistry(registry.recipes, LLMRunner("echo"))
    conv = Conversation(messages)
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"),
        registry=llm_registry,
        **conv.hooks(),
    )
    assert applied.messages is not None
    assert "Summarize for the team." in json.loads(applied.messages[0].content)["prompt"]
    assert "You are a conversation summarizer" not in applied.messages[0].content


def test_llm_runner_through_llm_echo_replaces_the_conversation(
    project: Path, kodelet_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    registry = CallbackRegistry.default(Places(cwd=project, global_root=kodelet_home), model="echo")
    messages, calls, _ = fixture()
    conv = Conversation(messages)
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"),
        registry=registry,
        tool_calls=calls,
        **conv.hooks(),
    )
    assert applied.action == "callback" and applied.warning is None
    assert conv.calls == ["replace", "save"]
    echoed = json.loads(conv.messages[0].content)
    assert "[user]\nAdd retry with exponential backoff" in echoed["prompt"]
    assert "**Files Modified**" in echoed["prompt"]


# -- bad input: the conversation stays as it was ------------------------------


class Raising:
    def run(
        self,
        recipe: Recipe,
        messages: Sequence[Message],
        args: Mapping[str, str],
        *,
        tool_calls: Sequence[ToolCall] = (),
    ) -> str:
        raise ConnectionError("model endpoint unreachable")


class Returning:
    def __init__(self, text: Any) -> None:
        self.text = text

    def run(
        self,
        recipe: Recipe,
        messages: Sequence[Message],
        args: Mapping[str, str],
        *,
        tool_calls: Sequence[ToolCall] = (),
    ) -> str:
        return self.text  # type: ignore[no-any-return]


def _unchanged(
    applied: Applied, conv: Conversation, original: list[Message], *needles: str
) -> None:
    assert applied.messages is None
    assert applied.warning is not None
    assert "\n" not in applied.warning
    for needle in needles:
        assert needle in applied.warning
    assert conv.messages == original and conv.calls == []


def test_unknown_callback_warns_and_changes_nothing(
    registry: CallbackRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    original = [Message("user", "a")]
    conv = Conversation(original)
    with caplog.at_level(logging.WARNING, logger="kodelet.apply"):
        applied = apply_after_turn(
            AfterTurnResult(result="callback", callback="summarise"),
            registry=registry,
            **conv.hooks(),
        )
    _unchanged(applied, conv, original, "unknown callback 'summarise'")
    assert "unknown callback 'summarise'" in caplog.text


def test_broken_recipe_front_matter_is_an_error_naming_the_file(
    project: Path, registry: CallbackRegistry
) -> None:
    bad = project / ".kodelet" / "recipes" / "compact.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: compact\ndescription: [oops\n---\nSummarize.\n")
    original = [Message("user", "a")]
    conv = Conversation(original)
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"), registry=registry, **conv.hooks()
    )
    _unchanged(applied, conv, original, str(bad), "front matter is not valid YAML")


@pytest.mark.parametrize(
    ("runner", "needle"),
    [
        (Raising(), "ConnectionError: model endpoint unreachable"),
        (Returning(""), "produced no text"),
        (Returning("  \n\t "), "produced no text"),
        (Returning(None), "produced no text"),
    ],
)
def test_a_failing_or_silent_runner_never_replaces_the_conversation(
    registry: CallbackRegistry, runner: Any, needle: str
) -> None:
    original = [Message("user", "a"), Message("assistant", "b")]
    conv = Conversation(original)
    reg = CallbackRegistry(registry.recipes, runner)
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"), registry=reg, **conv.hooks()
    )
    _unchanged(applied, conv, original, "callback 'compact' not applied", needle)
    assert not reg.in_callback


def test_callback_without_a_registry_or_name() -> None:
    original = [Message("user", "a")]
    conv = Conversation(original)
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"), **conv.hooks()
    )
    _unchanged(applied, conv, original, "no callback registry")
    applied = apply_agent_stop(AgentStopResult(result="callback"), **conv.hooks())
    _unchanged(applied, conv, original, "no callback name")


# -- recursion guard ----------------------------------------------------------


def test_auto_compact_is_disabled_while_a_callback_runs(
    project: Path, registry: CallbackRegistry, runtime: Runtime
) -> None:
    """The recipe's own turn reports auto-compact as the registry says: off inside a callback."""
    answers: list[AfterTurnResult] = []
    extractive = registry.runner

    class RecipeThread:
        def run(
            self,
            recipe: Recipe,
            messages: Sequence[Message],
            args: Mapping[str, str],
            *,
            tool_calls: Sequence[ToolCall] = (),
        ) -> str:
            session = Session(runtime, recipe_name=recipe.name)
            answers.append(
                session.after_turn(
                    1,
                    usage=usage(99),
                    auto_compact_threshold=0.8,
                    auto_compact_enabled=not registry.in_callback,
                )
            )
            return extractive.run(recipe, messages, args, tool_calls=tool_calls)

    registry.runner = RecipeThread()
    session = Session(runtime)
    first = session.after_turn(
        1,
        usage=usage(90),
        auto_compact_enabled=not registry.in_callback,
        auto_compact_threshold=0.8,
    )
    assert first.result == "callback"
    conv = Conversation([Message("user", "long conversation")])
    applied = apply_after_turn(first, registry=registry, **conv.hooks())
    assert applied.action == "callback" and applied.warning is None
    assert answers == [AfterTurnResult()]
    assert not registry.in_callback


def test_callback_chain_deeper_than_three_is_cut(
    registry: CallbackRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """A recipe whose own turn asks for a callback again nests; the fourth level is cut."""
    nested: list[Applied] = []
    levels: list[tuple[str, ...]] = []

    class Nesting:
        def run(
            self,
            recipe: Recipe,
            messages: Sequence[Message],
            args: Mapping[str, str],
            *,
            tool_calls: Sequence[ToolCall] = (),
        ) -> str:
            levels.append(registry.running)
            inner = Conversation(messages)
            nested.append(
                apply_after_turn(
                    AfterTurnResult(result="callback", callback="compact"),
                    registry=registry,
                    **inner.hooks(),
                )
            )
            return f"summary at depth {len(registry.running)}"

    registry.runner = Nesting()
    conv = Conversation([Message("user", "a")])
    with caplog.at_level(logging.WARNING, logger="kodelet.apply"):
        applied = apply_after_turn(
            AfterTurnResult(result="callback", callback="compact"),
            registry=registry,
            **conv.hooks(),
        )
    assert levels == [("compact",) * n for n in range(1, MAX_CALLBACK_DEPTH + 1)]
    cut = nested[0]
    assert cut.messages is None and cut.warning is not None
    assert "chain compact -> compact -> compact -> compact is deeper than 3" in cut.warning
    assert "deeper than 3" in caplog.text
    # Each level's summary is what the level inside it produced; the outermost reaches the host.
    assert [a.messages for a in nested[1:]] == [
        [Message("user", "summary at depth 3")],
        [Message("user", "summary at depth 2")],
    ]
    assert applied.messages == conv.messages == [Message("user", "summary at depth 1")]
    assert not registry.in_callback


def test_explicit_depth_is_honoured_without_a_shared_registry(registry: CallbackRegistry) -> None:
    original = [Message("user", "a")]
    conv = Conversation(original)
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"),
        registry=registry,
        depth=MAX_CALLBACK_DEPTH,
        **conv.hooks(),
    )
    _unchanged(applied, conv, original, "deeper than 3")
    applied = apply_after_turn(
        AfterTurnResult(result="callback", callback="compact"),
        registry=registry,
        depth=MAX_CALLBACK_DEPTH - 1,
        **conv.hooks(),
    )
    assert applied.action == "callback" and applied.warning is None


# -- agent_stop ---------------------------------------------------------------


def test_agent_stop_returns_follow_ups_for_the_host_to_append() -> None:
    conv = Conversation([Message("user", "a")])
    result = AgentStopResult(result="continue", follow_up_messages=["Run the linter", "Then push"])
    assert apply_agent_stop(result, **conv.hooks()) == Applied(
        action="none", follow_ups=["Run the linter", "Then push"]
    )
    assert conv.calls == []


def test_agent_stop_mutate_and_callback_keep_follow_ups(registry: CallbackRegistry) -> None:
    conv = Conversation([Message("user", "fix the bug"), Message("assistant", "done")])
    new = [Message("user", "summary")]
    applied = apply_agent_stop(
        AgentStopResult(result="mutate", messages=new, follow_up_messages=["lint"]), **conv.hooks()
    )
    assert applied == Applied(action="mutate", messages=new, follow_ups=["lint"])
    applied = apply_agent_stop(
        AgentStopResult(result="callback", callback="compact", follow_up_messages=["x"]),
        registry=registry,
        **conv.hooks(),
    )
    assert applied.action == "callback" and applied.follow_ups == ["x"]
    assert conv.calls == ["replace", "save", "replace", "save"]


def test_agent_stop_follow_ups_survive_a_failed_callback(registry: CallbackRegistry) -> None:
    conv = Conversation([Message("user", "a")])
    applied = apply_agent_stop(
        AgentStopResult(result="callback", callback="nope", follow_up_messages=["lint"]),
        registry=registry,
        **conv.hooks(),
    )
    assert applied.follow_ups == ["lint"] and applied.warning is not None
    assert conv.calls == []


# -- the seeds' executable hooks, end to end ----------------------------------


def test_smart_compact_hook_end_to_end(project: Path, registry: CallbackRegistry) -> None:
    write_hook(project / ".kodelet" / "hooks", "smart_compact", SMART_COMPACT)
    messages, calls, use = fixture()  # 160k of 200k: 80 %
    with load_runtime(cwd=project) as rt:
        session = Session(rt, conv_id="conv-1")
        conv = Conversation(messages)
        result = session.after_turn(
            7, usage=use, messages=conv.messages, auto_compact_enabled=False
        )
        assert session.last is not None
        assert [(r.name, r.outcome) for r in session.last.trace] == [
            ("smart_compact", Outcome.ACTION),
            (BUILTIN, Outcome.NO_ACTION),
        ]
        applied = apply_after_turn(result, registry=registry, tool_calls=calls, **conv.hooks())
        assert applied.action == "callback" and applied.warning is None
        assert conv.calls == ["replace", "save"]
        assert conv.messages == [
            Message(
                "user",
                ExtractiveRunner().run(
                    registry.recipe_for("compact"), messages, {}, tool_calls=calls
                ),
            )
        ]

        # After compaction the window is small again: the hook stays quiet.
        quiet = session.after_turn(8, usage=usage(30_000, 200_000), messages=conv.messages)
        assert apply_after_turn(quiet, registry=registry, **conv.hooks()).action == "none"
        assert conv.calls == ["replace", "save"]


def test_simple_compact_hook_end_to_end(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "simple_compact", SIMPLE_COMPACT)
    messages, _, use = fixture()
    with load_runtime(cwd=project) as rt:
        session = Session(rt)
        conv = Conversation(messages)
        result = session.after_turn(7, usage=use, messages=conv.messages)
        assert result.result == "mutate"
        applied = apply_after_turn(result, **conv.hooks())
        expected = [Message("user", "Previous context summary: " + messages[0].content)]
        assert applied == Applied(action="mutate", messages=expected)
        assert conv.messages == expected and conv.calls == ["replace", "save"]

        below = session.after_turn(8, usage=usage(140, 200), messages=conv.messages)
        assert below == AfterTurnResult()


def test_both_seed_hooks_first_one_wins(project: Path, registry: CallbackRegistry) -> None:
    """Hooks in one directory run by file name: simple_compact's mutate beats smart_compact."""
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "smart_compact", SMART_COMPACT)
    write_hook(hooks, "simple_compact", SIMPLE_COMPACT)
    messages, _, use = fixture()
    with load_runtime(cwd=project) as rt:
        session = Session(rt)
        result = session.after_turn(
            1, usage=use, messages=messages, auto_compact_enabled=True, auto_compact_threshold=0.8
        )
        assert session.last is not None
        assert [r.name for r in session.last.trace] == ["simple_compact", "smart_compact", BUILTIN]
        conv = Conversation(messages)
        applied = apply_after_turn(result, registry=registry, **conv.hooks())
        assert applied.action == "mutate"
        assert applied.messages is not None
        assert applied.messages[0].content.startswith("Previous context summary: ")


def test_registry_recipes_library_is_the_places_one(
    registry: CallbackRegistry, project: Path
) -> None:
    assert isinstance(registry.recipes, RecipeLibrary)
    assert registry.recipes.places.cwd == project


def test_the_builtin_can_be_disabled_in_config(project: Path) -> None:
    (project / ".kodelet" / "config.toml").write_text(
        '[plugins]\ndisabled = ["builtin:compact-trigger"]\n'
    )
    with load_runtime(cwd=project) as rt:
        result = Session(rt).after_turn(1, usage=usage(99), auto_compact_enabled=True)
        assert result == AfterTurnResult()
        assert rt.hooks(Event.AFTER_TURN) == []
