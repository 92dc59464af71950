"""kodelet: lifecycle hooks for AI coding agents.

Native plugins use ``from kodelet import hookimpl``; hosts build a
:class:`Runtime` and talk to it through a :class:`Session`.
"""

from __future__ import annotations

from .config import Config, ConfigError, HookSettings, load_config
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
from .runtime import HookEntry, Runtime
from .trace import Dispatch, Outcome, Source, TraceRecord
from .wire import WireError, payload_from_wire, payload_to_wire, result_from_wire, result_to_wire

__version__ = "0.1.0"

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
    "HookSettings",
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
    "parse_event",
    "payload_from_wire",
    "payload_to_wire",
    "result_from_wire",
    "result_to_wire",
]
