"""Plugin repositories: skills, recipes and hooks installed from git or a directory.

A plugin repository lands in ``<root>/plugins/org@repo/`` (``org/repo`` to users).
Installing is all-or-nothing: the copy is built in a hidden temp dir beside the
target and renamed into place, so a host discovering hooks at the same moment sees
either the old plugin or the new one, never half of one. Installs and removals of
the same name are serialized by a lock file, and nothing is written or deleted
outside the plugins root: a repository is untrusted input.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from .errors import KodeletError
from .places import PLUGIN_PARTS, Places, plugin_dirname, plugin_name
from .places import plugins_dir as places_plugins_dir

log = logging.getLogger("kodelet.repos")

PLUGIN_DIRS = PLUGIN_PARTS
MANIFEST = ".kodelet-plugin.json"
GIT_BASE_ENV = "KODELET_PLUGIN_GIT_BASE"
DEFAULT_GIT_BASE = "https://github.com"

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
        loaded = json.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        error = f"unreadable manifest {MANIFEST}: {exc}"
    else:
        if isinstance(loaded, dict):
            manifest = loaded
        else:
            error = f"unreadable manifest {MANIFEST}: not a JSON object"
    return InstalledRepo(
        name=plugin_name(path.name),
        location=location,
        path=path,
        skills=_scan_skills(path / "skills"),
        recipes=_scan_recipes(path / "recipes"),
        hooks=_scan_hooks(path / "hooks"),
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


def _git(args: list[str], env: Mapping[str, str], cwd: Path | None = None) -> str:
    genv = dict(env)
    genv["GIT_TERMINAL_PROMPT"] = "0"
    try:
        res = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=genv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
    except FileNotFoundError:
        raise RepoError("git is not installed; it is needed to add a plugin from git") from None
    if res.returncode != 0:
        raise RepoError(f"git {args[0]} failed: {_git_reason(res.stderr, res.returncode)}")
    return res.stdout.strip()


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


def _copy(src: Path, dst: Path, repo: str, staging: str, rel: str, active: frozenset[str]) -> None:
    """Copy one entry, materialising in-repo symlinks and refusing everything that escapes."""
    real = os.path.realpath(src)
    link = os.path.islink(src)
    if not _within(real, repo):
        what = "symlink" if link else "path"
        raise RepoError(f"{what} {rel} points outside the repository (to {real}); not installed")
    if not _within(os.path.abspath(dst), staging):
        raise RepoError(f"{rel} would be written outside the plugin directory; not installed")
    if real in active:
        raise RepoError(f"symlink {rel} makes a loop; not installed")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        log.warning("skipping broken symlink %s", rel)
        return
    if stat.S_ISDIR(st.st_mode):
        dst.mkdir(mode=0o755)
        os.chmod(dst, 0o755)
        for entry in sorted(os.listdir(real)):
            _copy(Path(real) / entry, dst / entry, repo, staging, f"{rel}/{entry}", active | {real})
    elif stat.S_ISREG(st.st_mode):
        with open(real, "rb") as fin, open(dst, "xb") as fout:
            shutil.copyfileobj(fin, fout)
        # Only the exec bit survives: group/world-writable hooks would not be trusted.
        os.chmod(dst, 0o755 if st.st_mode & 0o111 else 0o644)
    else:
        raise RepoError(f"{rel} is not a regular file or directory; not installed")


def _swap(staging: Path, target: Path) -> None:
    """Put ``staging`` at ``target``; an existing plugin is moved aside first, then deleted."""
    old: Path | None = None
    if os.path.lexists(target):
        old = target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
        os.rename(target, old)
    try:
        os.rename(staging, target)
    except BaseException:
        if old is not None:
            os.rename(old, target)
        raise
    if old is not None:
        _delete(old)


def _delete(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    """Install ``src`` as ``<plugins>/org@repo``; on any failure nothing is left behind."""
    env = os.environ if env is None else env
    target = plugins / dir_name(src.name)
    if ref is not None:
        if not ref or ref.startswith("-"):
            raise RepoError(f"--ref {ref!r}: not a tag, branch or commit")
        if src.kind == "dir":
            raise RepoError(f"--ref needs a git source; {src.location} is a plain directory")
    if os.path.lexists(target) and not force:
        raise PluginExists(f"plugin {src.name} is already installed at {target}; use --force")
    plugins.mkdir(parents=True, exist_ok=True)
    with (
        locked(plugins, src.name, on_wait),
        tempfile.TemporaryDirectory(prefix="kodelet-plugin-") as work,
    ):
        if os.path.lexists(target) and not force:
            raise PluginExists(f"plugin {src.name} is already installed at {target}; use --force")
        commit: str | None = None
        if src.kind == "git":
            tree = Path(work) / "repo"
            commit = _clone(src, tree, ref, env)
        else:
            tree = Path(src.location)
        repo = os.path.realpath(tree)
        present = [d for d in PLUGIN_DIRS if os.path.lexists(tree / d)]
        if not present:
            raise RepoError(
                f"{src.spec} has no skills/, recipes/ or hooks/ directory; nothing installed"
            )
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=plugins))
        try:
            for d in present:
                if _within(os.path.realpath(tree / d), repo) and not os.path.isdir(tree / d):
                    raise RepoError(f"{d} in {src.spec} is not a directory; nothing installed")
                _copy(tree / d, staging / d, repo, str(staging), d, frozenset())
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
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
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
