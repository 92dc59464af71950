"""The small vocabularies the rest of the code decides on: never bare strings.

All are ``str`` enums, so they print and serialise as the words users see in
``hooks list`` and ``plugins list`` and still compare equal to those words.
"""

from __future__ import annotations

from enum import StrEnum


class Source(StrEnum):
    """What kind of hook a trace record or a listing row is about."""

    BUILTIN = "builtin"
    PYTHON = "python"
    EXECUTABLE = "executable"
    CLAUDE = "claude"


class Status(StrEnum):
    ACTIVE = "active"
    SKIPPED = "skipped"
    DISABLED = "disabled"


class Location(StrEnum):
    """Where a hook or plugin comes from: one of the two roots, or Python's environment."""

    LOCAL = "local"
    GLOBAL = "global"
    BUILTIN = "builtin"
    INSTALLED = "installed"


class Protocol(StrEnum):
    """Extra protocols an executable may name after its event in answer to ``hook``."""

    JSONL = "jsonl"
