"""Plugin repositories: skills, recipes and hooks installed from git or a directory.

A plugin repository lands in ``<root>/plugins/org@repo/`` (``org/repo`` to users); a
plugin in Claude Code's layout lands one level down, in ``org@repo/<name>/``, named
as its author named it (:func:`kodelet.places.plugin_root` says why).
Installing is all-or-nothing: the copy is built in a hidden temp dir beside the
target and renamed into place, so a host discovering hooks at the same moment sees
either the old plugin or the new one, never half of one. Installs and removals of
the same name are serialized by a lock file, and nothing is written or deleted
outside the plugins root: a repository is untrusted input.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import errno
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from . import jsonio
from .config import MAX_TIMEOUT
from .errors import KodeletError
from .places import PLUGIN_PARTS, Places, claude_layout, plugin_dirname, plugin_name, plugin_root
from .places import plugins_dir as places_plugins_dir
from .process import SpawnError, run_process

log = logging.getLogger("kodelet.repos")

PLUGIN_DIRS = PLUGIN_PARTS
MANIFEST = ".kodelet-plugin.json"
CLAUDE_MANIFEST = ".claude-plugin/plugin.json"
GIT_BASE_ENV = "KODELET_PLUGIN_GIT_BASE"
DEFAULT_GIT_BASE = "https://github.com"
GIT_TIMEOUT_ENV = "KODELET_GIT_TIMEOUT"
GIT_TIMEOUT = 120.0
"""Seconds one git command may take before its whole process group is killed: a
plugin repository clones in seconds, and a remote that stopped answering (or a git
that was stopped) is given up in two minutes, not ten."""
INSTALL_MAX_BYTES = 200 * 1024 * 1024
INSTALL_MAX_ENTRIES = 20_000
MANIFEST_CAP = 1024 * 1024
_COPY_CHUNK = 1024 * 1024

_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_SCP_URL = re.compile(r"^[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:")


class RepoError(KodeletError):
    """An add or remove that cannot be done; the message says why in one line."""


class PluginExists(RepoError):
    pass


class UnknownPlugin(RepoError):
    pass


@attrs.frozen(kw_only=True)
class PluginSource:
    """Where a plugin comes from, resolved from what the user typed."""

    spec: str
    kind: str  # "git" | "dir"
    location: str  # a git URL, or an absolute directory path
    name: str  # "org/repo"


@attrs.frozen(kw_only=True)
class InstalledRepo:
    """An installed plugin repository as ``plugins list`` shows it."""

    name: str
    location: str  # "local" | "global"
    path: Path
    skills: tuple[str, ...] = ()
    recipes: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()
    manifest: Mapping[str, Any] | None = None
    error: str | None = None

    @property
    def root(self) -> Path:
        """Where the plugin's files are (:func:`kodelet.places.plugin_root`)."""
        return plugin_root(self.path)

    @property
    def version_label(self) -> str:
        """The manifest's ref and commit, the closest thing a repository has to a version."""
        if not self.manifest:
            return ""
        ref = self.manifest.get("ref")
        commit = self.manifest.get("commit")
        short = commit[:7] if isinstance(commit, str) else ""
        if ref and short:
            return f"{ref} ({short})"
        return str(ref or short)


def check_name(name: str) -> str:
    """Validate ``org/repo`` (``org@repo`` is accepted too) and return ``org/repo``."""
    parts = name.replace("@", "/", 1).split("/") if "/" not in name else name.split("/")
    if len(parts) != 2 or not all(_PART.fullmatch(p) for p in parts):
        raise RepoError(
            f"invalid plugin name {name!r}: expected org/repo (letters, digits, '_', '-', '.')"
        )
    return "/".join(parts)


def dir_name(name: str) -> str:
    return plugin_dirname(check_name(name))


def plugins_dir(places: Places, *, global_: bool) -> Path:
    return places_plugins_dir(places.global_root if global_ else places.local_root)


def _strip_git(part: str) -> str:
    return part[: -len(".git")] if part.endswith(".git") else part


def _name_from_path(path: str, spec: str) -> str:
    parts = [_strip_git(p) for p in path.replace(":", "/").split("/") if p and p != "."]
    if len(parts) < 2:
        raise RepoError(f"cannot tell the plugin name from {spec!r}: pass --name org/repo")
    try:
        return check_name("/".join(parts[-2:]))
    except RepoError:
        raise RepoError(
            f"cannot tell the plugin name from {spec!r} ({'/'.join(parts[-2:])!r} is not a "
            f"valid org/repo): pass --name org/repo"
        ) from None


def _is_git_checkout(path: Path) -> bool:
    return (path / ".git").exists() or (
        (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()
    )


def parse_source(
    spec: str,
    *,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    base: Path | None = None,
) -> PluginSource:
    """Resolve SOURCE: an existing directory, a git URL, or ``org/repo`` shorthand.

    An existing directory wins over the shorthand, so ``./org/repo`` and ``org/repo``
    mean the same thing when such a directory exists."""
    env = os.environ if env is None else env
    if not spec.strip():
        raise RepoError("empty plugin source")
    local = Path(spec).expanduser()
    if not local.is_absolute():
        local = (base or Path.cwd()) / local
    if "://" not in spec and local.is_dir():
        real = Path(os.path.realpath(local))
        kind = "git" if _is_git_checkout(real) else "dir"
        return PluginSource(
            spec=spec,
            kind=kind,
            location=str(real),
            name=check_name(name) if name else _name_from_path(str(real), spec),
        )
    if "://" in spec or _SCP_URL.match(spec):
        path = spec.split("://", 1)[1] if "://" in spec else spec.split(":", 1)[1]
        if "://" in spec:
            path = path.split("/", 1)[1] if "/" in path else ""
        path = path.split("?", 1)[0].split("#", 1)[0]
        return PluginSource(
            spec=spec,
            kind="git",
            location=spec,
            name=check_name(name) if name else _name_from_path(path, spec),
        )
    parts = spec.split("/")
    if len(parts) == 2 and all(_PART.fullmatch(p) for p in parts):
        git_base = (env.get(GIT_BASE_ENV) or DEFAULT_GIT_BASE).rstrip("/")
        return PluginSource(
            spec=spec,
            kind="git",
            location=f"{git_base}/{spec}",
            name=check_name(name)
            if name
            else check_name(_strip_git(parts[0]) + "/" + _strip_git(parts[1])),
        )
    raise RepoError(f"plugin source {spec!r} is not an existing directory, a git URL or org/repo")


# -- reading installed plugins ------------------------------------------------


def _visible(entries: Iterator[os.DirEntry[str]]) -> list[os.DirEntry[str]]:
    return sorted((e for e in entries if not e.name.startswith(".")), key=lambda e: e.name)


def _scan_skills(path: Path) -> tuple[str, ...]:
    try:
        with os.scandir(path) as it:
            return tuple(e.name for e in _visible(it) if e.is_dir())
    except OSError:
        return ()


def _scan_recipes(path: Path) -> tuple[str, ...]:
    """Recipe names are paths below ``recipes/`` without ``.md``, as Kodelet names fragments."""
    names: list[str] = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel = Path(dirpath).relative_to(path)
        for fn in sorted(filenames):
            if fn.endswith(".md") and not fn.startswith("."):
                names.append((rel / fn[: -len(".md")]).as_posix())
    return tuple(sorted(names))


def _scan_hooks(path: Path) -> tuple[str, ...]:
    try:
        with os.scandir(path) as it:
            return tuple(e.name for e in _visible(it) if not e.is_dir())
    except OSError:
        return ()


def read_repo(path: Path, location: str) -> InstalledRepo:
    manifest: dict[str, Any] | None = None
    error: str | None = None
    mpath = path / MANIFEST
    try:
        loaded = jsonio.loads(jsonio.read_file(mpath, "a manifest", cap=MANIFEST_CAP), MANIFEST)
    except FileNotFoundError:
        pass
    except ValueError as exc:
        error = f"unreadable manifest {MANIFEST}: {exc}"
    else:
        if isinstance(loaded, dict):
            manifest = loaded
        else:
            error = f"unreadable manifest {MANIFEST}: not a JSON object"
    root = plugin_root(path)
    return InstalledRepo(
        name=plugin_name(path.name),
        location=location,
        path=path,
        skills=_scan_skills(root / "skills"),
        recipes=_scan_recipes(root / "recipes"),
        hooks=_scan_hooks(root / "hooks"),
        manifest=manifest,
        error=error,
    )


def list_repos(places: Places) -> list[InstalledRepo]:
    """Installed plugin repositories, repo-local first, each root sorted by name."""
    found: list[InstalledRepo] = []
    for location, root in places.roots():
        try:
            with os.scandir(places_plugins_dir(root)) as it:
                dirs = [Path(e.path) for e in _visible(it) if e.is_dir()]
        except OSError:
            continue
        found.extend(read_repo(d, location) for d in dirs)
    return found


# -- locking -------------------------------------------------------------------


@contextlib.contextmanager
def locked(plugins: Path, name: str, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold ``<plugins>/.org@repo.lock`` exclusively.

    The lock file is deleted on release so a finished install leaves nothing behind;
    a waiter that then wakes up holding the deleted file notices and locks anew."""
    path = plugins / f".{dir_name(name)}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                fcntl.flock(fd, fcntl.LOCK_EX)
            mine = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
        except BaseException:
            os.close(fd)
            raise
        if current is not None and (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino):
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)


# -- installing ----------------------------------------------------------------


def _within(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _git_env(env: Mapping[str, str]) -> dict[str, str]:
    """git, non-interactive, and giving up on a remote that trickles (HTTP: below
    1 KB/s for 30 s); the overall timeout covers every other transport."""
    genv = dict(env)
    genv["GIT_TERMINAL_PROMPT"] = "0"
    genv.setdefault("GIT_HTTP_LOW_SPEED_LIMIT", "1000")
    genv.setdefault("GIT_HTTP_LOW_SPEED_TIME", "30")
    return genv


def git_timeout(env: Mapping[str, str]) -> float:
    """Seconds one git command may take: ``KODELET_GIT_TIMEOUT``, else GIT_TIMEOUT."""
    raw = env.get(GIT_TIMEOUT_ENV)
    if not raw:
        return GIT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_TIMEOUT:
        raise RepoError(f"{GIT_TIMEOUT_ENV}: expected seconds up to {MAX_TIMEOUT:g}, got {raw!r}")
    return value


def _git(args: list[str], env: Mapping[str, str], cwd: Path | None = None) -> str:
    """Run git in its own process group, killed whole (ssh, remote helpers) on timeout."""
    timeout = git_timeout(env)
    try:
        res = run_process(
            ["git", *args],
            b"",
            cwd=str(cwd) if cwd is not None else None,
            env=_git_env(env),
            timeout=timeout,
        )
    except SpawnError as exc:
        if exc.errno == errno.ENOENT and (cwd is None or cwd.is_dir()):
            raise RepoError("git is not installed; it is needed to add a plugin from git") from None
        raise RepoError(f"git {args[0]} failed: {exc.strerror}") from None
    stderr = res.stderr.decode("utf-8", "replace")
    if res.timed_out:
        raise RepoError(f"git {args[0]} gave no result in {timeout:g}s; nothing installed")
    if res.returncode != 0:
        raise RepoError(f"git {args[0]} failed: {_git_reason(stderr, res.returncode or 0)}")
    return res.stdout.decode("utf-8", "replace").strip()


def _git_reason(stderr: str, returncode: int) -> str:
    """The line of git's stderr that says what went wrong.

    git explains a failure over several lines, the cause first ("fatal: ...
    does not appear to be a git repository", "remote: Repository not found.")
    and generic advice after it, so the first fatal/error line is the one to show.
    """
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for prefix in ("fatal:", "error:"):
        for line in lines:
            if line.startswith(prefix):
                return line
    noise = ("Cloning into", "hint:", "Please make sure", "and the repository exists")
    meaningful = [ln for ln in lines if not ln.startswith(noise)]
    if meaningful:
        return meaningful[0]
    return f"exit status {returncode}"


def _clone(src: PluginSource, dest: Path, ref: str | None, env: Mapping[str, str]) -> str | None:
    """Clone and check out ``ref`` (tag, branch or commit); returns the commit checked out."""
    _git(["clone", "--quiet", "--no-checkout", "--", src.location, str(dest)], env)
    if ref is None:
        try:
            commit = _git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], env, dest)
        except RepoError:
            return None  # an empty repository: nothing to check out
    else:
        commit = ""
        for candidate in (ref, f"origin/{ref}"):
            with contextlib.suppress(RepoError):
                commit = _git(
                    ["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"], env, dest
                )
                break
        if not commit:
            raise RepoError(f"--ref {ref}: no such tag, branch or commit in {src.location}")
    _git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit], env, dest)
    return commit


class _Copier:
    """Copies a repository's plugin directories into the staging directory.

    A repository is untrusted input: nothing outside it is read, nothing outside
    the staging directory written, and the copy is bounded (INSTALL_MAX_BYTES,
    INSTALL_MAX_ENTRIES). A symlink whose target lies inside what is installed is
    copied as a (relative) link, so a fan-out of links costs a link each, not a
    copy each; one pointing elsewhere in the repository is copied as what it
    points to, and a loop through such links is refused. Modes are kept, minus
    group and world write (which would make a hook untrusted) and special bits."""

    def __init__(self, repo: str, staging: Path, installed: tuple[str, ...]) -> None:
        self.repo = repo
        self.staging = staging
        self.installed = tuple(os.path.join(repo, d) for d in installed)
        self.bytes = 0
        self.entries = 0

    def _count(self, rel: str, size: int = 0) -> None:
        self.entries += 1
        self.bytes += size
        if self.entries > INSTALL_MAX_ENTRIES:
            raise RepoError(
                f"{rel}: more than {INSTALL_MAX_ENTRIES} files and directories; not installed"
            )
        if self.bytes > INSTALL_MAX_BYTES:
            raise RepoError(f"{rel}: more than {INSTALL_MAX_BYTES} bytes in all; not installed")

    def copy(self, src: Path, dst: Path, rel: str, active: frozenset[str] = frozenset()) -> None:
        real = os.path.realpath(src)
        link = os.path.islink(src)
        if not _within(real, self.repo):
            what = "symlink" if link else "path"
            raise RepoError(
                f"{what} {rel} points outside the repository (to {real}); not installed"
            )
        if not _within(os.path.abspath(dst), str(self.staging)):
            raise RepoError(f"{rel} would be written outside the plugin directory; not installed")
        if real in active:
            raise RepoError(f"symlink {rel} makes a loop; not installed")
        try:
            st = os.stat(real)
        except FileNotFoundError:
            log.warning("skipping broken symlink %s", rel)
            return
        if link and any(_within(real, d) for d in self.installed):
            mirror = self.staging / os.path.relpath(real, self.repo)
            self._count(rel)
            os.symlink(os.path.relpath(mirror, dst.parent), dst)
            return
        if stat.S_ISDIR(st.st_mode):
            self._count(rel)
            dst.mkdir(mode=0o700)
            for entry in sorted(os.listdir(real)):
                self.copy(Path(real) / entry, dst / entry, f"{rel}/{entry}", active | {real})
            os.chmod(dst, (st.st_mode & 0o755) | 0o700)
        elif stat.S_ISREG(st.st_mode):
            self._count(rel, st.st_size)
            with open(real, "rb") as fin, open(dst, "xb") as fout:
                left = INSTALL_MAX_BYTES - self.bytes + st.st_size
                while chunk := fin.read(min(_COPY_CHUNK, left + 1)):
                    left -= len(chunk)
                    if left < 0:
                        raise RepoError(f"{rel}: grew while being copied; not installed")
                    fout.write(chunk)
            os.chmod(dst, st.st_mode & 0o755)
        else:
            raise RepoError(f"{rel} is not a regular file or directory; not installed")


# renameat2(2): swap two paths in one step, so a re-install never shows "no plugin".
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap ``a`` and ``b``; False where the system or file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap(staging: Path, target: Path) -> None:
    """Put ``staging`` at ``target``.

    An existing plugin is exchanged with the new one in one ``renameat2`` call and
    then deleted: a host discovering hooks at any moment sees the old plugin or
    the new one. Where the kernel or file system cannot exchange, the old plugin is
    moved aside and the new one renamed in, a window of two system calls."""
    if not os.path.lexists(target):
        os.rename(staging, target)
        return
    if _exchange(staging, target):
        _delete(staging)  # the old plugin, now
        return
    old = target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old, target)
        raise
    _delete(old)


def _delete(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


_WORK_KINDS = ("tmp", "old", "del", "clone")


def _clean_leftovers(plugins: Path, dirname: str) -> None:
    """Remove what killed installs of this plugin left (staging copies, clones, old
    copies). Called with the plugin's lock held: nothing else is using them."""
    prefixes = tuple(f".{dirname}.{kind}-" for kind in _WORK_KINDS)
    try:
        with os.scandir(plugins) as it:
            doomed = [Path(e.path) for e in it if e.name.startswith(prefixes)]
    except OSError:
        return
    for path in doomed:
        with contextlib.suppress(OSError):
            _delete(path)


def _clean_legacy_tmp(now: float) -> None:
    """Earlier versions cloned into ``$TMPDIR/kodelet-plugin-*``, and a killed install
    left that behind. Remove ours (owned by this user, a real directory) once they are
    an hour old: no install takes that long (git gives up well before)."""
    tmp = tempfile.gettempdir()
    try:
        with os.scandir(tmp) as it:
            names = [e.name for e in it if e.name.startswith("kodelet-plugin-")]
    except OSError:
        return
    for name in names:
        path = os.path.join(tmp, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and now - st.st_mtime > 3600:
            shutil.rmtree(path, ignore_errors=True)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def claude_plugin_name(src: PluginSource, tree: Path) -> str:
    """The directory name a Claude-layout plugin runs from: the ``name`` in its
    .claude-plugin/plugin.json, else the repository's own directory name."""
    manifest = tree / CLAUDE_MANIFEST
    if os.path.lexists(manifest):
        real = os.path.realpath(manifest)
        if not _within(real, os.path.realpath(tree)):
            raise RepoError(
                f"{CLAUDE_MANIFEST} points outside the repository (to {real}); not installed"
            )
        try:
            data = jsonio.loads(
                jsonio.read_file(manifest, "a plugin manifest", cap=MANIFEST_CAP), CLAUDE_MANIFEST
            )
        except (OSError, ValueError) as exc:
            raise RepoError(f"{src.spec}: {exc}; nothing installed") from None
        name = data.get("name") if isinstance(data, dict) else None
        if name is not None:
            if not isinstance(name, str) or not _PART.fullmatch(name):
                raise RepoError(
                    f"{src.spec}: {CLAUDE_MANIFEST} names the plugin {name!r}, which cannot be a"
                    " directory name; nothing installed"
                )
            return name
    last = _strip_git(re.split(r"[/:]", src.location.rstrip("/"))[-1])
    return last if _PART.fullmatch(last) else src.name.split("/")[1]


def add(
    src: PluginSource,
    plugins: Path,
    *,
    location: str,
    ref: str | None = None,
    force: bool = False,
    env: Mapping[str, str] | None = None,
    on_wait: Callable[[], None] | None = None,
) -> InstalledRepo:
    """Install ``src`` as ``<plugins>/org@repo``; on any failure nothing is left behind.

    The clone and the copy are made in hidden directories beside the target
    (``.org@repo.clone-*``, ``.org@repo.tmp-*``), under the plugin's lock; what a
    killed install left there is removed by the next one."""
    env = os.environ if env is None else env
    target = plugins / dir_name(src.name)
    if ref is not None:
        if not ref or ref.startswith("-"):
            raise RepoError(f"--ref {ref!r}: not a tag, branch or commit")
        if src.kind == "dir":
            raise RepoError(f"--ref needs a git source; {src.location} is a plain directory")
    if os.path.lexists(target) and not force:
        raise PluginExists(f"plugin {src.name} is already installed at {target}; use --force")
    git_timeout(env)  # a bad KODELET_GIT_TIMEOUT fails before anything is done
    jsonio.make_private_dirs(plugins)
    with locked(plugins, src.name, on_wait):
        _clean_leftovers(plugins, target.name)
        _clean_legacy_tmp(datetime.datetime.now().timestamp())
        if os.path.lexists(target) and not force:
            raise PluginExists(f"plugin {src.name} is already installed at {target}; use --force")
        made: list[Path] = []
        try:
            commit: str | None = None
            if src.kind == "git":
                work = Path(tempfile.mkdtemp(prefix=f".{target.name}.clone-", dir=plugins))
                made.append(work)
                tree = work / "repo"
                commit = _clone(src, tree, ref, env)
            else:
                tree = Path(src.location)
            repo = os.path.realpath(tree)
            # A Claude Code plugin's hooks.json runs scripts from anywhere in the plugin
            # (${CLAUDE_PLUGIN_ROOT}/scripts/...): such a repository is installed whole,
            # in a directory of the plugin's own name.
            whole = claude_layout(tree)
            inner = claude_plugin_name(src, tree) if whole else None
            present = (
                sorted(e for e in os.listdir(tree) if e not in (".git", MANIFEST))
                if whole
                else [d for d in PLUGIN_DIRS if os.path.lexists(tree / d)]
            )
            if not present:
                raise RepoError(
                    f"{src.spec} has no skills/, recipes/ or hooks/ directory; nothing installed"
                )
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=plugins))
            made.append(staging)
            files = staging
            if inner is not None:
                files = staging / inner
                files.mkdir(mode=0o755)
            copier = _Copier(repo, files, tuple(present))
            for d in present:
                if whole:
                    copier.copy(tree / d, files / d, d)
                    continue
                if _within(os.path.realpath(tree / d), repo) and not os.path.isdir(tree / d):
                    raise RepoError(f"{d} in {src.spec} is not a directory; nothing installed")
                copier.copy(tree / d, files / d, d)
            manifest = {
                "name": src.name,
                "source": src.location,
                "ref": ref,
                "commit": commit,
                "installed_at": _now(),
            }
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            os.chmod(staging, 0o755)
            _swap(staging, target)
        finally:
            for path in made:
                if os.path.lexists(path):
                    shutil.rmtree(path, ignore_errors=True)
    return read_repo(target, location)


def remove(name: str, plugins: Path) -> Path:
    """Delete ``<plugins>/org@repo``; refuses anything that is not really directly under it."""
    name = check_name(name)
    target = plugins / dir_name(name)
    if not os.path.lexists(target):
        raise UnknownPlugin(f"no plugin {name} installed in {plugins}")
    real = os.path.realpath(target)
    if os.path.dirname(real) != os.path.realpath(plugins):
        raise RepoError(f"refusing to remove {target}: it resolves to {real}, outside {plugins}")
    with locked(plugins, name):
        if not os.path.lexists(target):
            raise UnknownPlugin(f"no plugin {name} installed in {plugins}")
        if os.path.islink(target) or not os.path.isdir(target):
            target.unlink()
            return target
        doomed = target.with_name(f".{target.name}.del-{secrets.token_hex(4)}")
        os.rename(target, doomed)
        shutil.rmtree(doomed)
    return target
