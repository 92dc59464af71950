"""`kodelet plugins` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="Manage plugins.", no_args_is_help=True)
