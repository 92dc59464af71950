"""What a warm kodelet's runtime was built from, as file metadata it can re-read per call.

A guard edited a moment ago must be the guard that runs, and reading every hook
file per call would cost what the warm kodelet saves. So the check is a ``stat`` of
each thing that defines the runtime (mtime, size, inode, mode, owner): everything
under the two kodelet roots but their caches (config, hooks, plugin repositories,
recipes), the project's and the user's Claude settings files, the directories
distributions are installed into, and the files of the native plugins' modules. No
part is left out for size: a large tree costs a longer walk, never a missed edit.

A file written so recently that a second write could leave its mtime and size as
they were (within :data:`RACY` seconds of the check, git's "racily clean" files) is
also compared by content at the next check. A change anywhere means a reload.

Every file is stat'ed at every check, since an edit in place leaves its directory as it
was; but a directory whose own ``stat`` is what it was at the last check, and was not
changed within :data:`RACY` seconds of that check, holds the entries it held then (an
entry added, removed or renamed changes it). Its listing is taken from the last
fingerprint instead of being read and sorted again. A kodelet root's own mtime is not
compared: kodelet's own writes there (the cache, the decision log) would reload the
runtime, and each other entry is compared itself.
"""

from __future__ import annotations

import os
import stat
import sys
import time
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from ..places import AUDIT, CACHE, Places
from ..rule_files import RULES_FILE, managed_dir

__all__ = ["Fingerprint", "files", "fingerprint", "written_since"]

WARM = "warm"
"""The warm kodelets' records (HTTP ports, secrets, leases) under the kodelet home."""
NOT_WALKED = frozenset({".git", "node_modules", "__pycache__", ".venv"})
"""Directories never entered: version control, dependencies and byte code, which
nothing kodelet loads is defined by."""
RACY = 2.0
"""Seconds after a write during which a file is compared by content as well: more than
the coarsest timestamps a file system keeps."""
RACY_SIZE = 1 << 20
"""Larger files are compared by their metadata alone."""

Stat = tuple[str, int, int, int, int, int, int] | tuple[str]
Listing = tuple[tuple[int, int, int, int], tuple[tuple[str, str], ...]]
"""A directory's (device, inode, mtime, ctime) and its (name, path) entries by name."""


@attrs.frozen
class Fingerprint:
    """The ``stat`` of each file and directory, and the content checksum of those
    written within :data:`RACY` seconds before it was taken."""

    stats: tuple[Stat, ...] = ()
    racy: tuple[tuple[str, int], ...] = ()
    listings: Mapping[str, Listing] = attrs.field(factory=dict, eq=False, repr=False)
    """The settled directories' entries, for the next fingerprint to reuse."""

    def __add__(self, other: Fingerprint) -> Fingerprint:
        return Fingerprint(self.stats + other.stats, self.racy + other.racy)

    def paths(self) -> list[str]:
        return [s[0] for s in self.stats]

    def changed(self, now: Fingerprint) -> str | None:
        """What changed between this fingerprint and ``now``, one taken later of the
        same paths: the first path that differs, or None."""
        if now.stats != self.stats:
            moved = sorted(set(now.stats) ^ set(self.stats))
            return moved[0][0] if moved else "the order of the files"
        for path, checksum in self.racy:
            if _checksum(path) != checksum:
                return path
        return None


def _checksum(path: str) -> int:
    try:
        with open(path, "rb") as f:
            return zlib.crc32(f.read(RACY_SIZE + 1))
    except OSError:
        return -1


class _Taker:
    """One fingerprint being taken: the stats so far, the racy files among them, and
    the listings of the directories it walked (``known``: those of the last one)."""

    def __init__(self, known: Mapping[str, Listing] | None = None) -> None:
        self.stats: list[Stat] = []
        self.racy: list[tuple[str, int]] = []
        self.known: Mapping[str, Listing] = known or {}
        self.listings: dict[str, Listing] = {}
        self.recent = time.time_ns() - int(RACY * 1e9)

    def stat(self, path: str, *, root: bool = False) -> os.stat_result | None:
        """Record ``path``'s metadata. A ``root``'s mtime and size are left out: kodelet's
        own writes (its cache, the decision log, the warm kodelets' records) change them,
        and every other entry of a root is recorded itself, so one added, removed or
        renamed is seen all the same."""
        try:
            st = os.stat(path)
        except OSError:
            self.stats.append((path,))
            return None
        mtime, size = (0, 0) if root else (st.st_mtime_ns, st.st_size)
        self.stats.append((path, mtime, size, st.st_ino, st.st_mode, st.st_uid, st.st_gid))
        recent = st.st_mtime_ns >= self.recent or st.st_ctime_ns >= self.recent
        if recent and stat.S_ISREG(st.st_mode) and st.st_size <= RACY_SIZE:
            self.racy.append((path, _checksum(path)))
        return st

    def entries(self, directory: str, st: os.stat_result) -> tuple[tuple[str, str], ...]:
        """(name, path) of each entry of ``directory`` (whose stat is ``st``), by name:
        the last fingerprint's listing while the directory is as it was then."""
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        known = self.known.get(directory)
        if known is not None and known[0] == key:
            self.listings[directory] = known
            return known[1]
        try:
            with os.scandir(directory) as it:
                entries = tuple(sorted((e.name, e.path) for e in it))
        except OSError:
            return ()
        if max(st.st_mtime_ns, st.st_ctime_ns) < self.recent:  # settled: nothing racy
            self.listings[directory] = (key, entries)
        return entries

    def walk(self, root: str) -> None:
        """Every entry under ``root`` but its cache, breadth first, in name order;
        :data:`NOT_WALKED` directories are stat'ed but not entered, a directory
        reached twice (a link back up) only once."""
        top = self.stat(root, root=True)
        if top is None or not stat.S_ISDIR(top.st_mode):
            return
        seen = {(top.st_dev, top.st_ino)}
        pending = [(root, top)]
        for directory, st in pending:  # grows as it goes
            for name, path in self.entries(directory, st):
                if directory == root and name in (CACHE, WARM, AUDIT):
                    continue  # kodelet's own writes, not what defines the runtime
                inner = self.stat(path)
                if inner is None or not stat.S_ISDIR(inner.st_mode) or name in NOT_WALKED:
                    continue
                if (inner.st_dev, inner.st_ino) not in seen:
                    seen.add((inner.st_dev, inner.st_ino))
                    pending.append((path, inner))

    def taken(self) -> Fingerprint:
        return Fingerprint(tuple(self.stats), tuple(self.racy), self.listings)


def files(paths: Iterable[str]) -> Fingerprint:
    """The fingerprint of each of ``paths`` (the native plugins' own files, once loaded)."""
    taker = _Taker()
    for path in paths:
        taker.stat(path)
    return taker.taken()


def written_since(paths: Iterable[str], since: int) -> str | None:
    """The first of ``paths`` written, changed or removed at or after ``since`` (ns of the
    wall clock), or None: a file read at some moment after ``since`` is, if none is, the
    file on disk now."""
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            return path
        if st.st_mtime_ns >= since or st.st_ctime_ns >= since:
            return path
    return None


def fingerprint(
    places: Places, env: Mapping[str, str], last: Fingerprint | None = None
) -> Fingerprint:
    """What defines a runtime for ``places`` now; ``last``, the one taken before, spares
    reading again the directories that did not change since."""
    taker = _Taker(last.listings if last is not None else None)
    for _, root in places.roots():
        taker.walk(str(root))
    home = env.get("HOME") or str(Path.home())
    for settings in (
        places.cwd / ".claude" / "settings.json",
        places.cwd / ".claude" / "settings.local.json",
        Path(home) / ".claude" / "settings.json",
    ):
        taker.stat(str(settings))
    taker.stat(str(managed_dir(env) / RULES_FILE))  # the machine's rules (the roots hold the rest)
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            taker.stat(entry)
    return taker.taken()
