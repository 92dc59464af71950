"""The ``kodelet`` console script: Claude Code's hot path first, the CLI otherwise.

``kodelet claude hook`` runs on every tool call, so it goes to the warm kodelet's
lean client (which answers in-process when no warm kodelet can) without importing
the CLI framework; every other command goes to :mod:`.app`.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:3] == ["claude", "hook"]:
        from ..warm.client import main as claude_hook  # the warm kodelet, else in-process

        sys.exit(claude_hook(sys.argv[3:]))
    from .app import main as cli

    cli()
