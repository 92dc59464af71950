"""Agents' hook files, edited the one careful way: kodelet's entries in, kodelet's out.

Claude Code's settings files, Codex's ``hooks.json`` and Qwen Code's settings all hold
``{"hooks": {EVENT: [{"matcher": ..., "hooks": [ENTRY, ...]}]}}``. ``kodelet claude
install`` and ``kodelet AGENT install`` write them through here, so every agent gets
the same contract: every other key and hook stays, the previous file is kept as
``.bak`` and written atomically, installing twice changes nothing, uninstall puts the
file back as it was, ``--dry-run`` prints the diff, and a file that is a link, is owned
by another user or is not valid JSON is left untouched. kodelet's own entries are
those :func:`kodelet.claude.installed.is_own` recognises.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import shlex
import shutil
import stat
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import typer

from .. import jsonio
from ..adapters.claude_settings import SettingsFileError, read_settings_file
from ..claude.installed import is_own
from ..errors import KodeletError
from .common import fail

TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
"""Events whose groups get ``"matcher": "*"``: every tool."""


class SettingsError(KodeletError):
    """A settings file kodelet will not edit; the message says why and what to do."""


def command_problem(command: str) -> str | None:
    """Why an agent could not start ``command`` here, or None."""
    from ..claude.installed import unguarded

    try:
        program = shlex.split(unguarded(command))[0]
    except (ValueError, IndexError):
        return "not a command"
    if os.sep in program:
        found = program if os.access(program, os.X_OK) else None
    else:
        found = shutil.which(program)
    return None if found else f"{program!r} cannot be found (exit 127)"


def read_settings(
    path: Path, what: str = "settings", keys: Collection[str] = ()
) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when absent) and its JSON; a bad file is a
    :class:`SettingsError`. ``keys``: members of ``hooks`` that are settings of the
    agent's hooks rather than events."""
    try:
        text, data = read_settings_file(path, what)
    except SettingsFileError as exc:
        raise SettingsError(f"{path}: {exc}") from None
    if text is None:
        return None, {}
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(
        isinstance(v, list) for k, v in hooks.items() if k not in keys
    ):
        raise SettingsError(f"{path}: 'hooks' must map each event to a list")
    return text, data


def without_ours(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` minus kodelet's entries; groups and events left empty by that go too."""
    if "hooks" not in data:
        return dict(data)
    hooks: dict[str, Any] = {}
    for event, groups in data["hooks"].items():
        if not isinstance(groups, list):
            hooks[event] = groups
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(is_own(h) for h in inner):
                kept.append(group)
                continue
            rest = [h for h in inner if not is_own(h)]
            if rest:
                kept.append({**group, "hooks": rest})
        if kept or not groups:
            hooks[event] = kept
    out = dict(data)
    if hooks or not data["hooks"]:
        out["hooks"] = hooks
    else:
        del out["hooks"]
    return out


def with_ours(
    data: dict[str, Any], entries: Iterable[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    """``data`` with kodelet's ``entries`` (event, hook entry), each in a group of its
    own after the file's own groups, and no other entry of kodelet's."""
    out = without_ours(data)
    hooks = dict(out.get("hooks", {}))
    for event, hook in entries:
        group: dict[str, Any] = {"hooks": [hook]}
        if event in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        hooks[event] = [*hooks.get(event, []), group]
    out["hooks"] = hooks
    return out


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def diff(path: Path, old: str | None, new: str | None) -> str:
    """What ``--dry-run`` prints: the unified diff of ``path`` from ``old`` to ``new``
    (None: the file absent before, or removed after)."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=str(path) if old is not None else "/dev/null",
        tofile=str(path) if new is not None else "/dev/null",
    )
    return "".join(lines).rstrip("\n")


def read_text(path: Path, what: str) -> str | None:
    """The UTF-8 text of ``path``, None when it is absent; a file that cannot be read is
    a :class:`SettingsError`."""
    try:
        return jsonio.read_file(path, what).decode("utf-8")
    except FileNotFoundError:
        return None
    except (jsonio.FileError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {exc}") from None


def write_settings(
    path: Path, old: str | None, before: dict[str, Any], data: dict[str, Any], dry_run: bool
) -> str:
    """Write ``data`` atomically, the previous file kept as ``<name>.bak``; a message.
    ``old`` is the file's text (None when absent), ``before`` what it held."""
    new = render(data)
    if old is not None and before == data:
        return f"unchanged: {path}"
    if dry_run:
        return diff(path, old, new)
    if old is not None:
        # Written like the settings themselves: a link planted at the backup's name is
        # replaced, never followed.
        jsonio.write_atomically(path.with_name(path.name + ".bak"), old)
    jsonio.write_atomically(path, new, expect=old)
    return f"wrote {path}" + ("" if old is None else f" (previous file: {path.name}.bak)")


def write_without_ours(
    path: Path, old: str, before: dict[str, Any], dry_run: bool, keys: Collection[str] = ()
) -> str:
    """Uninstall: the settings as they were before install. A file left holding nothing
    is removed rather than left as ``{}``; install's ``.bak`` goes once the file holds
    everything it held (its own bytes put back when they are the same settings). A
    backup holding anything more stays."""
    new = without_ours(before)
    bak = path.with_name(path.name + ".bak")
    kept: str | None = None
    kept_data: dict[str, Any] = {}
    with contextlib.suppress(SettingsError):
        check_writable(bak)
        kept, kept_data = read_settings(bak, keys=keys)
    needless = kept is not None and without_ours(kept_data) == new
    if before == new or (new and not needless):
        return write_settings(path, old, before, new, dry_run)
    text = render(new) if new else ""
    if new and kept is not None and kept_data == new:
        text = kept
    if dry_run:
        return diff(path, old, text if new else None)
    if new:
        jsonio.write_atomically(path, text, expect=old)
    else:
        jsonio.remove_unchanged(path, old)
    if needless:
        bak.unlink()
    if not new:
        return f"removed {path}: it held only kodelet's entries"
    return f"wrote {path} (as it was before install; {bak.name} removed)"


def begin_change(
    ctx: typer.Context,
    path: Path,
    install: bool,
    what: str = "settings",
    keys: Collection[str] = (),
) -> tuple[str | None, dict[str, Any]] | None:
    """(text, data) of the hook file an install or uninstall is about to change, its
    folder locked for the rest of the command so kodelet's edits never interleave; None
    (said on stdout) when there is nothing to uninstall. A file kodelet must not write
    ends the command with the reason."""
    ctx.with_resource(jsonio.editing(path.parent))
    try:
        check_writable(path)
        old, data = read_settings(path, what, keys)
    except SettingsError as exc:
        fail(str(exc), 1)
    if not install and old is None:
        typer.echo(f"not installed: {path} does not exist")
        return None
    return old, data


def check_writable(path: Path) -> None:
    """Refuse a settings file kodelet must not write: a link (its text would be copied
    into the checkout, or written through it), a file or folder another user owns."""
    for p in (path.parent, path):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise SettingsError(f"{p} is a symbolic link; kodelet writes no settings through one")
        if st.st_uid != os.geteuid():
            raise SettingsError(f"{p} is owned by uid {st.st_uid}, not by you; left unchanged")
