"""A small, conservative reader of POSIX shell commands, for the self-guard.

It is not a shell: it splits a command line into simple commands (words and
redirections) the way bash would, keeping apart what the guard can know (quoted and
unquoted literal text, the variables it can look up) from what it cannot (command
substitutions' output, ``$1``, arithmetic), so the guard can tell "writes this path"
from "writes something it cannot name". Whatever it cannot read (an unclosed quote, a
``case`` pattern, nesting past :data:`MAX_NESTING`) raises :class:`Unreadable`, and the
guard then falls back to asking only whether the text names a protected path.

Command substitutions, process substitutions and backticks are read too: their
commands run, so their writes count.
"""

from __future__ import annotations

import re
from typing import Literal

import attrs

from ..errors import KodeletError

MAX_NESTING = 24
"""Command substitutions inside command substitutions (and ``sh -c`` inside ``sh -c``)
deeper than this are not read; the guard blocks such a command (no one writes them)."""

Kind = Literal["lit", "glob", "var", "unknown"]
"""``lit``: quoted text, taken as is; ``glob``: unquoted text, where ``*?[{~`` act;
``var``: ``$NAME``; ``unknown``: anything whose value only running it would give."""


@attrs.frozen
class Part:
    kind: Kind
    text: str


Word = tuple[Part, ...]


@attrs.define
class Simple:
    """One simple command: its words, redirections (operator, target) and here-documents;
    ``subs`` are the commands it runs inside its words (``$(...)``, backticks)."""

    words: list[Word] = attrs.field(factory=list)
    redirects: list[tuple[str, Word]] = attrs.field(factory=list)
    heredocs: list[str] = attrs.field(factory=list)
    subs: list[list[Item]] = attrs.field(factory=list)


Item = Simple | Literal["(", ")"]
"""A simple command, or the start or end of a subshell (where a ``cd`` ends)."""


class Unreadable(KodeletError, ValueError):
    """The command is not one this reader can follow; the message says why."""


class TooDeep(Unreadable):
    pass


_BLANK = " \t"
_OPERATORS = ("&&", "||", ";;&", ";;", ";&", "|&", "|", "&", ";", "\n")
_ESCAPES = dict(zip("ntrabeEfv\\'\"?", "\n\t\r\a\b\x1b\x1b\f\v\\'\"?", strict=True))


def parse(src: str, depth: int = 0) -> list[Item]:
    """Every simple command of ``src``, in order, with subshell boundaries."""
    items, _ = _Reader(src, depth).commands(0, stop=None)
    return items


def _name_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


class _Reader:
    def __init__(self, src: str, depth: int) -> None:
        if depth > MAX_NESTING:
            raise TooDeep(f"nested deeper than {MAX_NESTING} levels")
        self.s = src
        self.n = len(src)
        self.depth = depth
        self.pending: list[tuple[str, bool, Simple]] = []  # here-documents to read

    # -- commands -----------------------------------------------------------------

    def commands(self, i: int, stop: str | None) -> tuple[list[Item], int]:
        """Read from ``i`` to the end, or to the ``)`` that closes a ``$(`` (``stop``)."""
        s, n = self.s, self.n
        items: list[Item] = []
        opened = 0
        cur = Simple()
        while True:
            while i < n and (s[i] in _BLANK or s.startswith("\\\n", i)):
                i += 2 if s[i] == "\\" else 1
            if i >= n:
                break
            c = s[i]
            if c == "#":
                while i < n and s[i] != "\n":
                    i += 1
                continue
            if c == ")":
                if opened == 0 and stop == ")":
                    break
                if opened == 0:
                    raise Unreadable("a ')' that closes nothing")
                self._end(items, cur)
                cur = Simple()
                items.append(")")
                opened -= 1
                i += 1
                continue
            if c == "(" and not (cur.words or cur.redirects):
                items.append("(")
                opened += 1
                i += 1
                continue
            if c == "(":  # name() { ...; }: a function; its body is read as commands
                if s.startswith("()", i) or s.startswith("( )", i):
                    self._end(items, cur)
                    cur = Simple()
                    i += 2 if s.startswith("()", i) else 3
                    continue
                raise Unreadable("a '(' inside a command")
            op = next((o for o in _OPERATORS if s.startswith(o, i)), None)
            if op is not None and not (op == "&" and s.startswith("&>", i)):
                self._end(items, cur)
                cur = Simple()
                i += len(op)
                if op == "\n" and self.pending:
                    i = self._heredocs(i)
                continue
            redirect = self._redirect_op(i)
            if redirect is not None:
                op, i = redirect
                i = self._skip_blanks(i)
                if op in ("<<", "<<-"):
                    word, i, quoted = self._word(i, heredoc=True)
                    self.pending.append((_flat(word), quoted, cur))
                    continue
                word, i, _ = self._word(i)
                if not word:
                    raise Unreadable(f"'{op}' without a target")
                cur.redirects.append((op, word))
                continue
            word, i, _ = self._word(i, cur=cur)
            if word:
                cur.words.append(word)
        if self.pending:
            raise Unreadable("a here-document without its end")
        if opened:
            raise Unreadable("a '(' that is never closed")
        self._end(items, cur)
        return items, i

    @staticmethod
    def _end(items: list[Item], cur: Simple) -> None:
        if cur.words or cur.redirects or cur.subs or cur.heredocs:
            items.append(cur)

    def _skip_blanks(self, i: int) -> int:
        while i < self.n and self.s[i] in _BLANK:
            i += 1
        return i

    def _redirect_op(self, i: int) -> tuple[str, int] | None:
        s = self.s
        j = i
        while j < self.n and s[j].isdigit():
            j += 1
        if j < self.n and s[j] == "{":  # {fd}>file
            k = s.find("}", j)
            if k > j and all(_name_char(c) for c in s[j + 1 : k]) and s[k + 1 : k + 2] in "<>":
                j = k + 1 if k + 1 < self.n else j
        if j >= self.n:
            return None
        for op in ("&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<>", "<&", ">", "<"):
            if s.startswith(op, j):
                if op in (">", "<") and s.startswith("(", j + 1):
                    return None  # a process substitution: a word
                if j > i and op.startswith("&"):
                    return None
                return op, j + len(op)
        return None

    def _heredocs(self, i: int) -> int:
        s = self.s
        for delim, quoted, cmd in self.pending:
            # the first line that is the delimiter, after any tabs (searched, not walked)
            last = re.compile("^\t*" + re.escape(delim) + "$", re.MULTILINE).search(s, i)
            if last is None or last.start() >= self.n:  # not the empty line after the end
                raise Unreadable(f"a here-document without its end ({delim!r})")
            body = s[i : max(i, last.start() - 1)]
            i = last.end() + 1
            cmd.heredocs.append(body)
            if not quoted:  # $(...) and backticks in an unquoted body run
                _Reader(body, self.depth)._dquoted(0, cmd.subs, end=None)
        self.pending = []
        return min(i, self.n)

    # -- words --------------------------------------------------------------------

    def _word(
        self, i: int, *, heredoc: bool = False, cur: Simple | None = None
    ) -> tuple[Word, int, bool]:
        s, n = self.s, self.n
        parts: list[Part] = []
        quoted = False
        subs = cur.subs if cur is not None else []
        start = i
        while i < n:
            c = s[i]
            if c in _BLANK or c in "\n;&|)":
                break
            if c in "<>":
                if s.startswith("(", i + 1) and i == start:
                    inner, i = self._nested(i + 2)
                    subs.append(inner)
                    parts.append(Part("unknown", "<(...)"))
                    continue
                break
            if c == "(":
                prev = s[i - 1] if i > start else ""
                if prev in "@!+*?" and prev:  # extglob
                    j = self._matching(i, "(", ")")
                    parts.append(Part("unknown", s[i - 1 : j]))
                    i = j
                    continue
                if prev == "=":  # an array assignment
                    j = self._matching(i, "(", ")")
                    parts.append(Part("unknown", s[i:j]))
                    i = j
                    continue
                break
            if c == "\\":
                if i + 1 < n:
                    if s[i + 1] != "\n":
                        parts.append(Part("lit", s[i + 1]))
                    i += 2
                else:
                    i += 1
                quoted = True
                continue
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise Unreadable("an unclosed single quote")
                parts.append(Part("lit", s[i + 1 : j]))
                i = j + 1
                quoted = True
                continue
            if c == '"':
                dq, i = self._dquoted(i + 1, subs)
                parts.extend(dq)
                quoted = True
                continue
            if c == "$" and not heredoc:
                part, i = self._dollar(i, subs)
                parts.append(part)
                continue
            if c == "`" and not heredoc:
                part, i = self._backtick(i, subs)
                parts.append(part)
                continue
            j = i + 1
            while j < n and s[j] not in " \t\n;&|()<>\\'\"$`":
                j += 1
            parts.append(Part("glob", s[i:j]))
            i = j
        return tuple(parts), i, quoted

    def _matching(self, i: int, open_: str, close: str) -> int:
        """The index after the ``close`` that matches the ``open_`` at ``i``."""
        depth = 0
        s = self.s
        while i < self.n:
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise Unreadable("an unclosed single quote")
                i = j + 1
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise Unreadable(f"an unclosed {open_!r}")

    def _nested(self, i: int) -> tuple[list[Item], int]:
        """The commands of a ``$(`` / ``<(`` starting at ``i``; the index after its ``)``."""
        reader = _Reader(self.s, self.depth + 1)
        items, j = reader.commands(i, stop=")")
        if j >= self.n or self.s[j] != ")":
            raise Unreadable("an unclosed '$('")
        return items, j + 1

    def _dollar(self, i: int, subs: list[list[Item]]) -> tuple[Part, int]:
        s, n = self.s, self.n
        nxt = s[i + 1] if i + 1 < n else ""
        if s.startswith("$((", i):
            j = self._matching(i + 1, "(", ")")
            return Part("unknown", s[i:j]), j
        if nxt == "(":
            inner, j = self._nested(i + 2)
            subs.append(inner)
            return Part("unknown", "$(...)"), j
        if nxt == "{":
            j = self._matching(i + 1, "{", "}")
            inside = s[i + 2 : j - 1]
            if inside and all(_name_char(c) for c in inside) and not inside[0].isdigit():
                return Part("var", inside), j
            if "$(" in inside or "`" in inside:  # ${x:-$(cmd)} runs cmd: read it as text
                _Reader(inside, self.depth + 1)._dquoted(0, subs, end=None)
            return Part("unknown", s[i:j]), j
        if nxt == "'":
            return self._ansi_c(i + 2)
        if nxt == '"':  # $"..." (locale translation): a double-quoted string
            dq, j = self._dquoted(i + 2, subs)
            return (dq[0] if len(dq) == 1 else Part("unknown", s[i:j])), j
        if nxt and (nxt.isascii() and (nxt.isalpha() or nxt == "_")):
            j = i + 1
            while j < n and _name_char(s[j]):
                j += 1
            return Part("var", s[i + 1 : j]), j
        if nxt and nxt in "@*#?$!-0123456789":
            return Part("unknown", s[i : i + 2]), i + 2
        return Part("glob", "$"), i + 1

    def _ansi_c(self, i: int) -> tuple[Part, int]:
        s, n = self.s, self.n
        out: list[str] = []
        while i < n and s[i] != "'":
            c = s[i]
            if c != "\\" or i + 1 >= n:
                out.append(c)
                i += 1
                continue
            e = s[i + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                i += 2
            elif e in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[e]
                j = i + 2
                while j < n and j < i + 2 + width and s[j] in "0123456789abcdefABCDEF":
                    j += 1
                code = int(s[i + 2 : j], 16) if j > i + 2 else None
                out.append(chr(code) if code is not None and code < 0x110000 else s[i:j])
                i = j
            elif e in "01234567":
                j = i + 1
                while j < n and j < i + 4 and s[j] in "01234567":
                    j += 1
                out.append(chr(int(s[i + 1 : j], 8) & 0xFF))
                i = j
            elif e == "c" and i + 2 < n:
                out.append(chr(ord(s[i + 2]) & 0x1F))
                i += 3
            else:
                out.append("\\" + e)
                i += 2
        if i >= n:
            raise Unreadable("an unclosed $' quote")
        return Part("lit", "".join(out)), i + 1

    def _backtick(self, i: int, subs: list[list[Item]]) -> tuple[Part, int]:
        s = self.s
        j = i + 1
        out: list[str] = []
        while j < self.n and s[j] != "`":
            if s[j] == "\\" and j + 1 < self.n and s[j + 1] in "$`\\\n":
                out.append(s[j + 1])
                j += 2
                continue
            out.append(s[j])
            j += 1
        if j >= self.n:
            raise Unreadable("an unclosed backtick")
        subs.append(parse("".join(out), self.depth + 1))
        return Part("unknown", "`...`"), j + 1

    def _dquoted(
        self, i: int, subs: list[list[Item]], end: str | None = '"'
    ) -> tuple[list[Part], int]:
        """Double-quoted text from ``i`` up to ``end`` (``"``), or to the end of the string
        (a here-document's body); its parts and the index after ``end``."""
        s, n = self.s, self.n
        parts: list[Part] = []
        buf: list[str] = []
        while i < n:
            c = s[i]
            if end is not None and c == end:
                break
            if c == "\\" and i + 1 < n and s[i + 1] in '$`"\\\n':
                if s[i + 1] != "\n":
                    buf.append(s[i + 1])
                i += 2
                continue
            if c in "$`":
                if buf:
                    parts.append(Part("lit", "".join(buf)))
                    buf = []
                part, i = self._dollar(i, subs) if c == "$" else self._backtick(i, subs)
                parts.append(Part("lit", part.text) if part.kind == "glob" else part)
                continue
            buf.append(c)
            i += 1
        if end is not None and i >= n:
            raise Unreadable("an unclosed double quote")
        if buf:
            parts.append(Part("lit", "".join(buf)))
        return parts, i + (1 if end is not None else 0)


def _flat(word: Word) -> str:
    return "".join(p.text for p in word)
