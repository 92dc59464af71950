"""Finding executable hooks in the four places, in the seeds' precedence order.

Every file looked at ends up in the listing, active or not, with the reason
it was skipped: a hook that silently does not run is the worst failure a
guardrail can have.
"""

from __future__ import annotations

import errno
import functools
import grp
import json
import logging
import operator
import os
import pwd
import re
import shlex
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs

from ..config import Config
from ..errors import KodeletError
from ..events import Event, parse_event
from ..kinds import Location, Protocol, Status
from ..places import DISABLE_SUFFIX, Places, claude_layout, hooks_dir, installed_plugins
from ..process import Job, ProcessResult, SpawnError, run_batch, run_process
from .interpreter import command, explain, own_python

log = logging.getLogger("kodelet.discovery")

DISABLED_IN_CONFIG = "disabled in config.toml"
NOT_EXECUTABLE = "not executable"
A_DIRECTORY = "a directory"
UNKNOWN_NAME = "no hook or plugin of this name (configured in config.toml)"

QUERY_TIMEOUT = 5.0
QUERY_CAP = 4096
# Queries in flight at once: a query mostly waits, so many hanging hooks should cost
# one timeout, not several; still few enough that five hundred hooks are not
# five hundred processes at once.
BATCH_LIMIT = 64


@attrs.frozen(kw_only=True)
class Candidate:
    name: str
    # The file's path as the directory listing gave it. A ``Path`` is made only when
    # asked for: a warm start looks at every file but runs few of them.
    file: str
    location: Location
    plugin: str | None = None  # "org/repo" for plugin-repo hooks
    plugin_root: Path | None = None
    # What lstat said when the directory was listed: the trust check and the cache
    # key judge that one look, not three.
    lstat: os.stat_result | None = attrs.field(default=None, eq=False, repr=False)
    # Where the listing found it, across all hooks folders: the precedence order of
    # files queried and files skipped without asking alike.
    seq: int = attrs.field(default=1 << 30, eq=False, repr=False)

    @functools.cached_property
    def path(self) -> Path:
        return Path(self.file)


@attrs.frozen(kw_only=True)
class DiscoveredHook:
    candidate: Candidate
    event: Event | None
    status: Status
    reason: str = ""
    protocols: tuple[Protocol | str, ...] = ()
    # The file of the same name higher up that runs instead of this one.
    shadowed_by: Path | None = None
    # False for what is no hook, so blocks in no hook's place unless config.toml marks
    # its name fail_closed = true: a file without its executable bit or a directory
    # in a hooks folder (a README, notes), a config.toml table naming nothing.
    hook: bool = True

    @classmethod
    def not_run(
        cls, cand: Candidate, reason: str, status: Status = Status.SKIPPED, **kw: Any
    ) -> DiscoveredHook:
        """A file looked at that will not run, and why."""
        return cls(candidate=cand, event=kw.pop("event", None), status=status, reason=reason, **kw)

    @property
    def name(self) -> str:
        return self.candidate.name

    @property
    def fix(self) -> str | None:
        """What makes this file run (one command when one does), or None."""
        return skip_fix(self)

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
    if type(text) is str and text.isascii():
        return text  # nothing to escape: undecodable bytes are never ASCII
    return os.fsencode(text).decode("utf-8", "backslashreplace")


USER_DATABASE = ("/etc/passwd", "/etc/group")


def _database_stamp() -> tuple[tuple[int, int, int], ...]:
    """What ``stat`` says of the user database files: a change to either is a new stamp."""
    stamps = []
    for path in USER_DATABASE:
        try:
            st = os.stat(path)
        except OSError:
            stamps.append((0, 0, 0))
            continue
        stamps.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(stamps)


class UserDatabase:
    """The user database as the trust rule reads it, with what it has answered.

    Reading every account costs a millisecond, and trust is checked before every
    call, so an owner of trust checks (a discovery, an executable adapter) keeps one
    and its answers per (uid, gid) for as long as ``/etc/passwd`` and ``/etc/group``
    are unchanged: a member added there is seen at the next check, even by a warm
    kodelet."""

    def __init__(self) -> None:
        self._stamp: tuple[tuple[int, int, int], ...] | None = None
        self._answers: dict[tuple[int, int], bool] = {}

    def private_group(self, uid: int, gid: int) -> bool:
        """Whether group ``gid`` is user ``uid``'s private group, so its write bit lets
        no one else write: it is that user's primary group, the group database lists
        no other member of it, and no other user has it as primary group. This is
        what ``umask 002`` systems (Debian, Ubuntu, Fedora) give each user, and what
        Debian's OpenSSH accepts for ``StrictModes``. Only what the user database
        lists is seen."""
        stamp = _database_stamp()
        if stamp != self._stamp:
            self._stamp, self._answers = stamp, {}
        answer = self._answers.get((uid, gid))
        if answer is None:
            answer = self._answers[(uid, gid)] = _private_group(uid, gid)
        return answer


def _private_group(uid: int, gid: int) -> bool:
    try:
        owner = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except (KeyError, OverflowError):
        return False
    if owner.pw_gid != gid or any(member != owner.pw_name for member in group.gr_mem):
        return False
    return not any(user.pw_gid == gid and user.pw_uid != uid for user in pwd.getpwall())


def stat_problem(
    where: str | Path,
    st: os.stat_result,
    me: int,
    *,
    sticky_ok: bool = False,
    users: UserDatabase | None = None,
) -> str | None:
    """Why what ``st`` describes could be written by someone other than ``me`` or root:
    the one rule for hook files, their directories and the discovery cache.
    ``sticky_ok``: a sticky directory (/tmp) lets nobody replace others' entries.
    Group write is harmless when the group is the owner's private group (asked of
    ``users``, the caller's :class:`UserDatabase`, else of a fresh one)."""
    if not (sticky_ok and st.st_mode & stat.S_ISVTX):
        if st.st_mode & stat.S_IWOTH:
            return f"{shown(where)} is group- or world-writable"
        if st.st_mode & stat.S_IWGRP and not (users or UserDatabase()).private_group(
            st.st_uid, st.st_gid
        ):
            return f"{shown(where)} is group-writable {_group_of(st)}"
    if st.st_uid not in (me, 0):
        return f"{shown(where)} is owned by uid {st.st_uid}, not the current user or root"
    return None


def _group_of(st: os.stat_result) -> str:
    """Why a group-writable file's group is not its owner's alone, in a few words."""
    try:
        name = grp.getgrgid(st.st_gid).gr_name
    except (KeyError, OverflowError):
        return f"by gid {st.st_gid}, which is not its owner's private group"
    return f"by group {shown(name)}, which is not its owner's private group"


_Memo = dict[tuple[Path, Path, bool], "str | None"]


def _chain_problem(
    path: Path,
    root: Path,
    me: int,
    *,
    sticky_ok: bool,
    memo: _Memo | None = None,
    users: UserDatabase | None = None,
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
        found = stat_problem(current, st, me, sticky_ok=sticky_ok and current != path, users=users)
        if found:
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


def _untrusted_plain(
    path: str, root: Path, memo: dict[Any, Any], st: os.stat_result | None, users: UserDatabase
) -> str | None:
    """:func:`_untrusted` for the common case, a regular file (not a symlink) in a
    directory already judged: one ``lstat`` (none when the listing took it, as a
    listed file is never the root). ``_SLOW`` when the full check must run."""
    if st is None:
        try:
            st = os.lstat(path)
        except OSError:
            return _SLOW
        if Path(path) == root:
            return _SLOW
    if stat.S_ISLNK(st.st_mode):
        return _SLOW
    me = os.geteuid()
    problem = stat_problem(path, st, me, users=users)
    if problem:
        return problem
    key = ("plain", path.rpartition("/")[0], root)
    state = memo.get(key)
    if state is None:
        parent = Path(path).parent
        why = _chain_problem(parent, root, me, sticky_ok=False, memo=memo, users=users)
        if why:
            state = why
        elif _realpath(parent, memo) == _realpath(root, memo) / parent.relative_to(root):
            state = ""  # no symlink on the way: the file is where it seems to be
        else:
            state = _SLOW
        memo[key] = state
    return str(state) or None


def _untrusted(
    path: str | Path,
    root: Path,
    memo: dict[Any, Any] | None = None,
    lstat: os.stat_result | None = None,
    users: UserDatabase | None = None,
) -> str | None:
    """Why a file must not be run because someone else could have written it.

    A symlink is judged by where it leads too: the target and its directories
    (up to the root if it stays inside, else up to ``/``) must be safe as well.
    ``memo`` (one per discovery) shares the directories' answers between files;
    ``lstat`` is the file's, if the caller has it; ``users`` (one per discovery too)
    the user database its group checks ask."""
    users = users or UserDatabase()
    if memo is not None:
        quick = _untrusted_plain(os.fspath(path), root, memo, lstat, users)
        if quick != _SLOW:
            return quick
    path = Path(path)
    me = os.geteuid()
    why = _chain_problem(path, root, me, sticky_ok=False, memo=memo, users=users)
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
    return _chain_problem(real, top, me, sticky_ok=not inside, memo=memo, users=users)


def untrusted(path: str | Path, root: Path) -> str | None:
    """Why a file that decides what runs (a hook, a Claude Code settings file, a script
    one names) must not be trusted: the rule of docs/SECURITY.md, from it up to ``root``."""
    return _untrusted(path, root)


# A Claude Code plugin's hook settings, in its ``hooks/`` directory beside executables.
CLAUDE_PLUGIN_HOOKS = "hooks.json"


def scan(places: Places) -> tuple[list[tuple[Candidate, Path]], list[DiscoveredHook]]:
    """Candidates to query (with their trust root) and files skipped without asking them."""
    seen: dict[str, Candidate] = {}
    todo: list[tuple[Candidate, Path]] = []
    skipped: list[DiscoveredHook] = []
    for directory, location, plugin, plugin_root, trust_root in hook_dirs(places):
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=operator.attrgetter("name"))
        except FileNotFoundError:
            continue
        except OSError as exc:
            # The hooks in it cannot even be named; a fail-closed guardrail among them
            # is held by the stand-in for a configured name that no hook has.
            whole = Candidate(
                name=(f"{plugin}/" if plugin else "") + "*",
                file=str(directory),
                location=location,
                plugin=plugin,
                plugin_root=plugin_root,
                seq=len(todo) + len(skipped),
            )
            why = f"hooks directory unreadable: {exc.strerror or exc}"
            skipped.append(DiscoveredHook.not_run(whole, why))
            continue
        if plugin and (
            any(e.name == CLAUDE_PLUGIN_HOOKS for e in entries)
            or (plugin_root is not None and claude_layout(plugin_root))
        ):
            # Claude Code's plugin layout (hooks/hooks.json or .claude-plugin/plugin.json):
            # hooks.json says what runs, and the files beside it are the scripts it
            # names, not kodelet executables. Asking them `hook` would run each one at
            # every start (the Claude Code adapter runs them when their hooks.json
            # entry matches).
            continue
        prefix = f"{plugin}/" if plugin else ""
        for listed in entries:
            lst: os.stat_result | None = None
            unreachable: str | None = None
            try:
                lst = listed.stat(follow_symlinks=False)
                st = os.stat(listed.path) if stat.S_ISLNK(lst.st_mode) else lst
            except OSError as exc:
                unreachable = _unreachable(Path(listed.path), exc)
            cand = Candidate(
                name=prefix + shown(listed.name),
                file=listed.path,
                location=location,
                plugin=plugin,
                plugin_root=plugin_root,
                lstat=lst,
                seq=len(todo) + len(skipped),
            )
            if unreachable is not None:
                skipped.append(DiscoveredHook.not_run(cand, unreachable))
                continue
            if listed.name.endswith(DISABLE_SUFFIX):
                skipped.append(DiscoveredHook.not_run(cand, "renamed to .disable", Status.DISABLED))
                continue
            if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111:
                what = A_DIRECTORY if stat.S_ISDIR(st.st_mode) else NOT_EXECUTABLE
                skipped.append(DiscoveredHook.not_run(cand, what, hook=False))
                continue
            if cand.name in seen:
                above = seen[cand.name].path
                why = f"shadowed by {above} (same name, higher up)"
                skipped.append(DiscoveredHook.not_run(cand, why, shadowed_by=above))
                continue
            seen[cand.name] = cand
            todo.append((cand, trust_root))
    return todo, skipped


def skip_fix(hook: DiscoveredHook) -> str | None:
    """How to make a file that will not run into a hook that runs, in the words of
    its reason (written here, beside the reasons): None for a hook switched off or
    shadowed on purpose."""
    if hook.status is not Status.SKIPPED or hook.shadowed_by is not None:
        return None
    path, why = shlex.quote(shown(hook.path)), hook.reason
    if why == NOT_EXECUTABLE:
        return f"chmod +x {path}"
    if why == A_DIRECTORY:
        return None
    if why == UNKNOWN_NAME:
        name = json.dumps(hook.name, ensure_ascii=False)
        return f"restore the hook, or remove [hooks.{name}] from {hook.path}"
    if why.startswith("hooks directory unreadable"):
        return f"chmod u+rx {path}"
    why = why.removeprefix("untrusted: ")
    writable = re.fullmatch(r"(.+?) is (?:group- or world-writable|group-writable by .*)", why)
    if writable:
        return f"chmod go-w {shlex.quote(writable[1])}"
    owned = re.fullmatch(r"(.+) is owned by uid \d+, .*", why)
    if owned:
        return f"make {owned[1]} yours (chown) after checking it, or remove it"
    if why.startswith(("dangling symlink", "symlink loop", "symlink target")):
        return f"point the link {path} at an existing file, or remove it"
    interpreter = re.search(r"interpreter (.+?) \(its #!", why)
    if interpreter:
        return f"install {interpreter[1]}, or fix the #! line of {path}"
    if why.startswith("not run: "):
        return None  # looked at without running (--no-exec, --no-hooks): nothing to fix
    if why.startswith("'hook' query"):
        return f"make `{path} hook` print its event; run it to see what goes wrong"
    return f"run `{path} hook` to see why it cannot start"


def _unreachable(entry: Path, exc: OSError) -> str:
    """Why a directory entry cannot be looked at: the words a user can act on."""
    if entry.is_symlink():
        try:
            target = os.readlink(entry)
        except OSError:
            target = "?"
        if exc.errno == errno.ELOOP:
            return f"symlink loop ({shown(target)})"
        if exc.errno == errno.ENOENT:
            return f"dangling symlink to {shown(target)}"
        return f"symlink target {shown(target)} unreachable: {exc.strerror or exc}"
    return f"cannot stat: {exc.strerror or exc}"


def missing_interpreter(path: str | Path, env: Mapping[str, str] | None = None) -> str | None:
    """Why the program on the hook's ``#!`` line cannot be found, or None.

    A shebang naming this machine's venv (``#!/home/me/venv/bin/python``) fails on a
    teammate's checkout with a bare "No such file or directory"; this names the
    missing interpreter instead. ``#!/usr/bin/env NAME`` is looked up on the PATH
    the hook runs with. Only the first line is read; nothing is run. A hook kodelet
    runs with its own Python (:mod:`.interpreter`) needs none from the PATH."""
    if own_python(os.fspath(path)):
        return None
    try:
        with open(path, "rb") as fh:
            first = fh.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    line = first[2:].strip().decode("utf-8", "backslashreplace")
    words = line.split()
    if not words:
        return "its #! line names no interpreter"
    interpreter = words[0]
    if not os.access(interpreter, os.X_OK):
        return f"interpreter {interpreter} (its #! line) not found"
    if os.path.basename(interpreter) == "env":
        program = next((w for w in words[1:] if not w.startswith("-") and "=" not in w), None)
        search = (os.environ if env is None else env).get("PATH", os.defpath)
        if program is not None and shutil.which(program, path=search) is None:
            return f"interpreter {program!r} (its #!{line} line) not found on PATH"
    return None


Answer = tuple[Event, tuple[str, ...]]


def _query_env(env: Mapping[str, str] | None) -> dict[str, str]:
    qenv = dict(os.environ if env is None else env)
    qenv["KODELET_HOOK_PROTOCOLS"] = Protocol.JSONL.value
    return qenv


class NotStarted(KodeletError, ValueError):
    """The query never ran (busy file, no memory): worth asking again, not caching."""


def _answer(res: ProcessResult | SpawnError) -> Answer:
    """What one ``hook`` query said; ``ValueError`` says why the hook cannot be used."""
    if isinstance(res, SpawnError):
        raise NotStarted(str(res.strerror))
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
            command(str(path), "hook"),
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
    paths: Sequence[Path],
    env: Mapping[str, str] | None = None,
    *,
    limit: int = BATCH_LIMIT,
    fresh: object = (),
) -> list[Answer | ValueError]:
    """:func:`query_event` for many files at once: each answer, or the ``ValueError``
    that would have been raised, in the order of ``paths``.

    All queries are started from this thread and read in one selector loop (at
    most ``limit`` at a time), each with its own timeout: cheaper than a thread
    per query, and many hooks that hang cost one timeout, not one each.
    ``fresh`` (paths never answered from a cache) means nothing here: all are asked."""
    qenv = _query_env(env)
    jobs = [Job(argv=tuple(command(str(p), "hook")), cwd=str(p.parent), env=qenv) for p in paths]
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
    peek = peek if callable(peek) else None
    many: Any = getattr(query, "query_many", None)
    if query is None:
        many = functools.partial(query_events, env=env)
    todo, found = scan(places)

    debug = log.isEnabledFor(logging.DEBUG)

    def settle(cand: Candidate, answer: tuple[Event, tuple[str, ...]]) -> DiscoveredHook:
        event, protocols = answer
        if debug:
            log.debug("hook %s handles %s (%s)", cand.name, event.value, cand.path)
        return DiscoveredHook(
            candidate=cand, event=event, status=Status.ACTIVE, protocols=protocols
        )

    def skip(cand: Candidate, exc: ValueError) -> DiscoveredHook:
        # A failed query is where a missing interpreter or module shows: say which one.
        why = missing_interpreter(cand.file, env) or explain(str(exc), cand.file)
        log.warning("hook %s skipped: %s", cand.name, why)
        return DiscoveredHook.not_run(cand, why)

    def one(cand: Candidate) -> DiscoveredHook:
        try:
            if cand.path in fresh and peek is not None:
                cached: Any = query
                answer = cached(cand.path, fresh=True)
            else:
                answer = ask(cand.path)
        except ValueError as exc:
            return skip(cand, exc)
        return settle(cand, answer)

    results: list[DiscoveredHook | None] = []
    pending: list[tuple[int, Candidate]] = []
    fresh: list[Path] = []
    memo: dict[Any, Any] = {}
    users = UserDatabase()
    for cand, trust_root in todo:
        why = _untrusted(cand.file, trust_root, memo, cand.lstat, users)
        if why:
            results.append(DiscoveredHook.not_run(cand, f"untrusted: {why}"))
            continue
        # A hook marked fail_closed is always asked: no cache entry may move it off its event.
        guarded = config is not None and config.fails_closed(cand.name, by_default=False)
        known = peek(cand.file, st=cand.lstat) if peek is not None and not guarded else None
        if config is not None and not config.hook_enabled(cand.name):
            # Disabled means not run, not even asked: the event is shown only if cached.
            event = known[0] if isinstance(known, tuple) else None
            protocols = known[1] if isinstance(known, tuple) else ()
            results.append(
                DiscoveredHook.not_run(
                    cand, DISABLED_IN_CONFIG, Status.DISABLED, event=event, protocols=protocols
                )
            )
        elif isinstance(known, ValueError):
            results.append(skip(cand, known))
        elif known is not None:
            results.append(settle(cand, known))
        else:
            if guarded:
                fresh.append(cand.path)
            pending.append((len(results), cand))
            results.append(None)

    answers: list[DiscoveredHook]
    if callable(many) and len(pending) > 1:
        cands = [c for _, c in pending]
        kw: dict[str, Any] = {"fresh": fresh} if fresh else {}
        asked = many([c.path for c in cands], limit=workers or BATCH_LIMIT, **kw)
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


def inspect(
    places: Places, config: Config, *, why: str, peek: Any = None, natives: Iterable[str] = ()
) -> list[DiscoveredHook]:
    """Every hook file with its trust verdict, found without running anything: the
    look at an untrusted checkout. ``peek`` (the discovery cache's) supplies the
    events answered before; ``why`` says why the rest were not asked."""
    todo, found = scan(places)
    memo: dict[Any, Any] = {}
    users = UserDatabase()
    looked: list[DiscoveredHook] = []
    for cand, trust_root in todo:
        untrusted = _untrusted(cand.path, trust_root, memo, users=users)
        known = peek(cand.path) if callable(peek) and not untrusted else None
        answer = known if isinstance(known, tuple) else None
        if untrusted:
            status, reason = Status.SKIPPED, f"untrusted: {untrusted}"
        elif not config.hook_enabled(cand.name):
            status, reason = Status.DISABLED, DISABLED_IN_CONFIG
        elif isinstance(known, ValueError):
            status, reason = Status.SKIPPED, f"not run: {why}; last answer failed: {known}"
        else:
            cached = "event from the discovery cache" if answer else "event unknown"
            status, reason = Status.SKIPPED, f"not run: {why}; trusted, {cached}"
        missing = None if untrusted or status is Status.DISABLED else missing_interpreter(cand.file)
        if missing:
            reason += f"; {missing}"
        looked.append(
            DiscoveredHook(
                candidate=cand,
                event=answer[0] if answer else None,
                status=status,
                reason=reason,
                protocols=answer[1] if answer else (),
            )
        )
    known_names = hook_names([*looked, *found]) | set(natives)
    return _in_order(looked, [*found, *unknown_hooks(places, config, known_names, quiet=True)])


def hook_names(found: Iterable[DiscoveredHook]) -> set[str]:
    """The names these files answer to in config.toml, ``.disable`` renames included
    (a hook switched off that way is known, not a typo)."""
    names: set[str] = set()
    for hook in found:
        names.add(hook.name)
        names.add(hook.name.removesuffix(DISABLE_SUFFIX))
    return names


def scanned_names(places: Places) -> set[str]:
    """:func:`hook_names` of every file in the hooks directories, found without running any."""
    todo, skipped = scan(places)
    return {c.name for c, _ in todo} | hook_names(skipped)


def unknown_names(config: Config, known: set[str]) -> list[str]:
    """``[hooks."<name>"]`` tables and ``[hooks] disabled`` entries naming nothing known."""
    return sorted({n for n in config.named_hooks() if n not in known})


def unknown_hooks(
    places: Places, config: Config, known: set[str], *, quiet: bool = False
) -> list[DiscoveredHook]:
    """A skipped entry per unknown name with a ``[hooks."<name>"]`` table: with its
    own ``fail_closed = true`` it claims a guard and gets a blocking stand-in, as a
    hook that cannot run does, so a typo or an unreadable directory never silently
    drops a guardrail. A table without it (a timeout left behind) blocks nothing."""
    found = []
    for name in unknown_names(config, known):
        if not quiet:
            log.warning(
                'config.toml names hook "%s", but no hook or plugin has that name', shown(name)
            )
        if name not in config.hooks:
            continue
        source = config.sources.get(f'hooks."{name}".fail_closed') or str(places.local_root)
        cand = Candidate(name=name, file=source, location=Location.LOCAL)
        found.append(DiscoveredHook.not_run(cand, UNKNOWN_NAME, hook=False))
    return found


def _in_order(
    queried: Iterable[DiscoveredHook], skipped: Iterable[DiscoveredHook]
) -> list[DiscoveredHook]:
    """Queried hooks keep scan order; the statically skipped ones follow."""
    return [*queried, *skipped]
