"""One record per hook called, so users can see who decided what and how long it took."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import attrs

from .events import Event


class Outcome(StrEnum):
    NO_ACTION = "no-action"
    BLOCKED = "blocked"
    MODIFIED = "modified"
    ACTION = "action"
    ERROR = "error"


class Source(StrEnum):
    BUILTIN = "builtin"
    PYTHON = "python"
    EXECUTABLE = "executable"


@attrs.frozen(kw_only=True)
class TraceRecord:
    event: Event
    name: str
    source: Source
    outcome: Outcome
    duration: float
    error: str | None = None
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "event": self.event.value,
            "name": self.name,
            "source": self.source.value,
            "outcome": self.outcome.value,
            "duration_ms": round(self.duration * 1000, 3),
        }
        if self.error is not None:
            data["error"] = self.error
        if self.detail is not None:
            data["detail"] = self.detail
        return data


@attrs.frozen
class Dispatch:
    """A merged result together with the trace of the hooks that produced it."""

    event: Event
    result: Any
    trace: tuple[TraceRecord, ...]

    @property
    def duration(self) -> float:
        return sum(r.duration for r in self.trace)
