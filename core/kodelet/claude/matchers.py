"""Matchers, read the way Claude Code reads them.

``None``, ``""`` and ``"*"`` match everything. A matcher made only of letters,
digits, ``_`` and ``|`` is a list of exact names (``Bash``, ``Write|Edit``).
Anything else is a regular expression searched in the value, as Claude Code
does with JavaScript's ``RegExp.test`` (``Notebook.*``, ``^mcp__github__``); anchor
it with ``^...$`` to match the whole name. A glob such as ``mcp__*`` or ``*Edit``
also works, as Spec 07 has it: a matcher with ``*`` or ``?`` matches when either
reading matches. A matcher that is neither a valid regex nor a glob is refused
when it is built, with a one-line error, instead of silently never matching.
"""

from __future__ import annotations

import fnmatch
import re

import attrs

_SIMPLE = re.compile(r"[A-Za-z0-9_|]+")


class MatcherError(ValueError):
    """A matcher that can never be read; the message names it."""


@attrs.frozen
class Matcher:
    pattern: str | None = None
    _names: frozenset[str] | None = attrs.field(init=False, default=None, repr=False)
    _regex: re.Pattern[str] | None = attrs.field(init=False, default=None, repr=False)
    _glob: bool = attrs.field(init=False, default=False, repr=False)

    def __attrs_post_init__(self) -> None:
        pattern = self.pattern
        if pattern is not None and not isinstance(pattern, str):
            raise MatcherError(f"matcher must be a string, got {type(pattern).__name__}")
        if not pattern or pattern == "*":
            return
        if _SIMPLE.fullmatch(pattern):
            names = frozenset(p.strip() for p in pattern.split("|") if p.strip())
            object.__setattr__(self, "_names", names)
            return
        is_glob = "*" in pattern or "?" in pattern
        object.__setattr__(self, "_glob", is_glob)
        try:
            object.__setattr__(self, "_regex", re.compile(pattern))
        except re.error as exc:
            if not is_glob:
                raise MatcherError(f"matcher {pattern!r} is not a valid regex: {exc}") from None

    @property
    def matches_all(self) -> bool:
        return not self.pattern or self.pattern == "*"

    def __call__(self, value: str) -> bool:
        if self.matches_all:
            return True
        if self._names is not None:
            return value in self._names
        if self._regex is not None and self._regex.search(value):
            return True
        return self._glob and fnmatch.fnmatchcase(value, self.pattern or "")
