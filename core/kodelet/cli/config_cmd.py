"""`kodelet config` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="Manage config.", no_args_is_help=True)
