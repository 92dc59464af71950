"""Applying ``after_turn`` / ``agent_stop`` results to the host's conversation (ADR 025 §6).

The host owns the conversation; these helpers only call back into it. Every
failure (unknown callback, broken recipe, runner error, empty output, bad
mutate) leaves the conversation exactly as it was and comes back as
``Applied.warning``: a compaction that goes wrong must never lose the context
it was meant to shrink.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import attrs

from ..payloads import Message
from ..policy import valid_messages
from ..recipes.callbacks import CallbackRegistry, UnknownCallback
from ..recipes.loader import RecipeError
from ..recipes.runners import RunnerError, ToolCall
from ..results import AfterTurnResult, AgentStopResult

log = logging.getLogger("kodelet.apply")

MAX_CALLBACK_DEPTH = 3


@attrs.frozen(kw_only=True)
class Applied:
    """What a result did. ``action`` is what the result asked for; ``messages`` is
    what replaced the conversation, None when nothing did (including on failure)."""

    action: str  # "none" | "mutate" | "callback"
    messages: list[Message] | None = None
    follow_ups: list[str] = attrs.field(factory=list)
    warning: str | None = None


def _warn(action: str, text: str, follow_ups: list[str]) -> Applied:
    log.warning("%s", text)
    return Applied(action=action, follow_ups=follow_ups, warning=text)


def _replace(
    messages: list[Message],
    replace: Callable[[list[Message]], None],
    save: Callable[[], None] | None,
) -> None:
    replace(list(messages))
    if save is not None:
        save()


def _apply(
    result: AfterTurnResult | AgentStopResult,
    follow_ups: list[str],
    messages: Sequence[Message],
    replace_messages: Callable[[list[Message]], None],
    save_conversation: Callable[[], None] | None,
    registry: CallbackRegistry | None,
    depth: int,
    tool_calls: Sequence[ToolCall],
) -> Applied:
    if result.result == "mutate":
        problem = valid_messages(result.messages)
        if problem or result.messages is None:
            return _warn("mutate", f"mutate not applied: {problem}", follow_ups)
        _replace(result.messages, replace_messages, save_conversation)
        return Applied(action="mutate", messages=list(result.messages), follow_ups=follow_ups)

    if result.result != "callback":
        return Applied(action="none", follow_ups=follow_ups)

    name = result.callback
    if not name:
        return _warn("callback", "callback not run: no callback name", follow_ups)
    if registry is None:
        return _warn("callback", f"callback {name!r} not run: no callback registry", follow_ups)
    running = registry.running
    if max(depth, len(running)) >= MAX_CALLBACK_DEPTH:
        chain = " -> ".join([*running, name])
        return _warn(
            "callback",
            f"callback {name!r} not run: chain {chain} is deeper than {MAX_CALLBACK_DEPTH}",
            follow_ups,
        )
    try:
        done = registry.run(name, messages, result.callback_args, tool_calls=tool_calls)
    except (UnknownCallback, RecipeError, RunnerError) as exc:
        return _warn("callback", f"callback {name!r} not applied: {exc}", follow_ups)
    summary = done.messages
    _replace(summary, replace_messages, save_conversation)
    return Applied(action="callback", messages=summary, follow_ups=follow_ups)


def apply_after_turn(
    result: AfterTurnResult,
    *,
    messages: Sequence[Message],
    replace_messages: Callable[[list[Message]], None],
    save_conversation: Callable[[], None] | None = None,
    registry: CallbackRegistry | None = None,
    depth: int = 0,
    tool_calls: Sequence[ToolCall] = (),
) -> Applied:
    """Apply a merged ``after_turn`` result: replace (and save) on mutate or callback.

    ``depth`` is how many callbacks already run around this call, for hosts
    that nest agent loops without sharing one registry."""
    return _apply(
        result, [], messages, replace_messages, save_conversation, registry, depth, tool_calls
    )


def apply_agent_stop(
    result: AgentStopResult,
    *,
    messages: Sequence[Message],
    replace_messages: Callable[[list[Message]], None],
    save_conversation: Callable[[], None] | None = None,
    registry: CallbackRegistry | None = None,
    depth: int = 0,
    tool_calls: Sequence[ToolCall] = (),
) -> Applied:
    """Like :func:`apply_after_turn`, and hands back the follow-ups for the host to append."""
    follow_ups = list(result.follow_up_messages or [])
    return _apply(
        result,
        follow_ups,
        messages,
        replace_messages,
        save_conversation,
        registry,
        depth,
        tool_calls,
    )
