"""kodelet's hooks for the Claude Agent SDK: ``ClaudeAgentOptions(hooks=hooks())``.

Each Claude event kodelet has a counterpart for gets one matcher whose async
callback builds the kodelet payload from the SDK's hook input, dispatches it
through a kodelet runtime (native plugins, executables, plugin repositories,
built-ins, config and fail-closed, as ``kodelet claude hook`` does) and returns
the SDK's hook output dict, translated by the same code as the Claude Code bridge.

The SDK is optional (``pip install 'kodelet[claude-agent-sdk]'``): with it
installed the matchers are its own ``HookMatcher`` objects; without it they are
plain objects with the same three fields, which is all a test needs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from ..assembly import load_runtime
from ..runtime import Runtime
from . import DEFAULT
from .base import Answer
from .bridge import EVENTS, failure_answer, read_call

__all__ = ["Matcher", "hooks"]

Callback = Callable[[dict[str, Any], str | None, Any], Awaitable[dict[str, Any]]]


@attrs.define
class Matcher:
    """Stands in for ``claude_agent_sdk.HookMatcher`` when the SDK is not installed."""

    matcher: str | None = None
    hooks: list[Callback] = attrs.field(factory=list)
    timeout: float | None = None


AGENT = "claude-agent-sdk"
"""The agent the decision log names for calls through these hooks."""


def _matcher_class() -> Any:
    try:
        from claude_agent_sdk import HookMatcher
    except ImportError:
        return Matcher
    return HookMatcher


def hooks(runtime: Runtime | None = None, *, timeout: float | None = None) -> dict[str, list[Any]]:
    """The ``hooks`` mapping for ``ClaudeAgentOptions``.

    ``runtime`` is used for every call when given (and stays the caller's to close);
    otherwise each input's ``cwd`` gets a runtime from :func:`~kodelet.load_runtime`,
    built on first use and kept for the life of the mapping."""
    built: dict[str, Runtime] = {}

    def runtime_for(cwd: str) -> Runtime:
        if runtime is not None:
            return runtime
        if cwd not in built:
            built[cwd] = load_runtime(cwd=cwd, claude="plugins")  # the agent runs its own
        return built[cwd]

    async def callback(
        data: dict[str, Any], tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        # Never fail open: kodelet failing denies the tool call or prompt, as the bridge does.
        try:
            call = read_call(data)
            if call is None:
                return {}
            dispatch = await runtime_for(str(call.project)).adispatch(call.payload, agent=AGENT)
            return DEFAULT.say(Answer.of(call.hook_input, dispatch.result), data)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
            failed = failure_answer(data.get("hook_event_name"), problem)[0]
            return {} if failed is None else DEFAULT.say(failed, data)

    make = _matcher_class()
    return {name: [make(matcher=None, hooks=[callback], timeout=timeout)] for name in EVENTS}
