"""kodelet: lifecycle hooks for AI coding agents.

Native plugins use ``from kodelet import hookimpl``; hosts build a
:class:`Runtime` and talk to it through a :class:`Session`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports
from .markers import VERSION

if TYPE_CHECKING:
    from .assembly import load_runtime
    from .config import Config, ConfigError, HookSettings, load_config
    from .errors import HookFailure, KodeletError
    from .events import Event, parse_event
    from .host.apply import Applied, apply_after_turn, apply_agent_stop
    from .host.session import Session
    from .markers import ENTRY_POINT_GROUP, hookimpl, hookspec
    from .payloads import (
        AfterToolCallPayload,
        AfterTurnPayload,
        AgentStopPayload,
        BasePayload,
        BeforeToolCallPayload,
        Message,
        StructuredToolResult,
        UsageInfo,
        UserMessageSendPayload,
    )
    from .recipes import (
        CallbackRegistry,
        ExtractiveRunner,
        LLMRunner,
        Recipe,
        RecipeError,
        RecipeLibrary,
        RunnerError,
        ToolCall,
    )
    from .results import (
        AfterToolCallResult,
        AfterTurnResult,
        AgentStopResult,
        BeforeToolCallResult,
        UserMessageSendResult,
    )
    from .runtime import Runtime
    from .seam import HookEntry
    from .trace import Dispatch, Outcome, Source, TraceRecord
    from .wire import (
        WireError,
        payload_from_wire,
        payload_to_wire,
        result_from_wire,
        result_to_wire,
    )

# Imported on first use, so an executable hook doing ``from kodelet import hookkit``
# (or a plugin importing ``hookimpl``) does not pay for the whole framework.
_EXPORTS = {
    "Config": ".config",
    "ConfigError": ".config",
    "HookSettings": ".config",
    "load_config": ".config",
    "Event": ".events",
    "parse_event": ".events",
    "Applied": ".host.apply",
    "apply_after_turn": ".host.apply",
    "apply_agent_stop": ".host.apply",
    "Session": ".host.session",
    "ENTRY_POINT_GROUP": ".markers",
    "hookimpl": ".markers",
    "hookspec": ".markers",
    "AfterToolCallPayload": ".payloads",
    "AfterTurnPayload": ".payloads",
    "AgentStopPayload": ".payloads",
    "BasePayload": ".payloads",
    "BeforeToolCallPayload": ".payloads",
    "Message": ".payloads",
    "StructuredToolResult": ".payloads",
    "UsageInfo": ".payloads",
    "UserMessageSendPayload": ".payloads",
    "CallbackRegistry": ".recipes",
    "ExtractiveRunner": ".recipes",
    "LLMRunner": ".recipes",
    "Recipe": ".recipes",
    "RecipeError": ".recipes",
    "RecipeLibrary": ".recipes",
    "RunnerError": ".recipes",
    "ToolCall": ".recipes",
    "AfterToolCallResult": ".results",
    "AfterTurnResult": ".results",
    "AgentStopResult": ".results",
    "BeforeToolCallResult": ".results",
    "UserMessageSendResult": ".results",
    "load_runtime": ".assembly",
    "HookFailure": ".errors",
    "KodeletError": ".errors",
    "HookEntry": ".seam",
    "Runtime": ".runtime",
    "Dispatch": ".trace",
    "Outcome": ".trace",
    "Source": ".trace",
    "TraceRecord": ".trace",
    "WireError": ".wire",
    "payload_from_wire": ".wire",
    "payload_to_wire": ".wire",
    "result_from_wire": ".wire",
    "result_to_wire": ".wire",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


__version__ = VERSION
"""Written once, in the package's ``VERSION`` file, which pyproject.toml (``dynamic =
["version"]``) and the warm kodelet's standard-library protocol read too."""

__all__ = [
    "ENTRY_POINT_GROUP",
    "AfterToolCallPayload",
    "AfterToolCallResult",
    "AfterTurnPayload",
    "AfterTurnResult",
    "AgentStopPayload",
    "AgentStopResult",
    "Applied",
    "BasePayload",
    "BeforeToolCallPayload",
    "BeforeToolCallResult",
    "CallbackRegistry",
    "Config",
    "ConfigError",
    "Dispatch",
    "Event",
    "ExtractiveRunner",
    "HookEntry",
    "HookFailure",
    "HookSettings",
    "KodeletError",
    "LLMRunner",
    "Message",
    "Outcome",
    "Recipe",
    "RecipeError",
    "RecipeLibrary",
    "RunnerError",
    "Runtime",
    "Session",
    "Source",
    "StructuredToolResult",
    "ToolCall",
    "TraceRecord",
    "UsageInfo",
    "UserMessageSendPayload",
    "UserMessageSendResult",
    "WireError",
    "apply_after_turn",
    "apply_agent_stop",
    "hookimpl",
    "hookspec",
    "load_config",
    "load_runtime",
    "parse_event",
    "payload_from_wire",
    "payload_to_wire",
    "result_from_wire",
    "result_to_wire",
]
