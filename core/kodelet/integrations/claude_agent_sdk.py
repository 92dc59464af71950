"""``kodelet.integrations.claude_agent_sdk.hooks()``: where the docs have always pointed.

The integration itself lives with every other agent, in :mod:`kodelet.agents.agent_sdk`;
this name stays so that hosts written against it keep working.
"""

from __future__ import annotations

from ..agents.agent_sdk import Matcher, hooks

__all__ = ["Matcher", "hooks"]
