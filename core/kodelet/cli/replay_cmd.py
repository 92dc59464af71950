"""`kodelet replay`: run a recorded agent session through your hooks."""

from __future__ import annotations

import typer


def replay(ctx: typer.Context) -> None:
    """Replay a recorded session (not built yet)."""
    typer.echo("replay: not built yet", err=True)
    raise typer.Exit(1)
