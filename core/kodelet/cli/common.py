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

from ..assembly import hooks_die_with_host, load_runtime
from ..config import ConfigError
from ..escaping import printable as printable  # re-exported: the CLI modules import it here
from ..listing import skipped_hooks
from ..runtime import Runtime


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
