"""The ``kodelet`` command: a thin shell over the runtime."""

from __future__ import annotations

from pathlib import Path

import typer

from . import config_cmd, hooks_cmd, plugins_cmd, replay_cmd
from .common import State, fail, setup_logging

app = typer.Typer(
    name="kodelet",
    help="Lifecycle hooks for AI coding agents: list, run and manage plugins and hooks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def main_options(
    ctx: typer.Context,
    cwd: Path = typer.Option(
        None, "--cwd", help="Project directory (default: the current directory).",
        file_okay=False, show_default=False,
    ),
    no_hooks: bool = typer.Option(
        False, "--no-hooks", help="Run no third-party or executable hook; built-ins stay.",
    ),
) -> None:
    setup_logging()
    if cwd is not None and not cwd.is_dir():
        fail(f"--cwd {cwd}: not a directory", 2)
    ctx.obj = State(cwd=(cwd or Path.cwd()).absolute(), no_hooks=no_hooks)


app.add_typer(plugins_cmd.app, name="plugins")
app.add_typer(plugins_cmd.app, name="plugin", hidden=True)
app.add_typer(hooks_cmd.app, name="hooks")
app.add_typer(config_cmd.app, name="config")
app.command("replay")(replay_cmd.replay)


def main() -> None:
    app()
