"""The corpus report in the terminal, drawn from the same JSON document ``--json`` prints,
so the two can never disagree."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..escaping import printable

HOOK_COLUMNS = (
    ("events", "events"),
    ("acted", "acted"),
    ("blocked", "blocked"),
    ("rewrote", "rewrote"),
    ("failed", "failed"),
    ("timed_out", "timeout"),
)
SESSION_COLUMNS = (
    ("events", "events"),
    ("tool_calls", "calls"),
    ("calls_blocked", "blocked"),
    ("messages_blocked", "msgs"),
    ("inputs_rewritten", "rewrote"),
    ("compactions", "compact"),
    ("hook_failures", "failed"),
)


def _table(title: str) -> Table:
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        expand=False,
    )


def _numbers(table: Table, labels: list[str], rows: list[list[str]]) -> int:
    """Count columns as wide as their widest cell: a cut-off number is a wrong number.
    Returns the width they take, separators included."""
    used = 0
    for i, label in enumerate(labels):
        width = max([len(label), *(len(r[i]) for r in rows)])
        table.add_column(label, justify="right", no_wrap=True, min_width=width)
        used += width + 2
    return used


def _text(table: Table, label: str, width: int) -> None:
    """A text column cut to ``width`` with an ellipsis, never wrapped."""
    table.add_column(
        label, no_wrap=True, overflow="ellipsis", max_width=max(width, 8), min_width=min(8, width)
    )


def _width(console: Console | None) -> int:
    return console.width if console is not None else 100


def shown_text(text: object, style: str = "") -> Text:
    """Text from a transcript or a file: escaped (docs/SECURITY.md), never markup."""
    return Text(printable(text), style=style)


def _count(value: int, style: str) -> Text:
    return Text(str(value), style=style if value else "dim")


def hooks_table(hooks: dict[str, Any], console: Console | None = None) -> Table:
    table = _table("Hooks")
    rows = [
        [str(row[key]) for key, _ in HOOK_COLUMNS]
        + [f"{row['p50_ms']:.2f}", f"{row['p95_ms']:.2f}"]
        for row in hooks.values()
    ]
    labels = [label for _, label in HOOK_COLUMNS] + ["p50 ms", "p95 ms"]
    longest = max((len(n) for n in hooks), default=4)
    _text(table, "Hook", min(longest, _width(console) - _measure(labels, rows) - 1))
    _numbers(table, labels, rows)
    styles = {"blocked": "bold red", "rewrote": "yellow", "failed": "bold magenta"}
    for name, row, cells in zip(hooks, hooks.values(), rows, strict=True):
        counts = [_count(row[key], styles.get(key, "")) for key, _ in HOOK_COLUMNS]
        table.add_row(shown_text(name), *counts, *cells[len(HOOK_COLUMNS) :])
    return table


def _measure(labels: list[str], rows: list[list[str]]) -> int:
    return sum(max([len(label), *(len(r[i]) for r in rows)]) + 2 for i, label in enumerate(labels))


def sessions_table(sessions: list[dict[str, Any]], console: Console | None = None) -> Table:
    table = _table("Sessions")
    ok = [r for r in sessions if "error" not in r]
    labels = [label for _, label in SESSION_COLUMNS]
    rows = [[str(r[key]) for key, _ in SESSION_COLUMNS] for r in ok]
    longest = max((len(r["name"]) for r in ok), default=7)
    _text(table, "Session", min(longest, _width(console) - _measure(labels, rows) - 1))
    _numbers(table, labels, rows)
    styles = {"calls_blocked": "bold red", "messages_blocked": "bold red"}
    for row in ok:
        table.add_row(
            shown_text(row["name"]),
            *[_count(row[key], styles.get(key, "")) for key, _ in SESSION_COLUMNS],
        )
    return table


def failures(sessions: list[dict[str, Any]], console: Console) -> None:
    for row in sessions:
        if "error" in row:
            console.print(shown_text(f"not replayed: {row['error']}", "magenta"), soft_wrap=True)


def reasons_table(reasons: list[dict[str, Any]], console: Console | None = None) -> Table:
    table = _table("Most frequent block reasons")
    room = _width(console) - _numbers(table, ["n"], [[str(r["count"])] for r in reasons]) - 3
    hook = min(max(len(r["hook"]) for r in reasons), room // 3)
    reason = min(max(len(r["reason"]) for r in reasons), room // 2)
    _text(table, "Hook", hook)
    _text(table, "Reason", reason)
    _text(table, "Example call", room - hook - reason - 4)
    for r in reasons:
        ex = r["example"]
        where = f"{ex['subject']} ({ex['session']}, turn {ex['turn']})"
        table.add_row(
            str(r["count"]), shown_text(r["hook"]), shown_text(r["reason"]), shown_text(where)
        )
    return table


def changes_table(comparison: dict[str, Any], console: Console | None = None) -> Table:
    table = _table("Outcome changes against the baseline")
    changes = comparison["changes"]
    kind = max(len(c["kind"]) for c in changes)
    table.add_column("Change", no_wrap=True, min_width=kind)
    room = _width(console) - kind - 1
    session = min(max(len(c["session"]) for c in changes), room // 5)
    _text(table, "Session", session)
    room -= session + 1 + _numbers(table, ["Turn"], [[str(c["turn"])] for c in changes])
    hook = min(max(len(c.get("hook", "")) for c in changes), room // 5)
    _text(table, "Call", room // 2)
    _text(table, "Hook", hook)
    _text(table, "Detail", room - room // 2 - hook - 3)
    styles = {"newly blocked": "bold red", "no longer blocked": "green", "rewritten": "yellow"}
    for c in comparison["changes"]:
        table.add_row(
            Text(c["kind"], style=styles.get(c["kind"], "")),
            shown_text(c["session"]),
            str(c["turn"]),
            shown_text(f"{c['event']}: {c['subject']}"),
            shown_text(c.get("hook", "")),
            shown_text(c.get("detail", "")),
        )
    return table


def render(data: dict[str, Any], console: Console) -> None:
    t = data["totals"]
    head = (
        f"[bold]Corpus[/]: {t['replayed']} of {t['sessions']} sessions replayed, "
        f"{t.get('events', 0)} events, {t.get('hook_calls', 0)} hook calls; "
        f"hooks acted in {t['sessions_acted']}"
    )
    console.print(head)
    if data["hooks"]:
        console.print(hooks_table(data["hooks"], console))
    else:
        console.print("[dim]no hook acted[/]" if data.get("only_acted") else "[dim]no hooks[/]")
    console.print(sessions_table(data["sessions"], console))
    failures(data["sessions"], console)
    if data["block_reasons"]:
        console.print(reasons_table(data["block_reasons"], console))
    comparison = data.get("comparison")
    if comparison is not None:
        counts = ", ".join(f"{n} {kind}" for kind, n in comparison["counts"].items() if n)
        console.print(f"[bold]Against the baseline[/]: {counts or 'no call changes outcome'}")
        if comparison["changes"]:
            console.print(changes_table(comparison, console))
