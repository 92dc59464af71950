"""Many replays as one report: per hook, per session, the most frequent block reasons,
and what changes between a baseline run and a candidate run.

A worker (another process, another machine) turns each replay into a
:class:`Digest` of plain data right where it ran, so what travels back is
small and mergeable however many sessions there are; latencies travel as a
histogram for the same reason. Nothing here knows how the replays were run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ..events import Event
from ..trace import Outcome, TraceRecord
from . import report
from .player import Replay, Step

TOP_REASONS = 10
TIMED_OUT = "timed out after"
BUCKETS_PER_DECADE = 20
COMPARED = (Event.USER_MESSAGE_SEND, Event.BEFORE_TOOL_CALL, Event.AFTER_TOOL_CALL)


@attrs.define
class Histogram:
    """Hook latencies in logarithmic buckets (about 12% wide): merging two is adding counts,
    and a quantile is read off within that width, at any corpus size."""

    counts: dict[int, int] = attrs.field(factory=dict)

    def add(self, seconds: float) -> None:
        bucket = math.floor(math.log10(max(seconds, 1e-7)) * BUCKETS_PER_DECADE)
        self.counts[bucket] = self.counts.get(bucket, 0) + 1

    def merge(self, other: Histogram) -> None:
        for bucket, n in other.counts.items():
            self.counts[bucket] = self.counts.get(bucket, 0) + n

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def quantile(self, q: float) -> float:
        """Seconds: the middle of the bucket holding the ``q`` quantile (0 when empty)."""
        total = self.total
        if not total:
            return 0.0
        rank = q * total
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return float(10 ** ((bucket + 0.5) / BUCKETS_PER_DECADE))
        return float(10 ** ((max(self.counts) + 0.5) / BUCKETS_PER_DECADE))

    def bars(self) -> list[tuple[float, int]]:
        """(lower bound in seconds, count) per non-empty bucket, fastest first."""
        return [(10 ** (b / BUCKETS_PER_DECADE), self.counts[b]) for b in sorted(self.counts)]


@attrs.define
class HookStats:
    seen: int = 0
    acted: int = 0
    blocked: int = 0
    rewrote: int = 0
    failed: int = 0
    timed_out: int = 0
    latency: Histogram = attrs.field(factory=Histogram)

    def add(self, record: TraceRecord) -> None:
        self.seen += 1
        outcome = record.outcome
        if outcome in (Outcome.BLOCKED, Outcome.MODIFIED, Outcome.ACTION, Outcome.CONTEXT):
            self.acted += 1
        self.blocked += outcome is Outcome.BLOCKED
        self.rewrote += outcome is Outcome.MODIFIED
        if outcome is Outcome.ERROR:
            self.failed += 1
            self.timed_out += (record.error or "").startswith(TIMED_OUT)
        self.latency.add(record.duration)

    def merge(self, other: HookStats) -> None:
        for field in ("seen", "acted", "blocked", "rewrote", "failed", "timed_out"):
            setattr(self, field, getattr(self, field) + getattr(other, field))
        self.latency.merge(other.latency)

    def to_json(self) -> dict[str, Any]:
        return {
            "events": self.seen,
            "acted": self.acted,
            "blocked": self.blocked,
            "rewrote": self.rewrote,
            "failed": self.failed,
            "timed_out": self.timed_out,
            "p50_ms": round(self.latency.quantile(0.5) * 1000, 3),
            "p95_ms": round(self.latency.quantile(0.95) * 1000, 3),
        }


@attrs.frozen
class Example:
    """Where something happened: enough to find it in the session's own replay."""

    session: str
    turn: int
    event: str
    subject: str

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class Reason:
    hook: str
    reason: str
    count: int
    example: Example


@attrs.frozen
class CallOutcome:
    """What happened to one recorded call or message: ``blocked``, ``rewritten`` or ``passed``."""

    outcome: str
    detail: str
    example: Example
    hook: str = ""


@attrs.define
class Digest:
    """One replayed session as plain data: what the corpus report is built from."""

    name: str
    conv_id: str = ""
    error: str | None = None
    warnings: tuple[str, ...] = ()
    summary: dict[str, Any] = attrs.field(factory=dict)
    hooks: dict[str, HookStats] = attrs.field(factory=dict)
    reasons: dict[tuple[str, str], Reason] = attrs.field(factory=dict)
    calls: dict[str, CallOutcome] = attrs.field(factory=dict)
    timeline: list[dict[str, Any]] | None = None

    @property
    def acted(self) -> bool:
        return any(h.acted for h in self.hooks.values())

    def line_json(self) -> dict[str, Any]:
        """The session's one line in the report."""
        if self.error is not None:
            return {"name": self.name, "error": self.error}
        s = self.summary
        data: dict[str, Any] = {"name": self.name, "conv_id": self.conv_id}
        for key in (
            "events",
            "hook_calls",
            "turns",
            "tool_calls",
            "calls_blocked",
            "messages_blocked",
            "inputs_rewritten",
            "outputs_rewritten",
            "compactions",
            "hook_failures",
            "subagent_events",
        ):
            data[key] = s.get(key, 0)
        data["acted"] = self.acted
        if self.warnings:
            data["warnings"] = list(self.warnings)
        data["wall_time_ms"] = s.get("wall_time_ms", 0.0)
        return data


def _outcome(step: Step) -> tuple[str, str, str]:
    kinds = {e.kind: e.detail for e in step.effects}
    blocker = next((r for r in step.hooks if r.outcome is Outcome.BLOCKED), None)
    if "call-blocked" in kinds or "message-blocked" in kinds:
        who = blocker.name if blocker else ""
        return "blocked", (blocker.detail or "") if blocker else "", who
    for kind in ("input-rewritten", "output-rewritten"):
        if kind in kinds:
            who = next((r.name for r in step.hooks if r.outcome is Outcome.MODIFIED), "")
            return "rewritten", f"{kind}: {kinds[kind]}", who
    return "passed", "", ""


def digest(
    replay: Replay, *, calls: bool = False, timeline: bool = False, only_acted: bool = False
) -> Digest:
    """The plain-data gist of a replay; ``calls`` keeps each call's outcome (for a
    comparison), ``timeline`` each step (for the HTML report)."""
    out = Digest(
        name=replay.name,
        conv_id=replay.session.conv_id,
        warnings=replay.session.warnings,
        summary=report.summary(replay),
    )
    for step in replay.steps:
        if step.event is None:
            continue
        for record in step.hooks:
            out.hooks.setdefault(record.name, HookStats()).add(record)
            if record.outcome is Outcome.BLOCKED:
                key = (record.name, record.detail or "")
                found = out.reasons.get(key)
                if found is None:
                    example = Example(replay.name, step.turn, step.event.value, step.subject)
                    out.reasons[key] = Reason(record.name, key[1], 1, example)
                else:
                    found.count += 1
        if calls and step.event in COMPARED:
            outcome, detail, hook = _outcome(step)
            example = Example(replay.name, step.turn, step.event.value, step.subject)
            ref = f"{step.agent}|{step.ref}|{step.event.value}"
            out.calls[ref] = CallOutcome(outcome, detail, example, hook)
    if timeline:
        out.timeline = report.timeline_json(replay, only_acted)
    return out


def failed(name: str, error: str) -> Digest:
    return Digest(name=name, error=error)


# -- the corpus ------------------------------------------------------------------


@attrs.define
class Corpus:
    """Digests merged: totals per hook and the most frequent block reasons."""

    sessions: list[Digest]
    hooks: dict[str, HookStats]
    reasons: list[Reason]

    @classmethod
    def of(cls, digests: Iterable[Digest]) -> Corpus:
        sessions = list(digests)
        hooks: dict[str, HookStats] = {}
        reasons: dict[tuple[str, str], Reason] = {}
        for d in sessions:
            for name, stats in d.hooks.items():
                hooks.setdefault(name, HookStats()).merge(stats)
            for key, r in d.reasons.items():
                found = reasons.get(key)
                if found is None:
                    reasons[key] = Reason(r.hook, r.reason, r.count, r.example)
                else:
                    found.count += r.count
        ranked = sorted(reasons.values(), key=lambda r: (-r.count, r.hook, r.reason))
        return cls(sessions=sessions, hooks=dict(sorted(hooks.items())), reasons=ranked)

    def totals(self) -> dict[str, Any]:
        ok = [d for d in self.sessions if d.error is None]
        total: Counter[str] = Counter()
        for d in ok:
            for key in ("events", "hook_calls", "turns", "tool_calls", "calls_blocked"):
                total[key] += d.summary.get(key, 0)
            for key in ("messages_blocked", "inputs_rewritten", "outputs_rewritten"):
                total[key] += d.summary.get(key, 0)
            for key in ("compactions", "hook_failures", "subagent_events"):
                total[key] += d.summary.get(key, 0)
        return {
            "sessions": len(self.sessions),
            "replayed": len(ok),
            "failed_to_load": len(self.sessions) - len(ok),
            "sessions_acted": sum(1 for d in ok if d.acted),
            **dict(total),
        }

    def to_json(self, *, only_acted: bool = False, top: int = TOP_REASONS) -> dict[str, Any]:
        sessions = [d for d in self.sessions if not only_acted or d.acted or d.error is not None]
        hooks = {name: s.to_json() for name, s in self.hooks.items() if not only_acted or s.acted}
        data: dict[str, Any] = {
            "totals": self.totals(),
            "hooks": hooks,
            "sessions": [d.line_json() for d in sessions],
            "block_reasons": [
                {
                    "hook": r.hook,
                    "reason": r.reason,
                    "count": r.count,
                    "example": r.example.to_json(),
                }
                for r in self.reasons[:top]
            ],
        }
        if any(d.timeline is not None for d in sessions):
            data["timelines"] = {d.name: d.timeline for d in sessions if d.timeline is not None}
        return data


# -- baseline comparison --------------------------------------------------------------


@attrs.frozen
class Change:
    """One call whose outcome differs between the baseline and the candidate run."""

    kind: str
    example: Example
    before: str
    after: str
    hook: str = ""
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {"kind": self.kind, **self.example.to_json()}
        data.update(before=self.before, after=self.after)
        if self.hook:
            data["hook"] = self.hook
        if self.detail:
            data["detail"] = self.detail
        return data


CHANGE_KINDS = (
    "newly blocked",
    "no longer blocked",
    "rewritten",
    "no longer rewritten",
    "not reached",
    "newly reached",
)


def _kind(before: CallOutcome | None, after: CallOutcome | None) -> str | None:
    if before is None:
        return "newly reached"
    if after is None:
        return "not reached"
    if before.outcome == after.outcome and before.detail == after.detail:
        return None
    if after.outcome == "blocked":
        return "newly blocked"
    if before.outcome == "blocked":
        return "no longer blocked"
    if after.outcome == "rewritten":
        return "rewritten"
    return "no longer rewritten"


def compare(baseline: Sequence[Digest], candidate: Sequence[Digest]) -> list[Change]:
    """Every compared call whose outcome differs, in session and replay order.

    Calls are matched by session name and the recorded call's place (its id,
    or the item's index), so a call that is not reached in one run (its
    message was blocked) shows as such rather than shifting the rest.
    """
    before_by = {d.name: d for d in baseline}
    changes: list[Change] = []
    for d in candidate:
        base = before_by.get(d.name)
        if base is None or base.error is not None or d.error is not None:
            continue
        keys = list(d.calls) + [k for k in base.calls if k not in d.calls]
        for key in keys:
            b, a = base.calls.get(key), d.calls.get(key)
            kind = _kind(b, a)
            if kind is None:
                continue
            shown = a or b
            assert shown is not None
            changes.append(
                Change(
                    kind=kind,
                    example=shown.example,
                    before=b.outcome if b else "not reached",
                    after=a.outcome if a else "not reached",
                    hook=(a.hook if a and a.hook else (b.hook if b else "")),
                    detail=(a.detail if a and a.detail else (b.detail if b else "")),
                )
            )
    return changes


def comparison_json(changes: Sequence[Change]) -> dict[str, Any]:
    counts = Counter(c.kind for c in changes)
    return {
        "counts": {kind: counts[kind] for kind in CHANGE_KINDS},
        "changes": [c.to_json() for c in changes],
    }
