"""The coding agents kodelet runs inside, each a :class:`~kodelet.agents.base.Dialect`.

``kodelet claude hook --agent NAME`` reads NAME's hook input through its dialect;
``kodelet NAME install`` writes the agent's hook entries; ``kodelet agents`` lists
them. Claude Code itself is not here: its dialect is kodelet's Claude bridge.
"""

from __future__ import annotations

from .base import Dialect
from .codex import CODEX
from .copilot import COPILOT
from .gemini import GEMINI
from .opencode import OPENCODE
from .qwen import QWEN

__all__ = ["DIALECTS", "Dialect", "dialect"]

DIALECTS: dict[str, Dialect] = {d.name: d for d in (CODEX, QWEN, GEMINI, COPILOT, OPENCODE)}
"""Agent name -> its dialect."""


def dialect(name: str) -> Dialect:
    """The dialect called ``name``; a :class:`LookupError` naming the known ones."""
    try:
        return DIALECTS[name]
    except KeyError:
        known = ", ".join(sorted(DIALECTS))
        raise LookupError(f"unknown agent {name!r} (known: {known})") from None
