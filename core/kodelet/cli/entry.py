"""The ``kodelet`` console script: Claude Code's hot path first, the CLI otherwise.

``kodelet claude hook`` runs on every tool call, so it is answered by the bridge
without importing the CLI framework; every other command goes to :mod:`.app`.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:3] == ["claude", "hook"]:
        from ..bridges.claude_code import main as claude_hook

        sys.exit(claude_hook(sys.argv[3:]))
    from .app import main as cli

    cli()
