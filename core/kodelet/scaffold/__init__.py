"""``kodelet plugins new``: a native plugin project that passes its own tests as generated.

The templates are package data (``*.tmpl``) filled with :class:`string.Template`,
whose ``$name`` placeholders leave the braces of Python and TOML alone.
"""

from __future__ import annotations

import re
import shlex
from importlib import resources
from pathlib import Path
from string import Template

import attrs

from ..errors import KodeletError

__all__ = ["Names", "ScaffoldError", "create", "names_for", "next_steps"]

PREFIX = "kodelet-plugin-"
NAME_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

# template file -> path in the new project ($module is filled in)
FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "plugin.py.tmpl": "$module.py",
    "test_plugin.py.tmpl": "tests/test_$module.py",
    "README.md.tmpl": "README.md",
    "gitignore.tmpl": ".gitignore",
}


class ScaffoldError(KodeletError, ValueError):
    """A name or target directory that cannot be used; the message says which."""


@attrs.frozen
class Names:
    """Every spelling of one plugin name, derived once so they always agree."""

    name: str  # entry-point name and [plugin.<name>] table: "demo-guard"
    dist: str  # distribution: "kodelet-plugin-demo-guard"
    module: str  # import name: "kodelet_plugin_demo_guard"
    cls: str  # plugin class: "DemoGuard"


def names_for(raw: str) -> Names:
    name = raw.strip().lower().replace("_", "-")
    if name.startswith(PREFIX):
        name = name[len(PREFIX) :]
    if not NAME_RE.fullmatch(name):
        raise ScaffoldError(
            f"invalid plugin name {raw!r}: use lowercase letters, digits and single dashes, "
            "starting with a letter (e.g. 'secret-scanner')"
        )
    dist = PREFIX + name
    return Names(
        name=name,
        dist=dist,
        module=dist.replace("-", "_"),
        cls="".join(part.capitalize() for part in name.split("-")),
    )


def render(names: Names) -> dict[str, str]:
    """Relative path -> file text for a new project."""
    values = attrs.asdict(names)
    pkg = resources.files(__package__)
    return {
        Template(target).substitute(values): Template(
            (pkg / source).read_text(encoding="utf-8")
        ).substitute(values)
        for source, target in FILES.items()
    }


def create(raw_name: str, directory: Path | None = None) -> tuple[Names, Path]:
    """Write the project into ``directory`` (default ``./kodelet-plugin-<name>``).

    Refuses a directory that exists and is not empty, so nothing a user wrote is
    ever overwritten."""
    names = names_for(raw_name)
    target = (directory if directory is not None else Path(names.dist)).absolute()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldError(f"{target} already exists and is not an empty directory")
    files = render(names)
    try:
        for rel, text in files.items():
            path = target / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ScaffoldError(f"cannot write {target}: {exc.strerror or exc}") from None
    return names, target


def next_steps(target: Path) -> str:
    """The shell line from a new project to its first passing test run.

    pytest comes with the project's ``test`` extra, not with the project itself:
    a bare ``pip install -e .`` leaves ``pytest`` missing."""
    return f"cd {shlex.quote(str(target))} && pip install -e '.[test]' && pytest"
