"""What a warm kodelet's runtime was built from, as file metadata it can re-read per call.

A guard edited a moment ago must be the guard that runs, and reading every hook
file per call would cost what the warm kodelet saves. So the check is a ``stat`` of
each thing that defines the runtime (size, mtime, inode): the two kodelet roots
(config, hooks, plugin repositories, recipes), the project's and the user's Claude
settings files, the directories distributions are installed into, and the files of
the native plugins loaded. A change anywhere means a reload.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..places import Places

__all__ = ["Fingerprint", "files", "fingerprint"]

SKIP = frozenset({"cache", ".git", "node_modules", "__pycache__", ".venv"})
DEPTH = 5
CAP = 4096
"""Entries walked per root at most: a huge checkout must not make every call slow."""

Fingerprint = tuple[tuple[str, int, int, int] | tuple[str], ...]


def _stat(path: str, out: list[tuple[str, int, int, int] | tuple[str]]) -> os.stat_result | None:
    try:
        st = os.stat(path)
    except OSError:
        out.append((path,))
        return None
    out.append((path, st.st_mtime_ns, st.st_size, st.st_ino))
    return st


def _walk(root: str, out: list[tuple[str, int, int, int] | tuple[str]]) -> None:
    pending = [(root, 0)]
    seen = 0
    while pending and seen < CAP:
        directory, depth = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if entry.name in SKIP:
                continue
            st = _stat(entry.path, out)
            if st is not None and depth + 1 < DEPTH and entry.is_dir():
                pending.append((entry.path, depth + 1))


def files(paths: Iterable[str]) -> Fingerprint:
    """The stat of each of ``paths`` (the native plugins' own files, once loaded)."""
    out: list[tuple[str, int, int, int] | tuple[str]] = []
    for path in paths:
        _stat(path, out)
    return tuple(out)


def fingerprint(places: Places, env: Mapping[str, str]) -> Fingerprint:
    out: list[tuple[str, int, int, int] | tuple[str]] = []
    for _, root in places.roots():
        if _stat(str(root), out) is not None:
            _walk(str(root), out)
    home = env.get("HOME") or str(Path.home())
    for settings in (
        places.cwd / ".claude" / "settings.json",
        places.cwd / ".claude" / "settings.local.json",
        Path(home) / ".claude" / "settings.json",
    ):
        _stat(str(settings), out)
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            _stat(entry, out)
    return tuple(out)
