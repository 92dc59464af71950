"""kodelet: lifecycle hooks for AI coding agents.

Native plugins use ``from kodelet import hookimpl``; hosts build a
:class:`Runtime` and talk to it through a :class:`Session`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports
from .version import VERSION

if TYPE_CHECKING:  # the same names, for type checkers (a test holds the two equal)
    from .assembly import load_runtime as load_runtime
    from .config import Config as Config
    from .config import ConfigError as ConfigError
    from .config import HookSettings as HookSettings
    from .config import load_config as load_config
    from .errors import HookFailure as HookFailure
    from .errors import KodeletError as KodeletError
    from .events import Event as Event
    from .events import parse_event as parse_event
    from .host.apply import Applied as Applied
    from .host.apply import apply_after_turn as apply_after_turn
    from .host.apply import apply_agent_stop as apply_agent_stop
    from .host.session import Session as Session
    from .markers import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from .markers import hookimpl as hookimpl
    from .markers import hookspec as hookspec
    from .payloads import AfterToolCallPayload as AfterToolCallPayload
    from .payloads import AfterTurnPayload as AfterTurnPayload
    from .payloads import AgentStopPayload as AgentStopPayload
    from .payloads import BasePayload as BasePayload
    from .payloads import BeforeToolCallPayload as BeforeToolCallPayload
    from .payloads import Message as Message
    from .payloads import StructuredToolResult as StructuredToolResult
    from .payloads import UsageInfo as UsageInfo
    from .payloads import UserMessageSendPayload as UserMessageSendPayload
    from .recipes import CallbackRegistry as CallbackRegistry
    from .recipes import ExtractiveRunner as ExtractiveRunner
    from .recipes import LLMRunner as LLMRunner
    from .recipes import Recipe as Recipe
    from .recipes import RecipeError as RecipeError
    from .recipes import RecipeLibrary as RecipeLibrary
    from .recipes import RunnerError as RunnerError
    from .recipes import ToolCall as ToolCall
    from .results import AfterToolCallResult as AfterToolCallResult
    from .results import AfterTurnResult as AfterTurnResult
    from .results import AgentStopResult as AgentStopResult
    from .results import BeforeToolCallResult as BeforeToolCallResult
    from .results import UserMessageSendResult as UserMessageSendResult
    from .runtime import Runtime as Runtime
    from .seam import HookEntry as HookEntry
    from .trace import Dispatch as Dispatch
    from .trace import Outcome as Outcome
    from .trace import Source as Source
    from .trace import TraceRecord as TraceRecord
    from .wire import WireError as WireError
    from .wire import payload_from_wire as payload_from_wire
    from .wire import payload_to_wire as payload_to_wire
    from .wire import result_from_wire as result_from_wire
    from .wire import result_to_wire as result_to_wire

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

__all__ = sorted(_EXPORTS)
