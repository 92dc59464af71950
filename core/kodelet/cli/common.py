"""What every command shares: global options, runtime construction, errors, JSON output."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import attrs
import typer
from typer.core import TyperCommand

from ..assembly import hooks_die_with_host, load_runtime
from ..config import ConfigError
from ..escaping import printable as printable  # re-exported: the CLI modules import it here
from ..listing import skipped_hooks
from ..runtime import Runtime


class PlainCommand(TyperCommand):
    """Values named as click names them: ``EVENT``, ``PACKAGE...``, ``--lang LANG``.

    Typer 0.29 writes a required argument as ``{event}`` and adds the Python type to
    every argument and option (``<list[str]>``, ``<float>``): the parser's words, not
    what to type. A value without a metavar of its own is named after its parameter."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.metavar is not None:
                continue
            name = str(param.name).upper()
            if param.param_type_name == "argument":
                name = name if param.required else f"[{name}]"
                param.metavar = name if param.nargs == 1 else f"{name}..."
            elif not getattr(param, "is_flag", False) and not getattr(param, "count", False):
                param.metavar = name

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(str(param.metavar))
            else:
                pieces += param.get_usage_pieces(ctx)
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        rows: dict[str, list[tuple[str, str]]] = {"argument": [], "option": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None or param.param_type_name not in rows:
                continue
            if param.param_type_name == "argument":
                record = (str(param.metavar), record[1])
            rows[param.param_type_name].append(record)
        for kind, title in (("argument", "Arguments"), ("option", "Options")):
            if rows[kind]:
                with formatter.section(title):
                    formatter.write_dl(rows[kind])


def plain_help(app: typer.Typer) -> None:
    """Every command of ``app`` and of its sub-apps gets :class:`PlainCommand`'s help."""
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):
            command.cls = PlainCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            plain_help(group.typer_instance)


@attrs.define
class State:
    """Global options, carried in ``typer.Context.obj``."""

    cwd: Path = attrs.field(factory=Path.cwd)
    no_hooks: bool = False


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    if not isinstance(obj, State):
        obj = State()
        ctx.find_root().obj = obj
    return obj


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr, no traceback, and the exit code the contract names."""
    typer.echo(f"kodelet: error: {printable(message)}", err=True)
    raise typer.Exit(code)


def make_runtime(ctx: typer.Context, *, warn_skipped: bool = False, **kwargs: Any) -> Runtime:
    """``warn_skipped`` for commands that run hooks: one line per hook that cannot run,
    with its fix, instead of the scattered warnings of discovery and loading."""
    st = state(ctx)
    quiet = listing_quietly() if warn_skipped else contextlib.nullcontext()
    try:
        with quiet:
            runtime = load_runtime(cwd=st.cwd, no_hooks=st.no_hooks or None, **kwargs)
    except ConfigError as exc:
        fail(str(exc), 2)
    ctx.with_resource(hooks_die_with_host(runtime))
    if warn_skipped:
        warn_skipped_hooks(runtime)
    return runtime


def warn_skipped_hooks(runtime: Runtime) -> None:
    """One stderr line per hook or plugin that cannot run, with the fix when one command
    does it; build the runtime under :func:`listing_quietly` so each is said once."""
    for hook in skipped_hooks(runtime):
        kind = "plugin" if hook["native"] else "hook"
        fix = f" (fix: {hook['fix']})" if hook["fix"] else ""
        typer.echo(
            f"kodelet: warning: {kind} {hook['name']} skipped: {hook['reason']}{fix}", err=True
        )


def print_json(data: Any, *, one_line: bool = False) -> None:
    """Documents (lists, reports, schemas) indented for reading; ``one_line`` for an
    answer a script compares or greps, printed the same on a terminal and in a pipe."""
    indent = None if one_line else 2
    sys.stdout.write(json.dumps(data, indent=indent, ensure_ascii=False) + "\n")


def render_table(headers: list[str], rows: list[list[str]], indent: str = "") -> str:
    """Columns as the seeds print them: a header, a dashed rule, two spaces between columns.
    Every cell is :func:`printable`: a table is always one line per row."""
    rows = [[printable(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    lines = [headers, ["-" * len(h) for h in headers], *rows]
    return "\n".join(
        indent + "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def setup_logging() -> None:
    name = os.environ.get("KODELET_LOG_LEVEL", "warning").strip().upper() or "WARNING"
    level = logging.getLevelNamesMapping().get(name)
    if level is None:
        typer.echo(
            f"kodelet: warning: KODELET_LOG_LEVEL={name.lower()!r} is not a level "
            "(debug, info, warning, error); using warning",
            err=True,
        )
        level = logging.WARNING
    logging.basicConfig(
        level=level,
        format="kodelet: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )


class _DropWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno != logging.WARNING


@contextlib.contextmanager
def listing_quietly() -> Iterator[None]:
    """Mute the warnings a skipped hook or a broken plugin logs while it is found.

    A real run needs them, nothing else would tell the user; a listing shows
    each one with its reason, and saying it twice is noise. Debug lines
    (``KODELET_LOG_LEVEL=debug``) still come through.
    """
    drop = _DropWarnings()
    loggers = [logging.getLogger(name) for name in ("kodelet.discovery", "kodelet.loading")]
    for logger in loggers:
        logger.addFilter(drop)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(drop)
