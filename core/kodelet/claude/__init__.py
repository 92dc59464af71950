"""Claude Code / Agent SDK hooks, runnable on their own.

A :class:`Runner` fires the 16 Claude hook events at :class:`HookMatcher` groups of
Python callbacks and :class:`CommandHook` shell commands and returns one
:class:`HookResult` per hook that ran; :func:`merge` folds them into the answer
Claude Code would act on. :mod:`kodelet.claude.mapping` translates between these
events, tools and fields and kodelet's own. docs/CLAUDE.md is the guide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .command import CommandHook
    from .emission import HookMessage, HookProgress, HookResponse, HookStarted
    from .events import EVENTS, EventInfo, HookEvent, parse_hook_event
    from .mapping import (
        EVENT_MAP,
        TOOL_NAMES,
        TOOLS,
        claude_input,
        kodelet_payload,
        to_claude_event,
        to_claude_tool,
        to_kodelet_event,
        to_kodelet_result,
        to_kodelet_tool,
    )
    from .matchers import Matcher, MatcherError
    from .merge import merge
    from .results import HookResult, Outcome
    from .runner import DEFAULT_TIMEOUT, Hook, HookCallback, HookMatcher, Runner
    from .types import (
        INPUT_TYPES,
        AsyncOutput,
        HookDataError,
        HookInput,
        SyncOutput,
        input_from_wire,
        input_to_wire,
        output_from_wire,
        output_to_wire,
    )

# Imported on first use: ``kodelet claude hook`` needs the mapping table, not the
# asyncio runner behind it.
_EXPORTS = {
    "AsyncOutput": ".types",
    "CommandHook": ".command",
    "DEFAULT_TIMEOUT": ".runner",
    "EVENTS": ".events",
    "EVENT_MAP": ".mapping",
    "EventInfo": ".events",
    "Hook": ".runner",
    "HookCallback": ".runner",
    "HookDataError": ".types",
    "HookEvent": ".events",
    "HookInput": ".types",
    "HookMatcher": ".runner",
    "HookMessage": ".emission",
    "HookProgress": ".emission",
    "HookResponse": ".emission",
    "HookResult": ".results",
    "HookStarted": ".emission",
    "INPUT_TYPES": ".types",
    "Matcher": ".matchers",
    "MatcherError": ".matchers",
    "Outcome": ".results",
    "Runner": ".runner",
    "SyncOutput": ".types",
    "TOOLS": ".mapping",
    "TOOL_NAMES": ".mapping",
    "claude_input": ".mapping",
    "input_from_wire": ".types",
    "input_to_wire": ".types",
    "kodelet_payload": ".mapping",
    "merge": ".merge",
    "output_from_wire": ".types",
    "output_to_wire": ".types",
    "parse_hook_event": ".events",
    "to_claude_event": ".mapping",
    "to_claude_tool": ".mapping",
    "to_kodelet_event": ".mapping",
    "to_kodelet_result": ".mapping",
    "to_kodelet_tool": ".mapping",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "DEFAULT_TIMEOUT",
    "EVENTS",
    "EVENT_MAP",
    "INPUT_TYPES",
    "TOOLS",
    "TOOL_NAMES",
    "AsyncOutput",
    "CommandHook",
    "EventInfo",
    "Hook",
    "HookCallback",
    "HookDataError",
    "HookEvent",
    "HookInput",
    "HookMatcher",
    "HookMessage",
    "HookProgress",
    "HookResponse",
    "HookResult",
    "HookStarted",
    "Matcher",
    "MatcherError",
    "Outcome",
    "Runner",
    "SyncOutput",
    "claude_input",
    "input_from_wire",
    "input_to_wire",
    "kodelet_payload",
    "merge",
    "output_from_wire",
    "output_to_wire",
    "parse_hook_event",
    "to_claude_event",
    "to_claude_tool",
    "to_kodelet_event",
    "to_kodelet_result",
    "to_kodelet_tool",
]
