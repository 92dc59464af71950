"""A path argument -> the absolute path it names and the zone that path is in.

Resolution follows what the shell and the file system would do: ``~`` and ``$HOME`` are
the user's home, ``$PWD`` and relative words the command's cwd (after any ``cd`` earlier
in the line), ``..`` is applied, and symbolic links are resolved where they exist (so a
link inside the project that points at ``/etc`` is in ``system``). A word with a part
decided at run time (``$(...)``, an unknown variable) is in zone ``unknown``. A glob is
judged by its fixed prefix: ``~/*`` (the whole content of the home) is ``home_root``
with ``glob`` set, while ``~/*.log`` or ``src/*/build`` pick entries below the prefix
and get the zone of what is inside it (``home``, ``project``).

Zones, first match wins: ``kodelet`` (the project's ``.kodelet``, the kodelet home, any
``.kodelet`` folder, the agents' ``settings*.json`` under ``.claude`` of the project and
home), ``project_root``, ``project``, ``home_root``, ``home``, ``tmp`` (``/tmp``,
``/var/tmp``, ``$TMPDIR``), ``root`` (``/``), ``system`` (any other absolute path).
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Literal

import attrs

from .words import Word

Zone = Literal[
    "project", "project_root", "tmp", "home", "home_root", "kodelet", "system", "root", "unknown"
]
_GLOB = frozenset("*?[")
_WHOLE = frozenset("*.?")
MAX_PATH = 4096


@attrs.frozen
class PathFact:
    raw: str  # as written
    path: str  # absolute, normalized, symlinks resolved where they exist ("" when unknown)
    zone: Zone
    glob: bool  # the word had unquoted * ? [ (or stands for entries below a folder)

    def to_dict(self) -> dict[str, object]:
        return {"raw": self.raw, "path": self.path, "zone": self.zone, "glob": self.glob}


@attrs.frozen
class Places:
    """The folders zones are measured against, each also with symlinks resolved."""

    project: str
    home: str
    kodelet_home: str
    tmp: tuple[str, ...]

    @classmethod
    def of(cls, project: str, home: str, kodelet_home: str) -> Places:
        tmp = {"/tmp", "/var/tmp", "/private/tmp", "/private/var/tmp"}
        env_tmp = os.environ.get("TMPDIR")
        if env_tmp and posixpath.isabs(env_tmp):
            tmp.add(posixpath.normpath(env_tmp))
        tmp |= {_real(t) for t in tmp}
        return cls(_real(project), _real(home), _real(kodelet_home), tuple(sorted(tmp)))


def _real(path: str) -> str:
    if not path:
        return ""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return posixpath.normpath(path)


def _inside(path: str, folder: str) -> bool:
    return bool(folder) and (path == folder or path.startswith(folder.rstrip("/") + "/"))


def zone(path: str, places: Places) -> Zone:
    """The zone of an absolute, resolved path."""
    parts = path.split("/")
    if ".kodelet" in parts or _inside(path, places.kodelet_home):
        return "kodelet"
    for base in (places.project, places.home):
        if (
            base
            and posixpath.dirname(path) == base + "/.claude"
            and posixpath.basename(path).startswith("settings")
            and path.endswith(".json")
        ):
            return "kodelet"
    if places.project and path == places.project:
        return "project_root"
    if _inside(path, places.project):
        return "project"
    if places.home and path == places.home:
        return "home_root"
    if _inside(path, places.home):
        return "home"
    if any(_inside(path, t) for t in places.tmp):
        return "tmp"
    if path == "/":
        return "root"
    return "system"


def text_of(word: Word, *, cwd: str | None, home: str) -> str | None:
    """The word's text with ``~`` and known variables put in; None if run-time."""
    out: list[str] = []
    for kind, value in word.parts:
        if kind == "lit":
            out.append(value)
        elif kind == "tilde":
            if value == "":
                out.append(home)
            else:
                expanded = os.path.expanduser("~" + value)
                if expanded.startswith("~"):
                    return None
                out.append(expanded)
        elif kind == "var":
            known = {
                "HOME": home,
                "PWD": cwd,
                "USERPROFILE": home,
                "XDG_CONFIG_HOME": posixpath.join(home, ".config"),
                "TMPDIR": os.environ.get("TMPDIR") or "/tmp",
            }.get(value)
            if known is None:
                return None
            out.append(known)
        else:
            return None
    return "".join(out)


def resolve(word: Word, *, cwd: str | None, places: Places, home: str) -> PathFact:
    """Where ``word`` points when the command runs in ``cwd`` (None: cwd not known)."""
    raw = word.text
    text = text_of(word, cwd=cwd, home=home)
    glob = word.glob or word.under
    if text is None or len(text) > MAX_PATH or "\x00" in text:
        return PathFact(raw, "", "unknown", glob)
    below = word.under
    if word.glob:
        fixed: list[str] = []
        comps = text.split("/")
        for i, comp in enumerate(comps):
            if _GLOB & set(comp):
                # `*` (or `.*`) as the last component is the folder's whole content: as
                # bad as the folder. `*.pyc`, `build*`, `*/x` pick entries below it.
                whole = set(comp) <= _WHOLE and not any(c for c in comps[i + 1 :])
                below = below or not whole
                break
            fixed.append(comp)
        text = "/".join(fixed) or ("/" if text.startswith("/") else ".")
    if not posixpath.isabs(text):
        if cwd is None:
            return PathFact(raw, "", "unknown", glob)
        text = posixpath.join(cwd, text)
    path = _real(posixpath.normpath(text))
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    z = zone(path, places)
    if below:
        z = _child_zone(z)
    return PathFact(raw, path, z, glob)


def _child_zone(z: Zone) -> Zone:
    """The zone of entries below a folder of zone ``z``."""
    return {"project_root": "project", "home_root": "home", "root": "system"}.get(z, z)  # type: ignore[return-value]


def cwd_after(cds: tuple[Word, ...], cwd: str, home: str) -> str | None:
    """The folder a command runs in after the ``cd``s before it (None: not known)."""
    current: str | None = cwd
    for w in cds:
        if current is None:
            return None
        text = text_of(w, cwd=current, home=home)
        if text is None or text == "-" or w.glob:
            return None
        current = _real(posixpath.normpath(posixpath.join(current, text)))
    return current


def glob_regex(pattern: str) -> str:
    """A regular expression (for ``fullmatch``) of a path glob as rules and the secret
    list write them: ``*`` and ``?`` within one path part, ``**/`` any folders, ``**``
    anything, and a trailing ``/**`` the folder itself too."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    if pattern.endswith("/**"):
        out[-2:] = ["(?:/.*)?"]
    return "".join(out)
