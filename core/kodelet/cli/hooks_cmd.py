"""`kodelet hooks` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="Manage hooks.", no_args_is_help=True)
