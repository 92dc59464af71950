"""Matchers, read the way Claude Code reads them, matched in linear time.

``None``, ``""`` and ``"*"`` match everything. A matcher made only of letters,
digits, ``_``, ``-``, spaces, ``|`` and ``,`` is a list of exact names split on ``|``
and ``,``, each trimmed (``Bash``, ``Write|Edit``, ``Edit | Bash``), as Claude Code
2.1.332 reads the matchers of every event that has one.
Anything else is a regular expression searched in the value, as Claude Code
does with JavaScript's ``RegExp.test`` (``Notebook.*``, ``^mcp__github__``); anchor
it with ``^...$`` to match the whole name. A glob such as ``mcp__*`` or ``*Edit``
also works, as Spec 07 has it: a matcher with ``*`` or ``?`` matches when either
reading matches.

The model chooses the value (an MCP tool's name), so a matcher must not be able to
hang the host: regular expressions run on RE2 (``google-re2``), whose time is
linear in the value whatever the pattern, so ``^(a+)+$`` costs what ``^a+$`` does.
RE2 reads a pattern as JavaScript does except for a few constructs; each of those
is refused when the matcher is built, with a one-line error saying why, instead of
being read otherwise or silently never matching:

- lookaround (``(?=``, ``(?!``, ``(?<=``, ``(?<!``) and backreferences (``\\1``,
  ``\\k<name>``): they cannot be matched in linear time;
- what JavaScript reads as a literal or an error and RE2 as an operator: inline
  flags (``(?i)``), ``(?P<name>``, ``\\A``, ``\\z``, ``\\Q``, ``\\p{L}``, ``\\C``, POSIX
  classes (``[[:alpha:]]``), ``[]`` and ``[^]``, and any other escaped letter.

JavaScript's named groups (``(?<tool>Bash)``), ``\\uXXXX`` and ``\\s`` (Unicode
spaces included) mean what they mean to JavaScript.
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Any

import attrs

from ..errors import KodeletError

_SIMPLE = re.compile(r"[A-Za-z0-9_|, -]+")
_NAME_SEPARATORS = re.compile(r"[|,]")
_GROUP_NAME = re.compile(r"<[A-Za-z_$][A-Za-z0-9_$]*>")
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
# JavaScript's \s: ASCII whitespace, \v, and the Unicode spaces (RE2's \s is ASCII only).
_JS_SPACE = (
    r"\t\n\x0b\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}"
)
_SAME_ESCAPES = frozenset("dDwWnrtfv0")
_WHY_ESCAPE = {
    "k": "a backreference, which cannot be matched in linear time",
    "A": "a literal 'A' to JavaScript, start of text to RE2: use ^",
    "z": "a literal 'z' to JavaScript, end of text to RE2: use $",
    "Z": "a literal 'Z' to JavaScript: use $",
    "Q": "a literal 'Q' to JavaScript, a quote to RE2",
    "E": "a literal 'E' to JavaScript, the end of a quote to RE2",
    "p": "a literal 'p' to JavaScript (without the u flag), a Unicode class to RE2",
    "P": "a literal 'P' to JavaScript (without the u flag), a Unicode class to RE2",
    "C": "a literal 'C' to JavaScript, any byte to RE2",
}


class MatcherError(KodeletError, ValueError):
    """A matcher that can never be read; the message names it."""


@functools.cache
def _engine() -> tuple[Any, Any]:
    """RE2 and its options, imported when a matcher is a regex (2 ms no one else pays)."""
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # RE2 would print each refused pattern on the host's stderr
    return re2, options


def _refuse(pattern: str, why: str) -> MatcherError:
    return MatcherError(f"matcher {pattern!r}: {why}")


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The RE2 text for the escape at ``pattern[i]`` (a backslash), and where it ends."""
    e = pattern[i + 1 : i + 2]
    if not e:
        return "\\", i + 1  # a trailing backslash: RE2 refuses it as JavaScript does
    if not (e.isascii() and e.isalnum()):
        return "\\" + e, i + 2  # an escaped punctuation character is that character
    if e in _SAME_ESCAPES and not (e == "0" and pattern[i + 2 : i + 3].isdigit()):
        return "\\" + e, i + 2
    if e in "bB" and not in_class:
        return "\\" + e, i + 2
    if e == "s":
        return (_JS_SPACE if in_class else f"[{_JS_SPACE}]"), i + 2
    if e == "S" and not in_class:
        return f"[^{_JS_SPACE}]", i + 2
    if e == "x" and _HEX2.fullmatch(pattern, i + 2, i + 4):
        return pattern[i : i + 4], i + 4
    if e == "u" and _HEX4.fullmatch(pattern, i + 2, i + 6):
        return "\\x{" + pattern[i + 2 : i + 6] + "}", i + 6
    if e.isdigit():
        why = "a backreference, which cannot be matched in linear time"
    elif e in _WHY_ESCAPE:
        why = _WHY_ESCAPE[e]
    else:
        why = "read differently by JavaScript and by kodelet's regex engine"
    raise _refuse(pattern, f"\\{e} is {why}")


def _group(pattern: str, i: int) -> tuple[str, int]:
    """The RE2 text for the ``(?`` at ``pattern[i]``, and where it ends."""
    rest = pattern[i + 2 :]
    if rest.startswith(":"):
        return "(?:", i + 3
    if rest.startswith(("=", "!", "<=", "<!")):
        raise _refuse(pattern, "lookaround (?=, (?!, (?<=, (?<! cannot be matched in linear time")
    named = _GROUP_NAME.match(rest)
    if named:
        return "(?P" + named.group(), i + 2 + named.end()
    raise _refuse(
        pattern,
        f"({pattern[i + 1 : i + 4]}... is not JavaScript: JavaScript has no inline flags "
        "or (?P<name>...); a named group is (?<name>...)",
    )


def to_re2(pattern: str) -> str:
    """``pattern`` as RE2 must be given it to read it as JavaScript does.

    Raises :class:`MatcherError` for what RE2 cannot match in linear time or would
    read otherwise (see the module docstring)."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            text, i = _escape(pattern, i, in_class)
            out.append(text)
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif pattern.startswith("[:", i):
                raise _refuse(pattern, "[: is a POSIX class to RE2 and a '[' to JavaScript")
            out.append(c)
            i += 1
            continue
        if c == "[":
            if pattern.startswith(("[]", "[^]"), i):
                raise _refuse(pattern, "[] and [^] mean nothing and anything to JavaScript")
            in_class = True
            start = 2 if pattern.startswith("[^", i) else 1
            out.append(pattern[i : i + start])
            i += start
            continue
        if pattern.startswith("(?", i):
            text, i = _group(pattern, i)
            out.append(text)
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _glob_to_re2(pattern: str) -> str:
    """A Spec 07 glob (``*``, ``?``, ``[seq]``, ``[!seq]``) as an anchored RE2 pattern."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append("(?s:.*)")
        elif c == "?":
            out.append("(?s:.)")
        elif c == "[":
            j = i + 1 if pattern[i : i + 1] in ("!", "]") else i
            j = pattern.find("]", j + (pattern[j : j + 1] == "]"))
            if j < 0:
                out.append(r"\[")
                continue
            body = pattern[i:j].replace("\\", r"\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            elif body.startswith("^"):
                body = "\\" + body
            out.append(f"[{body}]")
            i = j + 1
        else:
            out.append(re.escape(c))
    return "^" + "".join(out) + "$"


def _compile(text: str) -> Any:
    re2, options = _engine()
    try:
        return re2.compile(text, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise MatcherError(str(detail)) from None


@attrs.frozen
class Matcher:
    pattern: str | None = None
    _names: frozenset[str] | None = attrs.field(init=False, default=None, repr=False)
    _regex: Any = attrs.field(init=False, default=None, repr=False)
    _glob: Any = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        pattern = self.pattern
        if pattern is not None and not isinstance(pattern, str):
            raise MatcherError(f"matcher must be a string, got {type(pattern).__name__}")
        if not pattern or pattern == "*":
            return
        if _SIMPLE.fullmatch(pattern):
            names = frozenset(p.strip() for p in _NAME_SEPARATORS.split(pattern) if p.strip())
            object.__setattr__(self, "_names", names)
            return
        # JavaScript constructs RE2 cannot run, or would read otherwise, are refused
        # even in a glob: `(?=Bash)` must not pass for a glob that never matches.
        text = to_re2(pattern)
        if "*" in pattern or "?" in pattern:
            with contextlib.suppress(MatcherError):
                object.__setattr__(self, "_glob", _compile(_glob_to_re2(pattern)))
        try:
            object.__setattr__(self, "_regex", _compile(text))
        except MatcherError as exc:
            if self._glob is None:
                raise MatcherError(f"matcher {pattern!r} is not a valid regex: {exc}") from None

    @property
    def matches_all(self) -> bool:
        return not self.pattern or self.pattern == "*"

    def __call__(self, value: str) -> bool:
        if self.matches_all:
            return True
        if self._names is not None:
            return value in self._names
        if self._regex is not None and self._regex.search(value) is not None:
            return True
        return self._glob is not None and self._glob.search(value) is not None
