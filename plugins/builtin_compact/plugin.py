"""``builtin:compact-trigger``: ask for the ``compact`` recipe once the context fills up.

Registered through the same ``kodelet.plugins`` entry point as any third-party
plugin, and ordered last, so a user's own compaction hook wins. The logic is
ADR 025's ``AfterTurnCompactHook``: the threshold is inclusive. A payload without
a threshold gets the documented 80 % rather than Go's zero value, which would
compact after every turn.
"""

from __future__ import annotations

from kodelet.markers import hookimpl
from kodelet.payloads import UsageInfo
from kodelet.results import AfterTurnResult


@hookimpl(trylast=True)
def after_turn(
    usage: UsageInfo, auto_compact_enabled: bool, auto_compact_threshold: float | None
) -> AfterTurnResult | None:
    if not auto_compact_enabled or usage.max_context_window == 0:
        return None
    threshold = 0.80 if auto_compact_threshold is None else auto_compact_threshold
    ratio = usage.current_context_window / usage.max_context_window
    if ratio >= threshold:
        return AfterTurnResult(result="callback", callback="compact")
    return None
