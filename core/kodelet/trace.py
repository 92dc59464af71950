"""One record per hook called, so users can see who decided what and how long it took."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import attrs

from .events import Event
from .kinds import Source

__all__ = ["Dispatch", "LazyDispatch", "Outcome", "RawRecord", "Source", "TraceRecord"]


class Outcome(StrEnum):
    NO_ACTION = "no-action"
    BLOCKED = "blocked"
    MODIFIED = "modified"
    ACTION = "action"
    # Only additional_context: text for the model's next call, nothing else changed.
    CONTEXT = "context"
    ERROR = "error"


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


# (name, source, outcome, duration[, error, detail]): a TraceRecord not yet built.
RawRecord = tuple[Any, ...]


def _record(event: Event, raw: RawRecord) -> TraceRecord:
    name, source, outcome, duration, *rest = raw
    error, detail = rest if rest else (None, None)
    return TraceRecord(
        event=event,
        name=name,
        source=source,
        outcome=outcome,
        duration=duration,
        error=error,
        detail=detail,
    )


class LazyDispatch(Dispatch):
    """A :class:`Dispatch` whose TraceRecords are built when ``trace`` is first read.

    The dispatch loop records every hook as a plain tuple; turning those into
    TraceRecord objects costs more than calling a small native hook, so a host
    that never looks at the trace does not pay for it. Equality, hashing, repr
    and pickling go through the fields of :class:`Dispatch` itself, so a field
    added there is never silently left out."""

    __slots__ = ("_built", "_raw")
    _built: tuple[TraceRecord, ...]
    _raw: list[RawRecord]

    def __init__(
        self,
        event: Event,
        result: Any,
        raw: list[RawRecord] | None = None,
        trace: tuple[TraceRecord, ...] = (),
    ) -> None:
        # ``trace=`` is how ``attrs.evolve`` rebuilds one; the dispatch loop uses :meth:`of`.
        object.__setattr__(self, "event", event)
        object.__setattr__(self, "result", result)
        if raw is None:
            object.__setattr__(self, "_built", tuple(trace))
        else:
            object.__setattr__(self, "_raw", raw)

    @classmethod
    def of(cls, event: Event, result: Any, raw: list[RawRecord]) -> LazyDispatch:
        """What the dispatch loop returns, built without ``__init__``'s calls: this runs
        once per dispatch and is a measurable share of a small one."""
        self = _new(cls)
        _set_event(self, event)
        _set_result(self, result)
        _set_raw(self, raw)
        return self

    @property
    def trace(self) -> tuple[TraceRecord, ...]:
        try:
            return self._built
        except AttributeError:
            event = self.event
            built = tuple(_record(event, r) for r in self._raw)
            object.__setattr__(self, "_built", built)
            return built

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in attrs.fields(Dispatch))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dispatch):
            return NotImplemented
        return self._fields() == tuple(getattr(other, f.name) for f in attrs.fields(Dispatch))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in attrs.fields(Dispatch))
        return f"Dispatch({inner})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Dispatch, self._fields())


_new = object.__new__
_set_event = Dispatch.__dict__["event"].__set__
_set_result = Dispatch.__dict__["result"].__set__
_set_raw = LazyDispatch.__dict__["_raw"].__set__
