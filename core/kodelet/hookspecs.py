"""One hookspec per lifecycle event; argument names are the payload's wire fields.

An implementation takes only the arguments it needs, as with pytest and llm:
``def before_tool_call(tool_name, tool_input): ...``. It may return ``None``
(no action), the event's result object, or a dict in the wire format.
Hooks are never called through pluggy's own loop: the runtime walks them in
pluggy's call order and merges answers by the policy each docstring states.
"""

from __future__ import annotations

from typing import Any

from .markers import hookspec
from .payloads import Message, StructuredToolResult, UsageInfo
from .results import (
    AfterToolCallResult,
    AfterTurnResult,
    AgentStopResult,
    BeforeToolCallResult,
    UserMessageSendResult,
)


@hookspec
def configure(config: dict[str, Any]) -> None:
    """Called once per runtime, before any event, with this plugin's own
    ``[plugin.<entry-point name>]`` table from config.toml (``{}`` when absent).
    The core never validates its contents: that is the plugin's business."""


@hookspec
def before_tool_call(
    event: str,
    conv_id: str,
    cwd: str,
    invoked_by: str,
    recipe_name: str,
    tool_name: str,
    tool_input: dict[str, Any],
    tool_user_id: str,
    metadata: dict[str, Any] | None,
) -> BeforeToolCallResult | dict[str, Any] | None:
    """Before a tool runs. Return ``blocked=True`` (with a ``reason``) to stop it,
    ``ask=True`` (with a ``reason``) to have the user approve it, or ``input`` to rewrite
    its arguments.

    Merge: hooks run in call order, each seeing ``tool_input`` as rewritten by the
    hooks before it; the first block stops the chain and no later hook runs. An ask
    does not stop the chain: a later block wins over it, and the merged result asks
    (and is ``blocked`` for hosts that cannot ask) with the first asking hook's reason."""


@hookspec
def after_tool_call(
    event: str,
    conv_id: str,
    cwd: str,
    invoked_by: str,
    recipe_name: str,
    tool_name: str,
    tool_input: dict[str, Any],
    tool_output: StructuredToolResult,
    tool_user_id: str,
) -> AfterToolCallResult | dict[str, Any] | None:
    """After a tool ran. Return ``output`` to replace its result.

    Merge: chained on ``tool_output``; each hook sees the output as rewritten by
    the hooks before it."""


@hookspec
def user_message_send(
    event: str,
    conv_id: str,
    cwd: str,
    invoked_by: str,
    recipe_name: str,
    message: str,
) -> UserMessageSendResult | dict[str, Any] | None:
    """When the user sends a message. Return ``blocked=True`` with a ``reason`` to
    refuse it.

    Merge: deny-fast; the first block is the answer and no later hook runs."""


@hookspec
def after_turn(
    event: str,
    conv_id: str,
    cwd: str,
    invoked_by: str,
    recipe_name: str,
    turn_number: int,
    tools_used: bool,
    usage: UsageInfo,
    auto_compact_enabled: bool,
    auto_compact_threshold: float | None,
    messages: list[Message] | None,
    response: str | None,
) -> AfterTurnResult | dict[str, Any] | None:
    """After every model turn. Return ``result="mutate"`` with ``messages`` to
    replace the conversation, or ``result="callback"`` with a recipe name in
    ``callback`` (e.g. ``"compact"``).

    Merge: every hook runs; the first mutate or callback wins and later
    conflicting actions are logged as conflicts."""


@hookspec
def agent_stop(
    event: str,
    conv_id: str,
    cwd: str,
    invoked_by: str,
    recipe_name: str,
    messages: list[Message],
    usage: UsageInfo,
    invoked_recipe: str,
    auto_compact_enabled: bool,
    auto_compact_threshold: float | None,
) -> AgentStopResult | dict[str, Any] | None:
    """When the agent would stop. Return ``follow_up_messages`` to keep it going,
    or a mutate / callback as for ``after_turn``.

    Merge: every hook runs; follow-up messages accumulate in call order; the
    first mutate or callback wins."""
