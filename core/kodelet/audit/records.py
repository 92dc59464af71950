"""What one decision looks like in the log: built from a dispatch's raw trace records.

The dispatch loop already records what each hook did (:mod:`kodelet.trace`); a
decision is a record whose outcome refused, held for approval or changed the call, or
a fail-closed hook's failure that blocked it. The rules guard (``builtin:rules``) says
which rule decided in its reason (``kodelet rule NAME (SOURCE): ...``), which is read
back here, from that built-in only: a user's hook cannot pass itself off as a rule.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ..events import Event
from ..kinds import Source
from ..payloads import BasePayload
from ..secrets import redact
from ..trace import Outcome, RawRecord

__all__ = ["RULES_HOOK", "decisions", "summary"]

RULES_HOOK = "builtin:rules"  # also in the package's ``decisive``
_RULE_REASON = re.compile(r"kodelet rule (?P<rule>[^\s()]+) \((?P<source>[^)]*)\): ")
_SLOW = re.compile(r"slow: [0-9.]+s(?:; |$)")
_FAIL_CLOSED = "fail-closed: blocked"

INPUT_CHARS = 200
SCAN_CHARS = 8192
"""How much of a call's input is redacted before the summary is cut to INPUT_CHARS:
cutting first could leave half a key that no shape recognises any more."""
REASON_CHARS = 600


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary(payload: BasePayload) -> str:
    """The call's input as a short line with its secrets masked: a shell call's command,
    a prompt's text, else the tool input as compact JSON."""
    if payload.EVENT is Event.USER_MESSAGE_SEND:
        text = str(getattr(payload, "message", ""))
    else:
        tool_input = getattr(payload, "tool_input", None) or {}
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if isinstance(command, str):
            text = command
        else:
            text = json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"), default=str)
    text = redact(text[:SCAN_CHARS])
    return _clip(" ".join(text.split()), INPUT_CHARS)


def _decision(event: Event, raw: RawRecord) -> tuple[str, str, str] | None:
    """(decision, reason, error) of one raw trace record, or None when it decided nothing."""
    outcome = raw[2]
    error, detail = (raw[4], raw[5]) if len(raw) > 4 else (None, None)
    detail = _SLOW.sub("", detail or "", count=1)
    if outcome is Outcome.NO_ACTION and raw[0] == RULES_HOOK and raw[1] is Source.BUILTIN:
        # the rules guard says why it let the call go only when a rule allowed it
        return ("allow", detail, "") if _RULE_REASON.match(detail) else None
    if outcome is Outcome.BLOCKED:
        return "deny", detail, ""
    if outcome is Outcome.ACTION and detail.startswith("ask: "):
        return "ask", detail.removeprefix("ask: "), ""
    if outcome is Outcome.MODIFIED:
        what = "output" if event is Event.AFTER_TOOL_CALL else "input"
        return "rewrite", detail or f"{what} rewritten", ""
    if outcome is Outcome.ERROR and detail == _FAIL_CLOSED:
        why = str(error or "")
        return "deny", f"hook {raw[0]} failed (fail-closed): {why}", why
    return None


def stamp(now: float | None = None) -> str:
    """ISO 8601 in UTC with milliseconds and a ``Z``, as every record's ``time``."""
    now = time.time() if now is None else now
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def decisions(
    payload: BasePayload, records: Sequence[RawRecord], *, agent: str, project: str
) -> Iterator[dict[str, Any]]:
    """One log record per hook or rule that decided on this call, in call order."""
    event = payload.EVENT
    when = stamp()
    text: str | None = None
    for raw in records:
        found = _decision(event, raw)
        if found is None:
            continue
        decision, reason, error = found
        name, source = raw[0], raw[1]
        by, origin = f"hook:{name}", str(getattr(source, "value", source))
        if name == RULES_HOOK and source is Source.BUILTIN:
            rule = _RULE_REASON.match(reason)
            if rule is not None:
                by, origin = f"rule:{rule['rule']}", rule["source"]
        if text is None:
            text = summary(payload)
        record: dict[str, Any] = {
            "time": when,
            "agent": agent,
            "session": _clip(payload.conv_id, 200),
            "project": _clip(project, 500),
            "event": event.value,
            "tool": _clip(str(getattr(payload, "tool_name", "")), 200),
            "input": text,
            "decision": decision,
            "by": _clip(by, 200),
            "source": origin,
            "reason": _clip(redact(reason), REASON_CHARS),
            "ms": round(raw[3] * 1000, 3),
        }
        if error:
            record["error"] = _clip(redact(error), 300)
        yield record
