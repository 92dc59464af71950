"""A shell word as the parser saw it: literal pieces, variables and run-time parts.

Kept apart from the tree-sitter walk (``shell.py``) and the per-program tables
(``commands.py``) so both can speak of words without importing each other. A word is
not resolved here: ``$HOME`` and ``~`` stay symbolic until :mod:`.paths` knows the call's
home and cwd, so one parse serves every call with the same command text.
"""

from __future__ import annotations

import itertools

import attrs

DYN = "\x00"
"""Stands for a run-time part (``$(...)``, an unknown variable) in a word's text."""

Part = tuple[str, str]
"""``("lit", text)``, ``("var", NAME)`` (a variable nobody assigned in the line),
``("dyn", "")`` (decided at run time) or ``("tilde", USER)`` (a leading ``~``)."""


@attrs.frozen
class Word:
    parts: tuple[Part, ...]
    glob: bool = False  # an unquoted * ? [ (the word may name several files)
    under: bool = False  # stands for entries below its path (find's ``{}`` and -delete)
    from_var: bool = False  # a literal that came from a variable assigned in the line

    @property
    def literal(self) -> str | None:
        """The word's text when nothing in it is decided at run time."""
        if all(kind == "lit" for kind, _ in self.parts):
            return "".join(v for _, v in self.parts)
        return None

    @property
    def text(self) -> str:
        """Literal text with :data:`DYN` for each run-time part (``~`` kept as written)."""
        out = []
        for kind, value in self.parts:
            if kind == "lit":
                out.append(value)
            elif kind == "tilde":
                out.append("~" + value)
            else:
                out.append(DYN)
        return "".join(out)

    @property
    def dynamic(self) -> bool:
        return any(kind == "dyn" for kind, _ in self.parts)


def lit(text: str, **kw: bool) -> Word:
    return Word((("lit", text),), **kw)


def join(words: list[Word] | tuple[Word, ...], sep: str = " ") -> Word:
    """Words joined by ``sep`` (what ``eval a b`` or ``watch a b`` hands a shell)."""
    parts: list[Part] = []
    for i, w in enumerate(words):
        if i:
            parts.append(("lit", sep))
        parts.extend(w.parts)
    return Word(tuple(parts), any(w.glob for w in words))


MAX_BRACES = 16
MAX_BRACE_TEXT = 1024
"""Longer words are not brace-expanded (the search for groups is quadratic in length)."""


def braces(word: Word) -> list[Word]:
    """The words bash makes of ``word`` by brace expansion (``/{etc,usr}`` is ``/etc``
    and ``/usr``; ``~/{,}`` is ``~/`` twice), at most :data:`MAX_BRACES` of them. A quoted
    brace is expanded too: one word too many is harmless where paths are judged."""
    if sum(len(v) for _, v in word.parts) > MAX_BRACE_TEXT:
        return [word]
    out: list[Word] = []
    todo = [word]
    steps = 0
    while todo and len(out) < MAX_BRACES and steps < 4 * MAX_BRACES:
        steps += 1
        w = todo.pop()
        for i, (kind, value) in enumerate(w.parts):
            if kind != "lit":
                continue
            group = _group(value)
            if group is None:
                continue
            start, end, choices = group
            for choice in reversed(choices[:MAX_BRACES]):
                part = ("lit", value[:start] + choice + value[end:])
                todo.append(attrs.evolve(w, parts=(*w.parts[:i], part, *w.parts[i + 1 :])))
            break
        else:
            out.append(w)
    return out or [word]


def _group(text: str) -> tuple[int, int, list[str]] | None:
    """The first ``{a,b}`` group of ``text``: its span and its choices."""
    start = text.find("{")
    while start != -1:
        depth = 0
        commas: list[int] = []
        for j in range(start, len(text)):
            ch = text[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    if commas:
                        bounds = [start, *commas, j]
                        choices = [text[a + 1 : b] for a, b in itertools.pairwise(bounds)]
                        return start, j + 1, choices
                    break
            elif ch == "," and depth == 1:
                commas.append(j)
        start = text.find("{", start + 1)
    return None
