"""`kodelet config` commands."""

from __future__ import annotations

import json
import os
from typing import Any

import typer

from ..adapters.discovery import scanned_names, unknown_names
from ..config import Config, ConfigError, load_config
from ..loading import entry_points
from ..places import Places
from .common import fail, print_json, printable, state

app = typer.Typer(help="Show the effective configuration.", no_args_is_help=True)


def _shown(value: Any) -> str:
    """Values as TOML would spell them, so users can paste them back into config.toml."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False)


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        metavar="SECONDS",
        help="Show the effect of a --timeout flag (seconds) on top of files and environment.",
        show_default=False,
    ),
) -> None:
    """Print every configuration value in effect and where it came from.

    Sources are a config.toml path, an environment variable, a command-line flag,
    or "default"."""
    st = state(ctx)
    places = Places.resolve(st.cwd, None, os.environ)
    try:
        config = load_config(places, os.environ, timeout=timeout, no_hooks=st.no_hooks or None)
    except ConfigError as exc:
        fail(str(exc), 2)
    data = config.to_json()
    _warn_unknown(places, config)
    if as_json:
        print_json(data)
        return
    rows = [
        (printable(key), printable(_shown(item["value"])), printable(item["source"]))
        for key, item in data.items()
    ]
    header = ("KEY", "VALUE", "SOURCE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(2)]
    for key, value, source in [header, *rows]:
        typer.echo(f"{key:<{widths[0]}}  {value:<{widths[1]}}  {source}".rstrip())
    for label, path in places.config_files():
        note = "" if path.is_file() else " (absent)"
        typer.echo(printable(f"# {label} file: {path}{note}"))


def _warn_unknown(places: Places, config: Config) -> None:
    """Name settings for hooks that do not exist: a typo there leaves a guardrail
    unconfigured. Found without running or importing anything."""
    known = scanned_names(places) | {ep.name for _, ep in entry_points()}
    for name in unknown_names(config, known):
        typer.echo(
            printable(
                f'kodelet: warning: config.toml names hook "{name}", but no hook or plugin '
                "has that name (a typo?)"
            ),
            err=True,
        )
