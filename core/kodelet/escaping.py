"""Text from disk or from a transcript, made safe for a terminal.

One function, used by every plain-text report: the CLI's tables and messages, the
replay timeline and the corpus and comparison reports. A transcript is written by
whoever wrote the session (a tool's output, a file name the model saw), so an
``ESC[2K`` in it must not erase the row that says a call was blocked."""

from __future__ import annotations

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object) -> str:
    """``text`` with control characters, escape sequences, bidi overrides and line
    breaks as visible escapes (``\\x1b``, ``\\n``, ``\\u202e``), so nothing read can move
    the cursor, set a title or forge a line. JSON output is escaped by ``json`` instead."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(
        c if c.isprintable() else _ESCAPES.get(c) or c.encode("unicode_escape").decode("ascii")
        for c in s
    )
