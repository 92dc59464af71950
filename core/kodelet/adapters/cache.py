"""The discovery cache: remember what each hook file answered to ``hook``.

Asking every executable its event costs one process per hook at every start,
which dominates start-up once a user has a few dozen hooks. The answer only
changes when the file does, so it is kept per file under ``<global>/cache/``,
keyed by the file's real path and everything ``stat`` says about its content
and permissions (size, mtime_ns, ctime_ns, inode, device, mode). Any change to
one file re-queries that file only.

The cache is an optimisation, never a source of truth: a corrupt, unreadable or
unwritable cache file is ignored (and rewritten when possible), and
``KODELET_NO_CACHE=1`` bypasses it entirely. Failed queries are cached too, under
the same stat key, so a hook that hangs on ``hook`` costs its timeout once, not at
every start; editing, touching or chmod-ing the file asks it again.

The cache decides which event a hook runs on, so it is trusted like a hook: a
cache file (or directory) that is group- or world-writable or owned by someone
else is ignored and not written. And it never answers for a hook marked
``fail_closed = true`` in config.toml (``fresh``): such a hook is always asked, so
no entry can move a guardrail its user singled out off its event.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..events import Event, parse_event
from ..jsonio import FileError, loads, read_file, write_atomically
from ..places import cache_dir
from .discovery import BATCH_LIMIT, NotStarted, query_event, query_events, stat_problem

log = logging.getLogger("kodelet.cache")

CACHE_FILE = "discovery.json"
# Bumped whenever what a cached answer means changes (e.g. a new protocol word; 2: a
# Python hook importing kodelet is asked under kodelet's own Python, so an answer that
# failed to import kodelet before is stale).
FORMAT = 2

Answer = tuple[Event, tuple[str, ...]]
Query = Callable[[Path], Answer]


def cache_disabled(env: Mapping[str, str]) -> bool:
    value = (env.get("KODELET_NO_CACHE") or "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def _key_of(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_mode]


class DiscoveryCache:
    """A query function for :func:`discover` that answers from disk when it can
    (one instance per discovery: it remembers directories' real paths).

    Thread-safe, so that a custom ``query`` may be called from a thread pool.
    """

    def __init__(
        self, directory: Path, *, query: Query | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.path = Path(directory) / CACHE_FILE
        self._env = dict(os.environ if env is None else env)
        self._custom = query
        self._query: Query = query or (lambda p: query_event(p, self._env))
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = {}
        self._dirty = False
        self._dirs: dict[str, str] = {}  # directory -> its real path, for this discovery
        self._ignored = False
        self.hits = 0
        self.misses = 0
        self._load()

    @classmethod
    def for_root(cls, global_root: Path, **kw: Any) -> DiscoveryCache:
        return cls(cache_dir(Path(global_root)), **kw)

    def _untrusted(self) -> str | None:
        """Why the cache file must not be believed: someone else could have written it."""
        me = os.geteuid()
        for where in (self.path, self.path.parent):
            try:
                st = os.lstat(where)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                return f"{where} is a symlink"
            problem = stat_problem(where, st, me)
            if problem:
                return problem
        return None

    def _load(self) -> None:
        why = self._untrusted()
        if why is not None:
            log.warning("discovery cache ignored: %s", why)
            self._ignored = True
            return
        # Read as every file from elsewhere is (docs/SECURITY.md): a FIFO in its place
        # must not hang even `hooks list --no-exec`, nor a deeply nested file raise
        # RecursionError from every command. Either is a bad cache, rebuilt.
        try:
            raw = read_file(self.path, "discovery cache")
        except FileNotFoundError:
            return
        except (OSError, FileError) as exc:
            log.debug("discovery cache unreadable (%s); ignored", exc)
            self._dirty = True
            return
        try:
            data = loads(raw, str(self.path))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError("unknown format")
            entries = data["entries"]
            if not isinstance(entries, dict):
                raise ValueError("entries is not an object")
        except (ValueError, KeyError, UnicodeDecodeError) as exc:
            log.debug("discovery cache %s is corrupt (%s); rebuilt", self.path, exc)
            self._dirty = True
            return
        self._entries = {k: v for k, v in entries.items() if isinstance(v, dict)}

    def lookup(
        self, path: str | Path, st: os.stat_result | None = None
    ) -> tuple[str, list[int], Answer | ValueError | None]:
        """(real path, stat key, cached answer, cached failure or None); ``OSError`` if
        the file is gone. ``st`` is the file's ``lstat`` if the caller took it; a path
        as text (a directory listing's) saves making a ``Path``."""
        if st is None:
            st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(path)
            st = os.stat(real)
        else:
            text = str(path)
            parent, _, name = text.rpartition("/")
            real_parent = self._dirs.get(parent)
            if real_parent is None:
                real_parent = self._dirs[parent] = os.path.realpath(parent or "/").rstrip("/")
            real = text if real_parent == parent != "" else f"{real_parent}/{name}"
        key = _key_of(st)
        entry = self._entries.get(real)  # one dict read is atomic; only writes take the lock
        if entry is not None and entry.get("stat") == key:
            if "error" in entry:
                return real, key, ValueError(str(entry["error"]))
            try:
                event = parse_event(str(entry["event"]))
                protocols = tuple(map(str, entry.get("protocols", ())))
            except (KeyError, TypeError, ValueError):
                return real, key, None
            return real, key, (event, protocols)
        return real, key, None

    def peek(
        self, path: str | Path, *, st: os.stat_result | None = None
    ) -> Answer | ValueError | None:
        """The cached answer without running anything, or None if the file must be asked
        (``st``: the file's ``lstat``, if the caller took it)."""
        try:
            answer = self.lookup(path, st)[2]
        except OSError:
            return None
        if answer is not None:
            with self._lock:
                self.hits += 1
        return answer

    def renamed_event(self, path: Path, was: Path) -> Event | None:
        """The event last cached for ``was``, if ``path`` is that same file renamed.

        A rename changes only the ctime, so size, mtime and inode must still match;
        never used to run anything, only to show a disabled hook where it belongs."""
        try:
            st = os.lstat(path)
        except OSError:
            return None
        real = os.path.join(os.path.realpath(was.parent), was.name)
        with self._lock:
            entry = self._entries.get(real)
        key = entry.get("stat") if entry is not None else None
        mine = _key_of(st)
        if not isinstance(key, list) or len(key) != len(mine):
            return None
        if [key[i] for i in (0, 1, 3, 4)] != [mine[i] for i in (0, 1, 3, 4)]:
            return None
        try:
            return parse_event(str(entry["event"])) if entry is not None else None
        except ValueError:
            return None

    def __call__(self, path: Path, *, fresh: bool = False) -> Answer:
        try:
            real, key, answer = self.lookup(path)
        except OSError:
            return self._query(path)  # the query reports the problem in its own words
        if answer is not None and not fresh:
            with self._lock:
                self.hits += 1
            if isinstance(answer, ValueError):
                raise answer
            return answer
        # Stat taken before asking: a file edited while being queried gets a new key next time.
        try:
            answer = self._query(path)
        except ValueError as exc:
            self._store(real, key, exc)
            raise
        self._store(real, key, answer)
        return answer

    def _store(self, real: str, key: list[int], answer: Answer | ValueError) -> None:
        if isinstance(answer, NotStarted):
            return
        entry: dict[str, Any] = {"stat": key}
        if isinstance(answer, ValueError):
            entry["error"] = str(answer)
        else:
            entry.update(event=answer[0].value, protocols=list(answer[1]))
        with self._lock:
            self.misses += 1
            self._entries[real] = entry
            self._dirty = True

    def query_many(
        self, paths: Sequence[Path], *, limit: int = BATCH_LIMIT, fresh: Iterable[Path] = ()
    ) -> list[Answer | ValueError]:
        """Like calling the cache on each path, with every miss asked at once
        (:func:`query_events`): each answer or its ``ValueError``, in order.
        ``fresh`` paths are asked even when cached."""
        always = set(fresh)
        answers: list[Answer | ValueError | None] = []
        misses: list[tuple[int, Path, tuple[str, list[int]] | None]] = []
        for path in paths:
            try:
                real, key, answer = self.lookup(path)
            except OSError:
                misses.append((len(answers), path, None))  # asked, and reported, but not kept
                answers.append(None)
                continue
            if answer is not None and path not in always:
                with self._lock:
                    self.hits += 1
            else:
                answer = None
                misses.append((len(answers), path, (real, key)))
            answers.append(answer)
        if self._custom is None:
            asked = query_events([p for _, p, _ in misses], self._env, limit=limit)
        else:
            asked = []
            for _, path, _ in misses:
                try:
                    asked.append(self._custom(path))
                except ValueError as exc:
                    asked.append(exc)
        for (i, _, where), reply in zip(misses, asked, strict=True):
            answers[i] = reply
            if where is not None:
                self._store(*where, reply)
        done: list[Answer | ValueError] = []
        for got in answers:
            assert got is not None
            done.append(got)
        return done

    def save(self) -> None:
        """Write the cache atomically if anything changed; never raises for I/O trouble."""
        with self._lock:
            if not self._dirty or self._ignored:
                return
            entries = {k: v for k, v in self._entries.items() if os.path.lexists(k)}
            self._dirty = False
        text = json.dumps({"format": FORMAT, "entries": entries}, sort_keys=True)
        try:
            write_atomically(self.path, text)
        except OSError as exc:
            log.debug("discovery cache %s not written: %s", self.path, exc.strerror or exc)
