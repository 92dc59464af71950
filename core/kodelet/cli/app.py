"""The ``kodelet`` command: a thin shell over the runtime."""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
from pathlib import Path
from typing import Any

import typer

from ..places import find_project
from . import (
    agents_cmd,
    audit_cmd,
    claude_cmd,
    claude_run_cmd,
    config_cmd,
    daemon_cmd,
    hooks_cmd,
    plugins_cmd,
    replay_cmd,
    rules_cmd,
    schema_cmd,
    verify_cmd,
)
from .common import State, fail, plain_help, setup_logging

app = typer.Typer(
    name="kodelet",
    help="Lifecycle hooks for AI coding agents: list, run and manage plugins and hooks.",
    no_args_is_help=True,
    add_completion=False,
    # Plain click help: typer's rich panels label every flag "<bool>" as if it took a value.
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"kodelet {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    cwd: Path = typer.Option(
        None,
        "--cwd",
        metavar="DIR",
        help="Project directory (default: the current directory).",
        file_okay=False,
        show_default=False,
    ),
    no_hooks: bool = typer.Option(
        False,
        "--no-hooks",
        help="Run no third-party or executable hook; built-ins stay.",
    ),
    version: bool = typer.Option(
        False,
        "--version",
        help="Show kodelet's version and exit.",
        is_eager=True,
        callback=_show_version,
    ),
) -> None:
    setup_logging()
    if cwd is not None and not cwd.is_dir():
        fail(f"--cwd {cwd}: not a directory", 2)
    # The project is found as git finds its root, so a subfolder sees its project's hooks.
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    ctx.obj = State(cwd=find_project(cwd or Path.cwd(), env), no_hooks=no_hooks)


app.add_typer(plugins_cmd.app, name="plugins")
app.add_typer(plugins_cmd.app, name="plugin", hidden=True)
schema_cmd.register(hooks_cmd.app)
app.add_typer(hooks_cmd.app, name="hooks")
app.add_typer(config_cmd.app, name="config")
claude_run_cmd.register(claude_cmd.app)
app.add_typer(claude_cmd.app, name="claude")
app.add_typer(daemon_cmd.app, name="daemon")
app.add_typer(rules_cmd.app, name="rules")
app.command("agents")(agents_cmd.agents)
for _name, _agent_app in agents_cmd.APPS.items():
    app.add_typer(_agent_app, name=_name)
app.command("replay")(replay_cmd.replay)
app.command("verify", help=verify_cmd.HELP)(verify_cmd.verify)
app.command("audit")(audit_cmd.audit)
plain_help(app)


def _click_exceptions() -> Any:
    """Typer vendors click from 0.29 on; older releases use click itself."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


def main() -> None:
    """Run the CLI; usage errors become one ``kodelet: error:`` line and exit 2."""
    click = _click_exceptions()
    try:
        code = app(standalone_mode=False)
    except click.NoArgsIsHelpError as exc:
        # The error already holds the help text; printing ctx.get_help() again
        # would show it twice wherever a formatter prints while building it.
        if text := exc.format_message():
            typer.echo(text)
        code = 0
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "kodelet"
        typer.echo(f"kodelet: error: {exc.format_message()} (see '{where} --help')", err=True)
        code = 2
    except click.ClickException as exc:
        typer.echo(f"kodelet: error: {exc.format_message()}", err=True)
        code = exc.exit_code
    except typer.Abort:
        typer.echo("kodelet: aborted", err=True)
        code = 130
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            raise
        _stdout_failed(exc)  # stdout full or closed (`> /dev/full`, `| head`)
        code = 1
    try:
        sys.stdout.flush()
    except OSError as exc:
        _stdout_failed(exc)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)


_OUTPUT_ERRNOS = (errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT)


def _stdout_failed(exc: OSError) -> None:
    """One line on stderr; stdout is then pointed at /dev/null so Python's own flush at
    exit cannot print a traceback about the same broken stream."""
    with contextlib.suppress(OSError):
        sys.stderr.write(f"kodelet: error: cannot write output: {exc.strerror or exc}\n")
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
