"""A generated plugin file, installed the careful way: opencode's ``kodelet.js``.

An agent with no hook settings (opencode) gets kodelet as a file of its own rather
than entries in a shared file, with the contract of :mod:`.hook_files`: written
atomically, installing twice changes nothing, ``--dry-run`` prints the diff, never
written through a link or into a file someone else owns, and uninstall removes only a
file kodelet wrote (its first line is the dialect's marker) and the folders install
left empty. A file of the same name that is not kodelet's is never replaced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .. import jsonio
from .hook_files import SettingsError, check_writable, command_problem, diff, read_text

COMMAND_LINE = "const COMMAND = "


@runtime_checkable
class GeneratesPlugin(Protocol):
    """A dialect whose agent runs kodelet from a generated file (opencode's)."""

    marker: str

    def plugin_source(self, command: str) -> str: ...

    def hook_events(self) -> list[str]: ...


def read_plugin(path: Path) -> str | None:
    """The file's text, None when absent; a link, a file another user owns, or one that
    cannot be read is a :class:`SettingsError`."""
    check_writable(path)
    return read_text(path, "plugin file")


def plugin_command(text: str) -> str | None:
    """The command a generated plugin runs, as written in it."""
    for line in text.splitlines():
        if line.startswith(COMMAND_LINE):
            try:
                command = json.loads(line[len(COMMAND_LINE) :].rstrip(";"))
            except ValueError:
                return None
            return command if isinstance(command, str) else None
    return None


def _not_ours(path: Path, marker: str) -> SettingsError:
    return SettingsError(
        f"{path} exists and was not written by kodelet (its first line is not {marker!r});"
        " left unchanged"
    )


def write_plugin(path: Path, text: str, marker: str, dry_run: bool) -> str:
    """Install: ``path`` holds ``text``; a message (the diff with ``dry_run``)."""
    old = read_plugin(path)
    if old is not None and not old.startswith(marker):
        raise _not_ours(path, marker)
    if old == text:
        return f"unchanged: {path}"
    if dry_run:
        return diff(path, old, text)
    jsonio.write_atomically(path, text)
    return f"wrote {path}"


def remove_plugin(path: Path, marker: str, dry_run: bool, stop: Path) -> str:
    """Uninstall: ``path`` gone if kodelet wrote it, and the folders under ``stop`` that
    this leaves empty."""
    old = read_plugin(path)
    if old is None:
        return f"not installed: {path} does not exist"
    if not old.startswith(marker):
        raise _not_ours(path, marker)
    if dry_run:
        return diff(path, old, None)
    path.unlink()
    folder = path.parent
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty: someone else's files are in it
            break
        folder = folder.parent
    return f"removed {path}"


def installed_command(path: Path, marker: str) -> tuple[str | None, str | None]:
    """(the command kodelet's plugin at ``path`` runs, or None; the problem reading it)."""
    try:
        text = read_plugin(path)
    except SettingsError as exc:
        return None, str(exc)
    if text is None:
        return None, None
    if not text.startswith(marker):
        return None, f"{path} is not kodelet's plugin"
    command = plugin_command(text)
    return command, None if command else f"{path}: no command found in kodelet's plugin"


def change_plugin(
    dialect: GeneratesPlugin, path: Path, command: str, stop: Path, dry_run: bool, install: bool
) -> str:
    """``kodelet NAME install|uninstall`` for an agent of generated plugins."""
    if install:
        return write_plugin(path, dialect.plugin_source(command), dialect.marker, dry_run)
    return remove_plugin(path, dialect.marker, dry_run, stop)


def plugin_state(dialect: GeneratesPlugin, path: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` (a scope of ``kodelet NAME status``) filled in from the plugin file."""
    command, entry["error"] = installed_command(path, dialect.marker)
    entry["events"] = dialect.hook_events() if command else []
    entry["commands"] = [command] if command else []
    entry["command_problems"] = [
        f"{c}: {why}" for c in entry["commands"] if (why := command_problem(c))
    ]
    return entry
