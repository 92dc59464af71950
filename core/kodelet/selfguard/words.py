"""From a shell word to the path it names: variables, ``~``, braces, globs, ``..``.

The result keeps what is certain apart from what is not: a component built from a
command substitution's output (or an unset variable) is :data:`UNKNOWN`, which no name
matches; a path after it is still checked by name (``"$(pwd)"/.kodelet`` is a kodelet
folder whatever ``pwd`` prints), but not by place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from .places import Comp, Glob, fold, parts_of
from .shell import Word

_HOLE = "\ue000"  # stands for text only running the command would give
_SPECIAL = set("*?[]{}\\,~" + _HOLE)
MAX_BRACES = 256


class _Unknown(Glob):
    def matches(self, name: str) -> bool:
        return False


UNKNOWN: Comp = _Unknown("\ue000")


@attrs.frozen
class Path:
    """A path a command may touch, as :meth:`Protected.reached` takes it."""

    comps: tuple[Comp, ...]
    absolute: bool
    uncertain: bool
    literal: str | None  # the whole path as one string, when it has no glob or hole


_ESCAPED = str.maketrans({c: "\\" + c for c in _SPECIAL})


def _escape(text: str) -> str:
    return text.translate(_ESCAPED)


def flatten(word: Word, vars: Mapping[str, str], home: str, cwd: str | None) -> tuple[str, bool]:
    """The word as glob syntax (quoted text escaped, holes for what cannot be known),
    and whether it holds a hole."""
    out: list[str] = []
    holes = False
    for n, part in enumerate(word):
        if part.kind == "lit":
            out.append(_escape(part.text))
        elif part.kind == "glob":
            text = part.text
            if n == 0 and text.startswith("~"):
                user, slash, rest = text[1:].partition("/")
                if user == "":
                    out.append(_escape(home) + slash)
                    text = rest
                elif user == "+" and cwd is not None:
                    out.append(_escape(cwd) + slash)
                    text = rest
                else:
                    out.append(_HOLE + slash)
                    holes = True
                    text = rest
            out.append(text.replace(_HOLE, "\\" + _HOLE))
        elif part.kind == "var" and part.text in vars:
            out.append(_escape(vars[part.text]))
        else:
            out.append(_HOLE)
            holes = True
    return "".join(out), holes


def literal_text(word: Word, vars: Mapping[str, str]) -> str:
    """The word's text as far as it is known, for "does it name a protected path"."""
    return "".join(vars.get(p.text, "$" + p.text) if p.kind == "var" else p.text for p in word)


def braces(pattern: str) -> list[str]:
    """Bash brace expansion (``{a,b}``, ``{1..3}``), at most :data:`MAX_BRACES` results;
    escaped braces and commas are text."""
    results = [pattern]
    done: list[str] = []
    while results:
        p = results.pop()
        span = _brace_span(p)
        if span is None:
            done.append(p)
        else:
            start, end, options = span
            for opt in reversed(options):
                results.append(p[:start] + opt + p[end:])
        if len(done) + len(results) > MAX_BRACES:
            return done + results  # the rest unexpanded: checked as written
    return done


def _brace_span(p: str) -> tuple[int, int, list[str]] | None:
    i, n = 0, len(p)
    while i < n:
        if p[i] == "\\":
            i += 2
            continue
        if p[i] == "{":
            depth, j, commas, last = 0, i, [], i + 1
            options: list[str] = []
            while j < n:
                c = p[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif c == "," and depth == 1:
                    commas.append(j)
                    options.append(p[last:j])
                    last = j + 1
                j += 1
            if j < n and commas:
                options.append(p[last:j])
                return i, j + 1, options
            if j < n:
                seq = _sequence(p[i + 1 : j])
                if seq is not None:
                    return i, j + 1, seq
        i += 1
    return None


def _sequence(inner: str) -> list[str] | None:
    a, sep, b = inner.partition("..")
    if not sep or ".." in b:
        return None
    try:
        x, y = int(a), int(b)
    except ValueError:
        if len(a) == 1 and len(b) == 1:
            x, y = ord(a), ord(b)
            step = 1 if y >= x else -1
            if abs(y - x) > MAX_BRACES:
                return None
            return [chr(c) for c in range(x, y + step, step)]
        return None
    step = 1 if y >= x else -1
    if abs(y - x) > MAX_BRACES:
        return None
    return [str(v) for v in range(x, y + step, step)]


def _components(pattern: str, dotglob: bool) -> list[Comp]:
    comps: list[Comp] = []
    for raw in _split(pattern):
        acting = _unescape(raw, escaped=False)
        if _HOLE in acting:
            comps.append(UNKNOWN)
        elif any(c in "*?[" for c in acting):
            comps.append(Glob(raw, dotglob=dotglob))
        else:
            comps.append(fold(_unescape(raw)))
    return comps


def _split(pattern: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            cur.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "/":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p for p in parts if p]


def _unescape(raw: str, *, escaped: bool = True) -> str:
    """``raw`` with its backslashes undone; ``escaped=False``: only the characters that
    act, the escaped ones left out too."""
    if "\\" not in raw:
        return raw
    out, i = [], 0
    while i < len(raw):
        if raw[i] == "\\" and (i + 1 < len(raw) or not escaped):
            if escaped:
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(raw[i])
        i += 1
    return "".join(out)


def place(folder: str) -> Path:
    """A folder the guard knows, as the base of relative paths."""
    return Path(parts_of(folder), True, False, folder)


SOMEWHERE = Path((UNKNOWN,), False, True, None)
"""A folder the guard does not know (after ``cd "$(...)"``, ``cd -``)."""


def resolve(pattern: str, base: Path, dotglob: bool = False) -> list[Path]:
    """Every path the (flattened) word may name, relative ones joined to ``base``."""
    out: list[Path] = []
    for p in braces(pattern):
        prefix: str | None
        if p.startswith("/"):
            comps: list[Comp] = []
            absolute, uncertain, prefix = True, False, ""
        else:
            comps = list(base.comps)
            absolute, uncertain, prefix = base.absolute, base.uncertain, base.literal
        lost = False  # a ".." took away a component the guard could not read
        for c in _components(p, dotglob):
            if c == ".":
                continue
            if c == "..":
                if comps:
                    lost = comps.pop() is UNKNOWN or lost
                continue
            comps.append(c)
        holes = lost or any(c is UNKNOWN for c in comps)
        placed = absolute and not holes
        literal = None
        if placed and prefix is not None and all(isinstance(c, str) for c in comps):
            literal = (prefix.rstrip("/") + "/" if prefix else "") + _unescape(p)
        out.append(Path(tuple(comps), placed, uncertain or holes, literal))
    return out


def real(path: Path) -> Path | None:
    """``path`` with its symbolic links resolved, when it is one literal path."""
    if path.literal is None:
        return None
    try:
        resolved = os.path.realpath(path.literal)
    except (OSError, ValueError):
        return None
    return Path(parts_of(resolved), True, False, resolved)


def from_text(text: str, base: Path, home: str) -> list[Path]:
    """A path given as plain text (a file tool's ``file_path``): no globbing, but ``~``
    and a NUL or trailing blanks that a tool may cut off are accounted for."""
    forms = {text, text.split("\0", 1)[0], text.strip()}
    out: list[Path] = []
    for form in forms:
        escaped = _escape(form.replace("\0", ""))
        if form.startswith("~/") or form == "~":
            out += resolve(_escape(home) + escaped[2:], base)
        out += resolve(escaped, base)
    return out
