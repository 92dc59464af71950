"""Where kodelet looks for things, and how each root is laid out on disk.

Two roots only: the repo-local ``<cwd>/.kodelet`` and the global one
(``$KODELET_HOME``, else ``~/.kodelet``). Every path below a root is spelled
here and nowhere else: hooks, plugin repositories (``plugins/org@repo``, shown to
users as ``org/repo``), their hooks, recipes and skills, config.toml and the cache.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs

from .kinds import Location
from .warm import protocol

HOOKS = "hooks"
PLUGINS = "plugins"
RECIPES = "recipes"
SKILLS = "skills"
CACHE = "cache"
AUDIT = "audit"
"""The decision log's folder (:mod:`kodelet.audit`), under the global root only."""
CONFIG_FILE = "config.toml"
# What a plugin repository may bring; anything else in it is not installed.
PLUGIN_PARTS = (SKILLS, RECIPES, HOOKS)
# A hook renamed ``NAME.disable`` is kept but never run (the seeds' convention).
DISABLE_SUFFIX = ".disable"


def plugin_name(dirname: str) -> str:
    """``org@repo`` on disk is ``org/repo`` to users."""
    return dirname.replace("@", "/", 1)


def plugin_dirname(name: str) -> str:
    """``org/repo`` to users is ``org@repo`` on disk."""
    org, repo = name.split("/", 1)
    return f"{org}@{repo}"


def hooks_dir(root: Path) -> Path:
    return root / HOOKS


def plugins_dir(root: Path) -> Path:
    return root / PLUGINS


def recipes_dir(root: Path) -> Path:
    return root / RECIPES


def config_file(root: Path) -> Path:
    return root / CONFIG_FILE


def cache_dir(root: Path) -> Path:
    return root / CACHE


def audit_dir(root: Path) -> Path:
    return root / AUDIT


def claude_layout(tree: Path) -> bool:
    """Whether ``tree`` is a plugin in Claude Code's layout (docs/CLAUDE.md)."""
    return (tree / HOOKS / "hooks.json").is_file() or (
        tree / ".claude-plugin" / "plugin.json"
    ).is_file()


def plugin_root(record: Path) -> Path:
    """The directory an installed plugin repository's files are in.

    A Claude-layout plugin is installed one level down, in a directory named as its
    author named it (``org@repo/<name>/``), because its scripts may import the plugin
    by that name (``from <name>.core import ...`` with ``dirname(CLAUDE_PLUGIN_ROOT)``
    on ``sys.path``); ``org@repo/`` then holds only kodelet's manifest beside it.
    Everything else, and a Claude-layout plugin installed in place by an earlier
    kodelet, is ``record`` itself."""
    if claude_layout(record):
        return record
    try:
        with os.scandir(record) as it:
            visible = [e for e in it if not e.name.startswith(".")]
    except OSError:
        return record
    if len(visible) == 1 and visible[0].is_dir(follow_symlinks=False):
        inner = Path(visible[0].path)
        if claude_layout(inner):
            return inner
    return record


def installed_plugins(root: Path) -> Iterator[tuple[str, Path]]:
    """(``org/repo``, :func:`plugin_root`) of each plugin repository under ``root``, by name.

    Hidden entries are installs in progress and lock files, never plugins."""
    try:
        entries = sorted(
            p for p in plugins_dir(root).iterdir() if p.is_dir() and not p.name.startswith(".")
        )
    except OSError:
        return
    for pdir in entries:
        yield plugin_name(pdir.name), plugin_root(pdir)


def hook_file(root: Path, name: str) -> Path:
    """The file of hook ``name`` (``name`` or ``org/repo/name``) under ``root``."""
    parts = name.split("/")
    if len(parts) == 3:
        return plugins_dir(root) / plugin_dirname("/".join(parts[:2])) / HOOKS / parts[2]
    return hooks_dir(root) / name


def find_project(
    cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Path:
    """The project a working directory belongs to (``cwd`` defaults to this process's,
    ``env`` to its environment), by the rule :func:`kodelet.warm.protocol.find_project`
    states: an agent's shell wanders (``cd src``, ``cd vendor/lib`` into a nested
    repository) and its guards must not stay behind.

    The warm kodelet's lean client finds projects without importing kodelet; this is
    its function, so the two can never disagree on which project a call is for."""
    return Path(
        protocol.find_project(os.fspath(cwd or os.getcwd()), os.environ if env is None else env)
    )


@attrs.frozen
class Places:
    cwd: Path
    global_root: Path

    @property
    def local_root(self) -> Path:
        return self.cwd / ".kodelet"

    @classmethod
    def resolve(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Places:
        """``home`` wins, then ``$KODELET_HOME``, then ``~/.kodelet``."""
        env = os.environ if env is None else env
        if home is None:
            home = env.get("KODELET_HOME") or Path(env.get("HOME") or Path.home()) / ".kodelet"
        return cls(cwd=Path(cwd or os.getcwd()).absolute(), global_root=Path(home).absolute())

    def roots(self) -> list[tuple[Location, Path]]:
        """(location, root) in precedence order: repo-local first."""
        return [(Location.LOCAL, self.local_root), (Location.GLOBAL, self.global_root)]

    def root(self, location: Location) -> Path:
        return self.local_root if location is Location.LOCAL else self.global_root

    def config_files(self) -> list[tuple[Location, Path]]:
        """Config files in the order they are read: the later wins key by key."""
        return [(loc, config_file(root)) for loc, root in reversed(self.roots())]
