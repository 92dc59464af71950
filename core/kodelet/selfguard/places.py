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
from collections.abc import Iterable, Mapping, Sequence
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

ANY = Glob("*", dotglob=True)
"""``**``, or a component the guard could not read: any name at all."""


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


def _spots(paths: Iterable[str]) -> list[Spot]:
    out: dict[tuple[str, ...], Spot] = {}
    for p in paths:
        for form in (os.path.normpath(p), _real(p)):
            if form and form.startswith("/"):
                parts = parts_of(form)
                out.setdefault(parts, Spot(parts, p))
    return list(out.values())


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
    here = Path(cwd)
    for folder in (here, *here.parents):
        candidate = folder / ".kodelet"
        if str(candidate) != home_root and candidate.is_dir():
            return str(candidate)
    return None


@attrs.frozen
class Protected:
    """kodelet's own files as seen from one call."""

    spots: tuple[Spot, ...]
    global_root: str
    everything: frozenset[tuple[str, ...]] = frozenset()
    """``/`` and the home folder: deleting one of those is every guard's business (and
    ``kodelet verify``'s probe), not this one's, which would make a missing guard look
    present; what is inside them is still protected."""

    @classmethod
    def of(cls, project: str, global_root: str, cwd: str, env: Mapping[str, str]) -> Protected:
        home = env.get("HOME") or str(Path.home())
        paths = [os.path.join(project, ".kodelet"), global_root]
        near = nearest_kodelet(cwd, global_root)
        if near:
            paths.append(near)
        paths += [os.path.join(home, rel) for rel in _IN_HOME]
        codex = env.get("CODEX_HOME") or os.path.join(home, ".codex")
        paths += [os.path.join(codex, "hooks.json"), os.path.join(codex, "config.toml")]
        copilot = env.get("COPILOT_HOME") or os.path.join(home, ".copilot")
        paths.append(os.path.join(copilot, "hooks"))
        xdg = env.get("XDG_CONFIG_HOME")
        if xdg:
            paths.append(os.path.join(xdg, "opencode", "plugin", "kodelet.js"))
        for base in {project, cwd}:
            paths += [os.path.join(base, rel) for rel in _IN_PROJECT]
        # A folder above a file that is not there holds nothing of kodelet's; the global
        # root counts even before it exists, as kodelet would read what is put there.
        paths = [global_root, *(p for p in paths if _exists(p))]
        everything = {(), parts_of(home), parts_of(_real(home) or home)}
        return cls(
            spots=tuple(_spots(paths)), global_root=global_root, everything=frozenset(everything)
        )

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
