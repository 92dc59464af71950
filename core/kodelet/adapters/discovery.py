"""Finding executable hooks in the four places, in the seeds' precedence order.

Every file looked at ends up in the listing, active or not, with the reason
it was skipped: a hook that silently does not run is the worst failure a
guardrail can have.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs

from ..config import Config
from ..events import Event, parse_event
from ..kinds import Location, Protocol, Status
from ..places import DISABLE_SUFFIX, Places, hooks_dir, installed_plugins
from .process import Job, ProcessResult, SpawnError, run_batch, run_process

log = logging.getLogger("kodelet.discovery")

QUERY_TIMEOUT = 5.0
QUERY_CAP = 4096
# Queries in flight at once: enough to keep the cores busy while a few hooks hang,
# few enough that five hundred hooks do not become five hundred processes.
BATCH_LIMIT = 16


@attrs.frozen(kw_only=True)
class Candidate:
    name: str
    path: Path
    location: Location
    plugin: str | None = None  # "org/repo" for plugin-repo hooks
    plugin_root: Path | None = None


@attrs.frozen(kw_only=True)
class DiscoveredHook:
    candidate: Candidate
    event: Event | None
    status: Status
    reason: str = ""
    protocols: tuple[Protocol | str, ...] = ()
    # The file of the same name higher up that runs instead of this one.
    shadowed_by: Path | None = None

    @property
    def name(self) -> str:
        return self.candidate.name

    @property
    def path(self) -> Path:
        return self.candidate.path


def hook_dirs(places: Places) -> Iterator[tuple[Path, Location, str | None, Path | None, Path]]:
    """(hooks dir, location, plugin name, plugin root, trust root) in precedence order."""
    for location, root in places.roots():
        yield hooks_dir(root), location, None, None, root
        for name, pdir in installed_plugins(root):
            if hooks_dir(pdir).is_dir():
                yield hooks_dir(pdir), location, name, pdir, root


def shown(text: str | Path) -> str:
    """A file name fit for JSON and terminals: undecodable bytes become ``\\xNN``."""
    return os.fsencode(text).decode("utf-8", "backslashreplace")


_Memo = dict[tuple[Path, Path, bool], "str | None"]


def _chain_problem(
    path: Path, root: Path, me: int, *, sticky_ok: bool, memo: _Memo | None = None
) -> str | None:
    """The first unsafe component from ``path`` up to ``root``; ``memo`` remembers each
    directory's answer, so many files in one directory cost one ``stat`` each."""
    current = path
    visited: list[Path] = []
    found: str | None = None
    while True:
        if memo is not None and current != path:
            key = (current, root, sticky_ok)
            if key in memo:
                found = memo[key]
                break
            visited.append(current)
        try:
            st = current.stat()
        except OSError as exc:
            found = f"cannot stat {shown(current)}: {exc.strerror}"
            break
        writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        # Outside the root, a sticky directory (/tmp) lets nobody replace our entries.
        if writable and not (sticky_ok and current != path and st.st_mode & stat.S_ISVTX):
            found = f"{shown(current)} is group- or world-writable"
            break
        if st.st_uid not in (me, 0):
            found = f"{shown(current)} is owned by uid {st.st_uid}, not the current user or root"
            break
        if current == root or current.parent == current:
            break
        current = current.parent
    if memo is not None:
        for directory in visited:
            memo[(directory, root, sticky_ok)] = found
    return found


def _realpath(path: Path, memo: dict[Path, Path] | None) -> Path:
    if memo is None:
        return Path(os.path.realpath(path))
    real = memo.get(path)
    if real is None:
        real = memo[path] = Path(os.path.realpath(path))
    return real


_SLOW = "?"


def _untrusted_plain(path: Path, root: Path, memo: dict[Any, Any]) -> str | None:
    """:func:`_untrusted` for the common case, a regular file (not a symlink) in a
    directory already judged: one ``lstat``. ``_SLOW`` when the full check must run."""
    try:
        st = os.lstat(path)
    except OSError:
        return _SLOW
    if stat.S_ISLNK(st.st_mode) or path == root:
        return _SLOW
    me = os.geteuid()
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{shown(path)} is group- or world-writable"
    if st.st_uid not in (me, 0):
        return f"{shown(path)} is owned by uid {st.st_uid}, not the current user or root"
    key = ("plain", os.path.dirname(path), root)
    state = memo.get(key)
    if state is None:
        parent = path.parent
        why = _chain_problem(parent, root, me, sticky_ok=False, memo=memo)
        if why:
            state = why
        elif _realpath(parent, memo) == _realpath(root, memo) / parent.relative_to(root):
            state = ""  # no symlink on the way: the file is where it seems to be
        else:
            state = _SLOW
        memo[key] = state
    return str(state) or None


def _untrusted(path: Path, root: Path, memo: dict[Any, Any] | None = None) -> str | None:
    """Why a file must not be run because someone else could have written it.

    A symlink is judged by where it leads too: the target and its directories
    (up to the root if it stays inside, else up to ``/``) must be safe as well.
    ``memo`` (one per discovery) shares the directories' answers between files."""
    if memo is not None:
        quick = _untrusted_plain(path, root, memo)
        if quick != _SLOW:
            return quick
    me = os.geteuid()
    why = _chain_problem(path, root, me, sticky_ok=False, memo=memo)
    if why:
        return why
    real_root = _realpath(root, memo)
    if memo is not None and not path.is_symlink():
        real = _realpath(path.parent, memo) / path.name
    else:
        real = Path(os.path.realpath(path))
    if real == real_root / path.relative_to(root):
        return None
    inside = real.is_relative_to(real_root)
    top = real_root if inside else Path(real.anchor)
    return _chain_problem(real, top, me, sticky_ok=not inside, memo=memo)


# A Claude Code plugin's hook settings, in its ``hooks/`` directory beside executables.
CLAUDE_PLUGIN_HOOKS = "hooks.json"


def scan(places: Places) -> tuple[list[tuple[Candidate, Path]], list[DiscoveredHook]]:
    """Candidates to query (with their trust root) and files skipped without asking them."""
    seen: dict[str, Path] = {}
    todo: list[tuple[Candidate, Path]] = []
    skipped: list[DiscoveredHook] = []
    for directory, location, plugin, plugin_root, trust_root in hook_dirs(places):
        try:
            entries = sorted(directory.iterdir(), key=lambda p: p.name)
        except OSError:
            continue
        prefix = f"{plugin}/" if plugin else ""
        for entry in entries:
            cand = Candidate(
                name=prefix + shown(entry.name),
                path=entry,
                location=location,
                plugin=plugin,
                plugin_root=plugin_root,
            )
            try:
                st = entry.stat()
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            if plugin and entry.name == CLAUDE_PLUGIN_HOOKS:
                continue  # Claude Code's plugin layout: the Claude Code adapter reads it
            if entry.name.endswith(DISABLE_SUFFIX):
                skipped.append(
                    DiscoveredHook(
                        candidate=cand,
                        event=None,
                        status=Status.DISABLED,
                        reason="renamed to .disable",
                    )
                )
                continue
            if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111:
                skipped.append(
                    DiscoveredHook(
                        candidate=cand, event=None, status=Status.SKIPPED, reason="not executable"
                    )
                )
                continue
            if cand.name in seen:
                skipped.append(
                    DiscoveredHook(
                        candidate=cand,
                        event=None,
                        status=Status.SKIPPED,
                        reason=f"shadowed by {seen[cand.name]} (same name, higher up)",
                        shadowed_by=seen[cand.name],
                    )
                )
                continue
            seen[cand.name] = entry
            todo.append((cand, trust_root))
    return todo, skipped


Answer = tuple[Event, tuple[str, ...]]


def _query_env(env: Mapping[str, str] | None) -> dict[str, str]:
    qenv = dict(os.environ if env is None else env)
    qenv["KODELET_HOOK_PROTOCOLS"] = Protocol.JSONL.value
    return qenv


def _answer(res: ProcessResult | SpawnError) -> Answer:
    """What one ``hook`` query said; ``ValueError`` says why the hook cannot be used."""
    if isinstance(res, SpawnError):
        raise ValueError(str(res.strerror))
    if res.timed_out:
        raise ValueError(f"'hook' query gave no answer within {QUERY_TIMEOUT:g}s")
    problem = res.failure(QUERY_TIMEOUT)
    if problem:
        raise ValueError(f"'hook' query {problem}")
    try:
        words = res.stdout.decode("utf-8").split()
    except UnicodeDecodeError:
        raise ValueError("'hook' query answered with non-UTF-8 bytes") from None
    if not words:
        raise ValueError("'hook' query printed nothing")
    try:
        event = parse_event(words[0])
    except ValueError as exc:
        raise ValueError(f"'hook' query: {exc}") from None
    return event, tuple(words[1:])


def query_event(path: Path, env: Mapping[str, str] | None = None) -> Answer:
    """Ask ``<exe> hook`` which event it handles; ``ValueError`` says why it cannot be used."""
    try:
        res = run_process(
            [str(path), "hook"],
            b"",
            cwd=str(path.parent),
            env=_query_env(env),
            timeout=QUERY_TIMEOUT,
            stdout_cap=QUERY_CAP,
        )
    except SpawnError as exc:
        return _answer(exc)
    return _answer(res)


def query_events(
    paths: Sequence[Path], env: Mapping[str, str] | None = None, *, limit: int = BATCH_LIMIT
) -> list[Answer | ValueError]:
    """:func:`query_event` for many files at once: each answer, or the ``ValueError``
    that would have been raised, in the order of ``paths``.

    All queries are started from this thread and read in one selector loop (at
    most ``limit`` at a time), each with its own timeout: cheaper than a thread
    per query, and many hooks that hang cost one timeout, not one each."""
    qenv = _query_env(env)
    jobs = [Job(argv=(str(p), "hook"), cwd=str(p.parent), env=qenv) for p in paths]
    answers: list[Answer | ValueError] = []
    for res in run_batch(jobs, timeout=QUERY_TIMEOUT, stdout_cap=QUERY_CAP, limit=limit):
        try:
            answers.append(_answer(res))
        except ValueError as exc:
            answers.append(exc)
    return answers


def discover(
    places: Places,
    config: Config | None = None,
    *,
    query: object = None,
    workers: int | None = None,
    env: Mapping[str, str] | None = None,
) -> list[DiscoveredHook]:
    """Every hook file in precedence order, each active, skipped or disabled.

    ``query`` replaces :func:`query_event` (the discovery cache passes its own).
    If it also has a ``peek(path)`` method that answers without running
    anything (or None), those answers are taken first and only the rest are
    queried: a warm cache then spawns nothing. The rest are asked all at once
    from this thread (:func:`query_events`) when ``query`` is None or has a
    ``query_many(paths, limit=)`` method that does the same; any other callable is
    called from a thread pool. ``workers`` caps the queries in flight.
    ``env`` is the environment the hooks will run in: a hook is asked its event
    in the same environment, so both answers come from the same world."""
    ask = query if callable(query) else functools.partial(query_event, env=env)
    peek = getattr(query, "peek", None)
    many: Any = getattr(query, "query_many", None)
    if query is None:
        many = functools.partial(query_events, env=env)
    todo, found = scan(places)

    def settle(cand: Candidate, answer: tuple[Event, tuple[str, ...]]) -> DiscoveredHook:
        event, protocols = answer
        if config is not None and not config.hook_enabled(cand.name):
            return DiscoveredHook(
                candidate=cand,
                event=event,
                status=Status.DISABLED,
                reason="disabled in config.toml",
                protocols=protocols,
            )
        log.debug("hook %s handles %s (%s)", cand.name, event.value, cand.path)
        return DiscoveredHook(
            candidate=cand, event=event, status=Status.ACTIVE, protocols=protocols
        )

    def skip(cand: Candidate, exc: ValueError) -> DiscoveredHook:
        log.warning("hook %s skipped: %s", cand.name, exc)
        return DiscoveredHook(candidate=cand, event=None, status=Status.SKIPPED, reason=str(exc))

    def one(cand: Candidate) -> DiscoveredHook:
        try:
            answer = ask(cand.path)
        except ValueError as exc:
            return skip(cand, exc)
        return settle(cand, answer)

    results: list[DiscoveredHook | None] = []
    pending: list[tuple[int, Candidate]] = []
    memo: dict[Any, Any] = {}
    for cand, trust_root in todo:
        why = _untrusted(cand.path, trust_root, memo)
        if why:
            results.append(
                DiscoveredHook(
                    candidate=cand,
                    event=None,
                    status=Status.SKIPPED,
                    reason=f"untrusted: {why}",
                )
            )
            continue
        known = peek(cand.path) if callable(peek) else None
        if known is not None:
            results.append(settle(cand, known))
        else:
            pending.append((len(results), cand))
            results.append(None)

    answers: list[DiscoveredHook]
    if callable(many) and len(pending) > 1:
        cands = [c for _, c in pending]
        asked = many([c.path for c in cands], limit=workers or BATCH_LIMIT)
        answers = [
            skip(c, a) if isinstance(a, ValueError) else settle(c, a)
            for c, a in zip(cands, asked, strict=True)
        ]
    elif len(pending) > 1:
        with ThreadPoolExecutor(max_workers=min(workers or 8, len(pending))) as pool:
            answers = list(pool.map(one, [c for _, c in pending]))
    else:
        answers = [one(c) for _, c in pending]
    for (i, _), hook in zip(pending, answers, strict=True):
        results[i] = hook
    return _in_order([h for h in results if h is not None], found)


def _in_order(
    queried: Iterable[DiscoveredHook], skipped: Iterable[DiscoveredHook]
) -> list[DiscoveredHook]:
    """Queried hooks keep scan order; the statically skipped ones follow."""
    return [*queried, *skipped]
