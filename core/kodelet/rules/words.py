"""A shell word as the parser saw it: literal pieces, variables and run-time parts.

Kept apart from the tree-sitter walk (``shell.py``) and the per-program tables
(``commands.py``) so both can speak of words without importing each other. A word is
not resolved here: ``$HOME`` and ``~`` stay symbolic until :mod:`.paths` knows the call's
home and cwd, so one parse serves every call with the same command text.
"""

from __future__ import annotations

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
