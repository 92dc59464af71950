"""The replay report: a timeline, a summary, and the same as one JSON document.

Every timing in the JSON sits in a field whose name ends in ``_ms`` and
nothing else varies between two replays of the same session with the same
hooks, so a test (or a CI job diffing reports) drops those fields and
compares the rest.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..escaping import printable
from ..trace import Outcome
from .corpus_report import shown_text
from .player import Replay, Step

OUTCOME_STYLES = {
    Outcome.NO_ACTION.value: "dim",
    Outcome.BLOCKED.value: "bold red",
    Outcome.MODIFIED.value: "yellow",
    Outcome.ACTION.value: "cyan",
    Outcome.CONTEXT.value: "green",
    Outcome.ERROR.value: "bold magenta",
}

EFFECT_STYLES = {
    "message-blocked": "bold red",
    "call-blocked": "bold red",
    "input-rewritten": "yellow",
    "output-rewritten": "yellow",
    "compacted": "bold cyan",
    "follow-up": "cyan",
    "follow-up-dropped": "dim",
    "warning": "magenta",
}
NOTE_STYLE = "blue"

# Summary counter -> the effect kind it counts.
EFFECT_COUNTS = {
    "messages_blocked": "message-blocked",
    "calls_blocked": "call-blocked",
    "inputs_rewritten": "input-rewritten",
    "outputs_rewritten": "output-rewritten",
    "follow_ups": "follow-up",
    "compactions": "compacted",
    "warnings": "warning",
}


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def summary(replay: Replay) -> dict[str, Any]:
    outcomes: Counter[str] = Counter()
    effects: Counter[str] = Counter()
    hook_time = 0.0
    notes: Counter[str] = Counter()
    for step in replay.steps:
        if step.event is None:
            notes[step.note] += 1
        for record in step.hooks:
            outcomes[record.outcome.value] += 1
            hook_time += record.duration
        for effect in step.effects:
            effects[effect.kind] += 1
    data: dict[str, Any] = {
        "events": len(replay.steps) - sum(notes.values()),
        "hook_calls": sum(outcomes.values()),
        "turns": replay.turns,
        "turns_skipped": replay.turns_skipped,
        "tool_calls": replay.tool_calls,
    }
    data.update({key: effects[kind] for key, kind in EFFECT_COUNTS.items()})
    data["hook_failures"] = outcomes[Outcome.ERROR.value]
    data["outcomes"] = {o.value: outcomes[o.value] for o in Outcome}
    data["notes"] = dict(sorted(notes.items()))
    data["subagent_events"] = sum(1 for s in replay.steps if s.agent and s.event is not None)
    data["final_messages"] = replay.final_messages
    data["total_hook_time_ms"] = _ms(hook_time)
    data["wall_time_ms"] = _ms(replay.wall_time)
    return data


def step_json(index: int, step: Step) -> dict[str, Any]:
    if step.event is None:
        note: dict[str, Any] = {"step": index, "turn": step.turn, "note": step.note}
        if step.agent:
            note["agent"] = step.agent
        note["subject"] = step.subject
        return note
    data: dict[str, Any] = {
        "step": index,
        "turn": step.turn,
        "event": step.event.value,
    }
    if step.agent:
        data["agent"] = step.agent
    data["subject"] = step.subject
    data["hooks"] = [r.to_json() for r in step.hooks]
    if step.effects:
        data["effects"] = [{"kind": e.kind, "detail": e.detail} for e in step.effects]
    data["duration_ms"] = _ms(step.duration)
    return data


def acted(step: Step) -> bool:
    """Whether a hook did something at this step (what ``--only-acted`` keeps)."""
    if step.event is None:
        return False
    return bool(step.effects) or any(r.outcome is not Outcome.NO_ACTION for r in step.hooks)


def to_json(replay: Replay, *, only_acted: bool = False) -> dict[str, Any]:
    s = replay.session
    auto: dict[str, Any] = {"enabled": s.auto_compact.enabled}
    if s.auto_compact.threshold is not None:
        auto["threshold"] = s.auto_compact.threshold
    session: dict[str, Any] = {
        "name": replay.name,
        "conv_id": s.conv_id,
        "model": s.model,
        "max_context_window": s.max_context_window,
        "auto_compact": auto,
        "recipe_name": s.recipe_name,
        "items": len(s.items),
    }
    if s.invoked_by != "main":
        session["invoked_by"] = s.invoked_by
    if s.cwd:
        session["cwd"] = s.cwd
    if s.warnings:
        session["warnings"] = list(s.warnings)
    return {
        "session": session,
        "hooks": replay.hook_order,
        "timeline": timeline_json(replay, only_acted),
        "summary": summary(replay),
    }


def timeline_json(replay: Replay, only_acted: bool = False) -> list[dict[str, Any]]:
    """Every step as JSON, numbered from 1; only those where a hook acted, if asked."""
    return [
        step_json(i, step)
        for i, step in enumerate(replay.steps, 1)
        if not only_acted or acted(step)
    ]


# -- rich ----------------------------------------------------------------------


def _time(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _one_line(text: Text | str) -> Text:
    line = text if isinstance(text, Text) else shown_text(text)
    line.no_wrap, line.overflow = True, "ellipsis"
    return line


def timeline_table(replay: Replay, *, only_acted: bool = False, whole: bool = False) -> Table:
    """One line per hook call at any terminal width.

    On a terminal, hook names and details share what the fixed columns leave
    and are cut with an ellipsis rather than wrapped: wrapped, each row at 80
    columns became a column of word fragments. ``whole`` (for a pipe or a
    file, whose reader may grep it) cuts nothing; ``--json`` never does.
    ``only_acted`` leaves out the hook calls that did nothing.
    """
    table = Table(
        title=f"Replay of {shown(replay.name)}",
        title_justify="left",
        expand=False,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("Turn", justify="right", no_wrap=True)
    table.add_column("Event", no_wrap=True)
    table.add_column("Hook", max_width=None if whole else 28)
    table.add_column("Outcome", no_wrap=True)
    table.add_column("Time", justify="right", no_wrap=True)
    table.add_column("Detail")
    last_turn = -1
    for step in replay.steps:
        if only_acted and not acted(step):
            continue
        turn = str(step.turn) if step.turn != last_turn else ""
        last_turn = step.turn
        first = True
        if step.event is None:
            table.add_row(
                turn,
                Text("note", style=NOTE_STYLE),
                Text("recording", style="dim"),
                shown_text(step.note, NOTE_STYLE),
                "",
                _one_line(step.subject),
            )
            continue
        label = ("↳ " if step.agent else "") + step.event.value
        subject: str | None = step.subject

        def row(
            hook: Text | str,
            outcome: Text,
            time: str,
            detail: Text | str,
            *,
            _label: str = label,
        ) -> None:
            nonlocal first, turn
            event = Text(_label) if first else Text("")
            table.add_row(turn, event, _one_line(hook), outcome, time, _one_line(detail))
            first, turn = False, ""

        if not step.hooks:
            row(
                Text("—", style="dim"),
                Text("no hooks", style="dim"),
                "",
                shown_text(step.subject, "dim"),
            )
        for record in step.hooks:
            if only_acted and record.outcome is Outcome.NO_ACTION:
                continue
            note = record.error or record.detail or ""
            if subject is not None:
                note = f"{subject}: {note}" if note else subject
                subject = None
            row(
                record.name,
                Text(record.outcome.value, style=OUTCOME_STYLES[record.outcome.value]),
                _time(record.duration),
                note,
            )
        for effect in step.effects:
            detail = f"{subject}: {effect.detail}" if subject is not None else effect.detail
            subject = None
            row(
                Text("host", style="bold"),
                Text(effect.kind, style=EFFECT_STYLES.get(effect.kind, "")),
                "",
                detail,
            )
    return table


SUMMARY_LABELS = {
    "events": "events fired",
    "hook_calls": "hook calls",
    "turns": "turns replayed",
    "turns_skipped": "turns skipped (blocked message)",
    "tool_calls": "tool calls",
    "messages_blocked": "messages blocked",
    "calls_blocked": "calls blocked",
    "inputs_rewritten": "inputs rewritten",
    "outputs_rewritten": "outputs rewritten",
    "follow_ups": "follow-ups",
    "compactions": "compactions",
    "warnings": "warnings",
    "hook_failures": "hook failures",
    "subagent_events": "events fired by subagents",
    "final_messages": "messages at the end",
}


def summary_table(data: dict[str, Any]) -> Table:
    table = Table(title="Summary", title_justify="left", show_header=False, expand=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, label in SUMMARY_LABELS.items():
        value = data[key]
        style = ""
        if value and key in ("calls_blocked", "messages_blocked"):
            style = "bold red"
        elif value and key == "compactions":
            style = "bold cyan"
        elif value and key in ("hook_failures", "warnings"):
            style = "bold magenta"
        table.add_row(label, Text(str(value), style=style))
    notes = data.get("notes") or {}
    if notes:
        kinds = ", ".join(f"{n} {kind}" for kind, n in notes.items())
        table.add_row("notes in the recording", kinds)
    table.add_row("total hook time", f"{data['total_hook_time_ms']:.1f} ms")
    return table


def shown(text: object) -> str:
    """Text from a transcript or a file for a rich markup string: escaped, then quoted."""
    return escape(printable(text))


def render(
    replay: Replay, console: Console, *, only_acted: bool = False, whole: bool = False
) -> None:
    """The report on ``console``; ``whole`` cuts nothing (give the console room for it)."""
    s = replay.session
    head = f"[bold]{shown(replay.name)}[/]: conversation {shown(s.conv_id)}"
    if s.model:
        head += f", recorded with {shown(s.model)}"
    head += f", {len(s.items)} items"
    if s.max_context_window:
        head += f", context window {s.max_context_window}"
    if s.auto_compact.enabled:
        head += f", auto-compact at {s.auto_compact.threshold or 0.8:.0%}"
    if s.invoked_by != "main":
        head += f", invoked by {shown(s.invoked_by)}"
    console.print(head)
    for event, names in replay.hook_order.items():
        listed = ", ".join(shown(n) for n in names) if names else "[dim](none)[/]"
        console.print(f"  {shown(event)}: {listed}")
    console.print(timeline_table(replay, only_acted=only_acted, whole=whole))
    console.print(summary_table(summary(replay)))
