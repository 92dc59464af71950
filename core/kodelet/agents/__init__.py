"""The coding agents kodelet runs inside, each a :class:`~kodelet.agents.base.Dialect`.

``kodelet claude hook --agent NAME`` reads NAME's hook input through its dialect;
``kodelet NAME install`` writes the agent's hook entries; ``kodelet agents`` lists
them. Claude Code is a row like the others; its tables are the identity, since every
other dialect is said in its words (:mod:`.base`). The bridge every agent's hook command
reaches is :mod:`.bridge`; the Claude Agent SDK's hooks are :mod:`.agent_sdk`.
"""

from __future__ import annotations

from .base import Dialect
from .claude import CLAUDE
from .codex import CODEX
from .copilot import COPILOT
from .gemini import GEMINI
from .opencode import OPENCODE
from .qwen import QWEN

__all__ = ["DEFAULT", "DIALECTS", "Dialect", "dialect"]

DIALECTS: dict[str, Dialect] = {d.name: d for d in (CLAUDE, CODEX, QWEN, GEMINI, COPILOT, OPENCODE)}
"""Agent name -> its dialect."""
DEFAULT: Dialect = CLAUDE
"""The dialect of ``kodelet claude hook`` without ``--agent``."""


def dialect(name: str) -> Dialect:
    """The dialect called ``name``; a :class:`LookupError` naming the known ones."""
    try:
        return DIALECTS[name]
    except KeyError:
        known = ", ".join(sorted(DIALECTS))
        raise LookupError(f"unknown agent {name!r} (known: {known})") from None
