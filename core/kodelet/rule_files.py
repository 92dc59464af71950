"""Where the rule files are, and whether each may be trusted (support layer).

Three places, strongest first: the machine's managed file (``$KODELET_MANAGED_DIR``,
else ``/etc/kodelet``), the user's (the global root) and the project's
(``<project>/.kodelet``), each ``rules.toml``. The rules engine gets text and the
tier; this module reads the disk, and refuses loudly what another user could have
written: a rules.toml that is a symlink or no regular file, that anyone may write,
or (user and project) that another user owns is *refused*, and the guard then blocks
every tool call naming the file and the fix. A guard file that cannot be read is
never silently skipped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

import attrs

from .places import Places

__all__ = ["MANAGED_DIR", "RULES_FILE", "Found", "find", "managed_dir", "path_for", "read"]

RULES_FILE = "rules.toml"
MANAGED_DIR = "/etc/kodelet"
MANAGED_ENV = "KODELET_MANAGED_DIR"
MAX_BYTES = 1024 * 1024


def managed_dir(env: Mapping[str, str]) -> Path:
    """The machine's managed folder: ``$KODELET_MANAGED_DIR`` (tests), else /etc/kodelet."""
    return Path(env.get(MANAGED_ENV) or MANAGED_DIR)


def path_for(tier: str, places: Places, env: Mapping[str, str]) -> Path:
    """The rules.toml of ``tier`` (managed, user or project)."""
    if tier == "managed":
        return managed_dir(env) / RULES_FILE
    if tier == "user":
        return places.global_root / RULES_FILE
    return places.local_root / RULES_FILE


@attrs.frozen
class Found:
    """A rule file that exists: its text, or why it is refused (with the fix)."""

    tier: str
    path: str
    text: str = ""
    problem: str = ""


def find(places: Places, env: Mapping[str, str]) -> list[Found]:
    """Every rule file there is for ``places``, strongest tier first."""
    out = []
    for tier in ("managed", "user", "project"):
        found = read(tier, path_for(tier, places, env))
        if found is not None:
            out.append(found)
    return out


def read(tier: str, path: Path) -> Found | None:
    """``path``'s text when it may be trusted; None when there is no file."""
    where = str(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Found(
            tier,
            where,
            problem=_refused(where, exc.strerror or str(exc), "fix its folder's permissions"),
        )
    fix = _unsafe(tier, where, st)
    if fix:
        return Found(tier, where, problem=fix)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return Found(
            tier, where, problem=_refused(where, exc.strerror or str(exc), "make it readable")
        )
    try:
        now = os.fstat(fd)
        # Swapped between the look and the open: judge what was opened.
        fix = (
            _unsafe(tier, where, now) if (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev) else ""
        )
        if fix:
            return Found(tier, where, problem=fix)
        data = b""
        while len(data) <= MAX_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        return Found(
            tier, where, problem=_refused(where, f"larger than {MAX_BYTES} bytes", "shorten it")
        )
    try:
        return Found(tier, where, text=data.decode("utf-8"))
    except UnicodeDecodeError:
        return Found(tier, where, problem=_refused(where, "not UTF-8 text", "save it as UTF-8"))


def _unsafe(tier: str, where: str, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return _refused(
            where,
            "it is a symbolic link, which can point at a file someone else controls",
            f'copy what it points at in its place: cp --remove-destination "$(readlink -f {where})"'
            f" {where}",
        )
    if not stat.S_ISREG(st.st_mode):
        return _refused(where, "it is not a regular file", f"replace {where} with a regular file")
    if st.st_mode & stat.S_IWOTH:
        return _refused(where, "anyone on this machine may write it", f"chmod o-w {where}")
    owners = {os.getuid()} | ({0} if tier == "managed" else set())
    if st.st_uid not in owners:
        who = "you or root" if tier == "managed" else "you"
        return _refused(
            where,
            f"it is owned by uid {st.st_uid}, not {who}",
            "review it, then chown it or remove it",
        )
    return ""


def _refused(where: str, why: str, fix: str) -> str:
    return f"rule file {where} is refused: {why}; fix: {fix}"
