"""The audit trail: every decision a hook or rule makes on a tool call or a prompt,
appended to a private local log (:mod:`.log`), and optionally sent to a team's
OpenTelemetry collector (:mod:`.otel`).

A runtime is handed an :class:`Audit` when it is assembled
(:func:`kodelet.assembly.load_runtime`) and calls :meth:`Audit.dispatched` after each
dispatch, so the bridge, the warm kodelet, ``kodelet hooks run``, replay and the Agent
SDK write the same records through one seam. A call where nobody decided anything
costs one scan of its trace and is not logged. Writing the log never changes an
answer: a failure is logged as a warning and shown by ``kodelet audit --check``
(docs/DECISIONS.md, "Rules: an audit failure does not block").
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import AuditSettings
from ..events import Event
from ..payloads import BasePayload
from ..trace import Outcome, RawRecord
from .log import LINE_CAP, AuditWriteError, DecisionLog

__all__ = ["AUDITED", "Audit", "AuditWriteError", "DecisionLog", "export_state"]

log = logging.getLogger("kodelet.audit")

AUDITED = frozenset({Event.BEFORE_TOOL_CALL, Event.AFTER_TOOL_CALL, Event.USER_MESSAGE_SEND})
"""The events a decision is made on: a tool call (before it runs, and its output after)
and a prompt. after_turn and agent_stop act on the conversation, not on a call."""
_DECISIVE = (Outcome.BLOCKED, Outcome.MODIFIED, Outcome.ACTION, Outcome.ERROR)


RULES_HOOK = "builtin:rules"


def decisive(records: Sequence[RawRecord]) -> bool:
    """Whether any hook decided something: the cheap test every dispatch pays. (An error
    that did not block is ruled out later, by :func:`.records.decisions`.) The rules
    guard's explicit allow is a no-action with a reason."""
    return any(r[2] in _DECISIVE or (r[0] == RULES_HOOK and len(r) > 5) for r in records)


class Audit:
    """The sink of one runtime: its project, the agent it answers by default, the log
    and the export. ``export`` is the OTLP base endpoint ("" for none)."""

    def __init__(
        self,
        log_file: DecisionLog | None,
        *,
        project: str,
        agent: str = "",
        export: str = "",
    ) -> None:
        self.log_file = log_file
        self.project = project
        self.agent = agent
        self.export = export
        self.failed = ""
        """Why the last record could not be written ("" when it was)."""
        self._spans: Any = None
        self._warned_export = False
        self._export_lock = threading.Lock()  # a warm kodelet's calls run in threads

    @classmethod
    def of(
        cls, settings: AuditSettings, global_root: Path, env: Mapping[str, str], *,
        project: str, agent: str = "",
    ) -> Audit | None:  # fmt: skip
        """The sink ``[audit]`` asks for, or None when it is switched off."""
        if not settings.enabled:
            return None
        export = ""
        if settings.otlp_endpoint or settings.otel:  # the export's module only then
            from . import otel

            export = otel.endpoint(settings.otlp_endpoint, settings.otel, env)
        return cls(
            DecisionLog(global_root, settings.max_bytes, settings.keep),
            project=project,
            agent=agent,
            export=export,
        )

    def warm_up(self) -> None:
        """Import what logging a decision needs (the secret shapes compiled) now, as a
        warm kodelet starts, not at its first decision."""
        from . import records  # noqa: F401

    def dispatched(
        self, payload: BasePayload, records: Sequence[RawRecord], agent: str | None = None
    ) -> None:
        """Log the decisions of one dispatch. Never raises: the call is answered anyway."""
        if payload.EVENT not in AUDITED or not decisive(records):
            return
        from .records import decisions  # the secret shapes are compiled only when needed

        try:
            rows = list(
                decisions(
                    payload, records, agent=self.agent if agent is None else agent,
                    project=self.project,
                )
            )  # fmt: skip
        except Exception as exc:  # a bug here must not cost the agent its answer
            self._fail(f"{type(exc).__name__}: {exc}")
            return
        for row in rows:
            self.write(row)

    def write(self, record: dict[str, Any]) -> None:
        """One record to the log and the export; a failure is a warning."""
        if self.log_file is not None:
            try:
                self.log_file.append(_fit(record))
                self.failed = ""
            except (AuditWriteError, OSError) as exc:
                self._fail(str(exc))
        if self.export:
            self._emit(record)

    def _fail(self, why: str) -> None:
        self.failed = why
        log.warning("audit: decision not logged: %s", why)

    def _emit(self, record: dict[str, Any]) -> None:
        with self._export_lock:
            self._start_export()
            spans = self._spans
        if spans is None:
            return
        end = time.time_ns()
        start = end - int(float(record.get("ms", 0)) * 1e6)
        try:
            spans.emit(record, start, end)
        except Exception as exc:
            log.warning("audit: OpenTelemetry export failed: %s", exc)

    def _start_export(self) -> None:
        """The exporter, built at the first record to send (the SDK costs its import)."""
        if self._spans is None and self.export:
            from . import otel

            if not otel.installed():
                if not self._warned_export:
                    self._warned_export = True
                    log.warning(
                        "audit: OpenTelemetry export to %s is configured but the otel extra"
                        " is not installed (%s)", self.export, otel.EXTRA_HINT,
                    )  # fmt: skip
                return
            try:
                self._spans = otel.SpanExport(self.export)
            except Exception as exc:
                self.export = ""
                log.warning("audit: OpenTelemetry export off: %s", exc)

    def close(self) -> None:
        """Send what the export still holds (the runtime's close calls it)."""
        with self._export_lock:
            spans, self._spans, self.export = self._spans, None, ""
        if spans is not None:
            try:
                spans.close()
            except Exception as exc:
                log.warning("audit: OpenTelemetry export failed at close: %s", exc)


def _fit(record: dict[str, Any]) -> dict[str, Any]:
    """The record cut down until its line is under LINE_CAP bytes (one whole append)."""
    for _ in range(8):
        size = len(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()) + 1
        if size <= LINE_CAP:
            return record
        longest = max(("reason", "input", "project", "error", "session", "tool"),
                      key=lambda k: len(str(record.get(k, ""))))  # fmt: skip
        text = str(record[longest])
        record = {**record, longest: text[: max(0, len(text) // 2 - 1)] + "…"}
    return record


def export_state(settings: AuditSettings, env: Mapping[str, str]) -> tuple[bool, str]:
    """(fine, what to say) of the OpenTelemetry export, for ``kodelet audit --check``:
    configured but not installed is not fine, and says so."""
    from . import otel

    where = otel.endpoint(settings.otlp_endpoint, settings.otel, env)
    if not settings.enabled:
        return True, "off ([audit] enabled = false)"
    if not where:
        if settings.otel:
            return False, f"[audit] otel = true but {otel.ENV} is not set"
        return True, "off (no [audit] otlp_endpoint)"
    if not otel.installed():
        return False, (
            f"configured ({otel.traces_url(where)}) but the otel extra is not installed:"
            f" {otel.EXTRA_HINT}"
        )
    return True, f"spans to {otel.traces_url(where)}"


def default_log(global_root: Path, settings: AuditSettings) -> DecisionLog:
    return DecisionLog(global_root, settings.max_bytes, settings.keep)
