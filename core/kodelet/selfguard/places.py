"""Which files are kodelet's own, and whether a path (or a shell glob) reaches one.

Two kinds of protection, both needed:

- **by name**, anywhere on disk: a path through a folder named ``.kodelet``, or ending in
  an agent settings file that holds kodelet's entries (``.claude/settings.json``, ...).
  A model that creates ``/tmp/x/.kodelet/config.toml`` to copy it over the project's
  later is stopped at the first step, whatever the folder.
- **by place**: the folders and files the guard's own runtime reads (the project's
  ``.kodelet``, the global root wherever ``KODELET_HOME`` puts it, the user's agent
  settings). Deleting or moving a folder *above* one of them (``rm -rf ..``) reaches it
  too, which a name alone cannot show.

Paths are compared by their components, case-folded and NFC-normalized (a file system
that ignores case or normalization would otherwise be a way around), both as written
(lexically normalized) and with symbolic links resolved.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

MAX_PATTERN = 4096
"""A glob component longer than this is taken to match every name (no one writes one)."""


def fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


@attrs.frozen
class Glob:
    """One path component written with unquoted ``*``, ``?`` or ``[...]``: it may name
    several files, so it counts as reaching each name it matches."""

    pattern: str  # glob syntax; a backslash makes the next character literal
    dotglob: bool = False

    def matches(self, name: str) -> bool:
        if len(self.pattern) > MAX_PATTERN:
            return True
        if name in (".", ".."):
            return False
        if name.startswith(".") and not self.dotglob and not self.pattern.startswith((".", "\\.")):
            return False
        return _match(_tokens(fold(self.pattern)), name)


Comp = str | Glob
"""A path component: a literal name (folded) or a :class:`Glob`."""


def _tokens(pattern: str) -> list[tuple[str, str]]:
    """``("*", "")``, ``("?", "")``, ``("[", chars)`` / ``("^", chars)`` for a class
    (its ranges spelled out as ``a-z``), ``("=", c)`` for a literal character."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(("=", pattern[i + 1]))
            i += 2
        elif c == "*":
            if not out or out[-1][0] != "*":
                out.append(("*", ""))
            i += 1
        elif c == "?":
            out.append(("?", ""))
            i += 1
        elif c == "[":
            j = i + 1
            negate = j < n and pattern[j] in "!^"
            j += 1 if negate else 0
            start = j
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal "["
                out.append(("=", "["))
                i += 1
                continue
            out.append(("^" if negate else "[", pattern[start:j]))
            i = j + 1
        else:
            out.append(("=", c))
            i += 1
    return out


def _in_class(c: str, chars: str) -> bool:
    i, n = 0, len(chars)
    while i < n:
        if i + 2 < n and chars[i + 1] == "-":
            if chars[i] <= c <= chars[i + 2]:
                return True
            i += 3
        else:
            if chars[i] == c:
                return True
            i += 1
    return False


def _match(tokens: list[tuple[str, str]], name: str) -> bool:
    """Glob matching by dynamic programming: time linear in pattern times name, never
    exponential, whatever the model writes."""
    reach = [True] + [False] * len(name)  # reach[j]: tokens so far match name[:j]
    for kind, arg in tokens:
        nxt = [False] * (len(name) + 1)
        if kind == "*":
            seen = False
            for j in range(len(name) + 1):
                seen = seen or reach[j]
                nxt[j] = seen
        else:
            for j in range(len(name)):
                if not reach[j]:
                    continue
                c = name[j]
                ok = (
                    (kind == "?")
                    or (kind == "=" and c == arg)
                    or (kind == "[" and _in_class(c, arg))
                    or (kind == "^" and not _in_class(c, arg))
                )
                nxt[j + 1] = ok
        reach = nxt
        if not any(reach):
            return False
    return reach[-1]


def comp_matches(comp: Comp, name: str) -> bool:
    """Whether ``comp`` (literal or glob) can name ``name`` (a folded literal)."""
    return comp.matches(name) if isinstance(comp, Glob) else comp == name


# What kodelet's own entries live in, by name, anywhere: (components, what it is).
RULES: tuple[tuple[tuple[str, ...], str], ...] = (
    ((".kodelet",), "a kodelet folder"),
    ((".claude", "settings.json"), "Claude Code's settings"),
    ((".claude", "settings.local.json"), "Claude Code's settings"),
    ((".codex", "hooks.json"), "Codex's hooks"),
    ((".codex", "config.toml"), "Codex's configuration"),
    ((".gemini", "settings.json"), "Gemini CLI's settings"),
    ((".qwen", "settings.json"), "Qwen Code's settings"),
    ((".github", "hooks"), "Copilot CLI's hooks folder"),
    ((".copilot", "hooks"), "Copilot CLI's hooks folder"),
    ((".opencode", "plugin", "kodelet.js"), "kodelet's opencode plugin"),
    ((".config", "opencode", "plugin", "kodelet.js"), "kodelet's opencode plugin"),
)

_IN_HOME = (
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".gemini/settings.json",
    ".qwen/settings.json",
    ".config/opencode/plugin/kodelet.js",
)
_IN_PROJECT = tuple("/".join(parts) for parts, _ in RULES[1:])


@attrs.frozen
class Spot:
    parts: tuple[str, ...]  # folded components of an absolute path
    shown: str


def parts_of(path: str) -> tuple[str, ...]:
    return tuple(fold(p) for p in path.split("/") if p)


def _exists(path: str) -> bool:
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return True


def _real(path: str) -> str | None:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


def nearest_kodelet(cwd: str, home_root: str) -> str | None:
    """The nearest ``.kodelet`` folder at or above ``cwd``: the project a call is for."""
    folder = os.path.normpath(cwd)
    while True:
        candidate = os.path.join(folder, ".kodelet")
        if candidate != home_root and os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


MAX_KNOWN = 4096
"""Paths whose spots an :class:`Own` keeps; past this it forgets them all and starts over."""


class Own:
    """kodelet's own files for one runtime: what does not depend on the call's folder
    (the project's and the global root's, the user's agent settings, the home folder,
    the shell variables a command starts with) worked out once; :meth:`at` gives the
    :class:`Protected` of one call.

    Whether each file is there is asked on every call (one may appear or go at any
    time); the spots of a path (its lexical and resolved forms) are worked out the
    first time it is seen there, and kept."""

    def __init__(self, project: str, global_root: str, env: Mapping[str, str]) -> None:
        self.project = os.path.normpath(project)
        self.global_root = global_root
        self.home = home = env.get("HOME") or str(Path.home())
        self.seed = {k: v for k, v in env.items() if k.isidentifier()}
        paths = [os.path.join(project, ".kodelet")]
        paths += [os.path.join(home, rel) for rel in _IN_HOME]
        codex = env.get("CODEX_HOME") or os.path.join(home, ".codex")
        paths += [os.path.join(codex, "hooks.json"), os.path.join(codex, "config.toml")]
        copilot = env.get("COPILOT_HOME") or os.path.join(home, ".copilot")
        paths.append(os.path.join(copilot, "hooks"))
        xdg = env.get("XDG_CONFIG_HOME")
        if xdg:
            paths.append(os.path.join(xdg, "opencode", "plugin", "kodelet.js"))
        paths += [os.path.join(project, rel) for rel in _IN_PROJECT]
        self.fixed = tuple(paths)
        self.everything = frozenset({(), parts_of(home), parts_of(_real(home) or home)})
        self._spots: dict[str, tuple[Spot, ...]] = {}

    def at(self, cwd: str) -> Protected:
        """kodelet's own files as seen from a call that runs in ``cwd``."""
        paths = list(self.fixed)
        near = nearest_kodelet(cwd, self.global_root)
        if near:
            paths.append(near)
        if os.path.normpath(cwd) != self.project:
            paths += [os.path.join(cwd, rel) for rel in _IN_PROJECT]
        # A folder above a file that is not there holds nothing of kodelet's; the global
        # root counts even before it exists, as kodelet would read what is put there.
        spots: dict[tuple[str, ...], Spot] = {}
        for p in (self.global_root, *(p for p in paths if _exists(p))):
            for spot in self._spots_of(p):
                spots.setdefault(spot.parts, spot)
        return Protected(
            spots=tuple(spots.values()),
            global_root=self.global_root,
            everything=self.everything,
            home=self.home,
            seed=self.seed,
        )

    def _spots_of(self, path: str) -> tuple[Spot, ...]:
        known = self._spots.get(path)
        if known is None:
            if len(self._spots) >= MAX_KNOWN:
                self._spots.clear()
            forms = (os.path.normpath(path), _real(path))
            known = tuple(Spot(parts_of(f), path) for f in forms if f and f.startswith("/"))
            self._spots[path] = known
        return known


@attrs.frozen
class Protected:
    """kodelet's own files as seen from one call."""

    spots: tuple[Spot, ...]
    global_root: str
    everything: frozenset[tuple[str, ...]] = frozenset()
    """``/`` and the home folder: deleting one of those is every guard's business (and
    ``kodelet verify``'s probe), not this one's, which would make a missing guard look
    present; what is inside them is still protected."""
    home: str = "/"
    """The user's home folder, what ``~`` stands for."""
    seed: Mapping[str, str] = attrs.field(factory=dict)
    """The shell variables a command starts with (the environment's)."""

    def reached(self, comps: Sequence[Comp], *, absolute: bool, recursive: bool) -> str | None:
        """What of kodelet's ``comps`` reaches, or None.

        ``comps`` are the lexically normalized components of a path (absolute, or
        relative to a folder the guard does not know); ``recursive``: the operation
        acts on everything below the path too (``rm -r``, ``mv``), so a folder above a
        protected one reaches it."""
        for rule, what in RULES:
            if _rule_hits(comps, rule, recursive):
                return what
        if absolute:
            broad = recursive and all(isinstance(c, str) for c in comps)
            if broad and tuple(comps) in self.everything:
                recursive = False
            for spot in self.spots:
                if _spot_hits(comps, spot.parts, recursive):
                    return f"kodelet's own {spot.shown}"
        return None


def _rule_hits(comps: Sequence[Comp], rule: tuple[str, ...], recursive: bool) -> bool:
    m, k = len(comps), len(rule)
    for i in range(m):
        j = 0
        while j < k and i + j < m:
            if not comp_matches(comps[i + j], rule[j]):
                break
            j += 1
        if j == k or (j > 0 and i + j == m and recursive):
            return True
    return False


def _spot_hits(comps: Sequence[Comp], spot: tuple[str, ...], recursive: bool) -> bool:
    for i, name in enumerate(spot):
        if i >= len(comps):
            return recursive  # comps is a folder above the spot
        if not comp_matches(comps[i], name):
            return False
    return True  # comps is the spot or below it
