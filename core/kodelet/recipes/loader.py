"""Finding and reading recipes: markdown prompts with a YAML front matter.

Recipes are resolved by name through the same places as hooks, highest
precedence first, so a user can override a shipped recipe (``compact``) by
dropping a file of the same name into ``.kodelet/recipes/``:

1. ``<cwd>/.kodelet/recipes/<name>.md``
2. ``<cwd>/.kodelet/plugins/org@repo/recipes/`` as ``org/repo/<name>``
3. ``<global>/recipes/<name>.md``
4. ``<global>/plugins/org@repo/recipes/`` as ``org/repo/<name>``
5. recipes shipped by kodelet's built-in plugins (``<package>/recipes/``)
"""

from __future__ import annotations

import importlib.util
import logging
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from ..errors import KodeletError
from ..loading import entry_points
from ..places import Places, installed_plugins, recipes_dir

log = logging.getLogger("kodelet.recipes")

SUFFIX = ".md"
_TEMPLATE = re.compile(r"\{\{\s*\.?([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")
_NAME = re.compile(r"^[A-Za-z0-9_.@-]+(?:/[A-Za-z0-9_.@-]+)*$")


class RecipeError(KodeletError, ValueError):
    """A recipe file that cannot be used; the message starts with the file's path."""


class RecipeNotFound(KodeletError, LookupError):
    """No recipe of that name in any of the places looked at."""


@attrs.frozen(kw_only=True)
class RecipeDir:
    """One directory recipes are looked up in, and the name prefix its recipes get."""

    path: Path
    location: str  # "local" | "global" | "builtin"
    plugin: str | None = None  # "org/repo" for plugin-repo recipes

    @property
    def prefix(self) -> str:
        return f"{self.plugin}/" if self.plugin else ""


@attrs.frozen(kw_only=True)
class Recipe:
    name: str
    path: Path
    body: str
    description: str = ""
    allowed_tools: tuple[str, ...] = ()
    defaults: Mapping[str, str] = attrs.field(factory=dict)
    location: str = "builtin"
    plugin: str | None = None

    def render(self, args: Mapping[str, str] | None = None) -> str:
        """The body with ``{{ name }}`` filled from ``args``, then ``defaults``, else empty."""
        values = {**self.defaults, **(args or {})}
        return _TEMPLATE.sub(lambda m: str(values.get(m.group(1), "")), self.body)

    @property
    def variables(self) -> tuple[str, ...]:
        """Template variables the body uses, in order of first use."""
        return tuple(dict.fromkeys(m.group(1) for m in _TEMPLATE.finditer(self.body)))


def _split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            raw = "".join(lines[1:i])
            body = "".join(lines[i + 1 :])
            break
    else:
        raise RecipeError(f"{path}: front matter starts with '---' but is never closed")
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RecipeError(f"{path}: front matter is not valid YAML{where}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: front matter must be a mapping, not {type(data).__name__}")
    return data, body


def _string(data: Mapping[str, Any], key: str, path: Path) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecipeError(f"{path}: front matter {key!r} must be a string")
    return value


def _strings(data: Mapping[str, Any], key: str, path: Path) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecipeError(f"{path}: front matter {key!r} must be a list of strings")
    return tuple(value)


def _mapping(data: Mapping[str, Any], key: str, path: Path) -> dict[str, str]:
    value = data.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise RecipeError(f"{path}: front matter {key!r} must be a mapping of names to values")
    return {k: "" if v is None else str(v) for k, v in value.items()}


def read_recipe(
    path: Path, name: str | None = None, *, location: str = "local", plugin: str | None = None
) -> Recipe:
    """Parse one recipe file; ``RecipeError`` names the file and what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecipeError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise RecipeError(f"{path}: cannot read: {exc.strerror}") from None
    data, body = _split_front_matter(text, path)
    _string(data, "name", path)
    return Recipe(
        name=name or path.stem,
        path=path,
        body=body.lstrip("\n"),
        description=_string(data, "description", path),
        allowed_tools=_strings(data, "allowed_tools", path),
        defaults=_mapping(data, "defaults", path),
        location=location,
        plugin=plugin,
    )


def _builtin_recipe_dirs_by_plugin() -> Iterator[tuple[str, Path]]:
    """(plugin name, ``recipes/`` beside its module) for each built-in, found without importing."""
    for builtin, ep in entry_points():
        if not builtin:
            continue
        try:
            spec = importlib.util.find_spec(ep.module)
        except (ImportError, ValueError):
            continue
        if spec is None or spec.origin is None:
            continue
        candidate = Path(spec.origin).parent / "recipes"
        if candidate.is_dir():
            yield ep.name, candidate


def builtin_recipe_dirs() -> list[Path]:
    """``recipes/`` beside each built-in plugin's module, found without importing it."""
    dirs: list[Path] = []
    for _, candidate in _builtin_recipe_dirs_by_plugin():
        if candidate not in dirs:
            dirs.append(candidate)
    return dirs


def builtin_recipes() -> dict[str, list[str]]:
    """Each built-in plugin's recipe names, as they resolve, for ``kodelet plugins list``."""
    found: dict[str, list[str]] = {}
    for name, directory in _builtin_recipe_dirs_by_plugin():
        found[name] = [
            p.relative_to(directory).with_suffix("").as_posix() for p in _walk(directory)
        ]
    return found


def _plugin_dirs(root: Path) -> Iterator[tuple[Path, str]]:
    for name, pdir in installed_plugins(root):
        if recipes_dir(pdir).is_dir():
            yield recipes_dir(pdir), name


class RecipeLibrary:
    """Resolves recipe names to files across the five places, in precedence order."""

    def __init__(self, places: Places, *, builtin_dirs: Iterable[Path] | None = None) -> None:
        self.places = places
        self._builtin_dirs = None if builtin_dirs is None else list(builtin_dirs)

    def dirs(self) -> list[RecipeDir]:
        out: list[RecipeDir] = []
        for location, root in self.places.roots():
            out.append(RecipeDir(path=recipes_dir(root), location=location))
            for path, plugin in _plugin_dirs(root):
                out.append(RecipeDir(path=path, location=location, plugin=plugin))
        if self._builtin_dirs is None:
            self._builtin_dirs = builtin_recipe_dirs()
        out.extend(RecipeDir(path=d, location="builtin") for d in self._builtin_dirs)
        return out

    def find(self, name: str) -> tuple[Path, RecipeDir] | None:
        """The file a name resolves to (and where it was found), or None."""
        if not _NAME.match(name) or any(part in (".", "..") for part in name.split("/")):
            return None
        for rdir in self.dirs():
            if rdir.plugin:
                if not name.startswith(rdir.prefix):
                    continue
                rel = name[len(rdir.prefix) :]
            else:
                rel = name
            path = rdir.path.joinpath(*rel.split("/")).with_name(rel.split("/")[-1] + SUFFIX)
            if path.is_file():
                return path, rdir
        return None

    def load(self, name: str) -> Recipe:
        """The recipe called ``name``; ``RecipeNotFound`` or ``RecipeError`` otherwise."""
        found = self.find(name)
        if found is None:
            raise RecipeNotFound(f"no recipe named {name!r}")
        path, rdir = found
        return read_recipe(path, name, location=rdir.location, plugin=rdir.plugin)

    def available(self) -> list[tuple[str, Path, str]]:
        """(name, path, location) of every recipe that a name would resolve to."""
        seen: dict[str, tuple[str, Path, str]] = {}
        for rdir in self.dirs():
            for path in _walk(rdir.path):
                rel = path.relative_to(rdir.path).with_suffix("").as_posix()
                name = rdir.prefix + rel
                seen.setdefault(name, (name, path, rdir.location))
        return sorted(seen.values())


def _walk(directory: Path) -> Sequence[Path]:
    try:
        return sorted(p for p in directory.rglob("*" + SUFFIX) if p.is_file())
    except OSError:
        return []
