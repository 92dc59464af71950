"""The corpus report as one HTML file that opens anywhere, offline: inline CSS, charts
drawn as inline SVG, no script, no font or stylesheet fetched from anywhere.

Everything from a recording (commands, reasons, file names) is escaped: a
transcript is untrusted text, and a report is something people open.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .corpus import Corpus, HookStats
from .corpus_report import HOOK_COLUMNS, SESSION_COLUMNS

TIMELINE_ROWS = 500
BAR = 18
CHART_WIDTH = 560

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1d1d1f;background:#fff}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}
th,td{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.blocked{color:#b00020;font-weight:600}.rewritten,.modified{color:#8a6d00}
.error,.failed{color:#8e24aa}.action{color:#00796b}.context{color:#2e7d32}.dim,.no-action{color:#888}
.note{color:#1565c0}code{font-size:.95em}
details{margin:.3em 0}summary{cursor:pointer}
svg text{font:12px system-ui,sans-serif}
"""


def _cell(value: Any, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<td{attr}>{escape(str(value))}</td>"


def _num(value: int, cls: str) -> str:
    return _cell(value, f"n {cls}" if value else "n dim")


def _hooks(hooks: dict[str, Any]) -> str:
    head = "".join(f'<th class="n">{escape(label)}</th>' for _, label in HOOK_COLUMNS)
    rows = []
    styles = {"blocked": "blocked", "rewrote": "rewritten", "failed": "failed"}
    for name, row in hooks.items():
        cells = "".join(_num(row[key], styles.get(key, "")) for key, _ in HOOK_COLUMNS)
        p50, p95 = f"{row['p50_ms']:.2f} ms", f"{row['p95_ms']:.2f} ms"
        rows.append(f"<tr>{_cell(name)}{cells}{_cell(p50, 'n')}{_cell(p95, 'n')}</tr>")
    return (
        f'<table id="hooks"><tr><th>Hook</th>{head}<th class="n">p50</th>'
        f'<th class="n">p95</th></tr>{"".join(rows)}</table>'
    )


def _sessions(sessions: list[dict[str, Any]]) -> str:
    head = "".join(f'<th class="n">{escape(label)}</th>' for _, label in SESSION_COLUMNS)
    rows = []
    for row in sessions:
        if "error" in row:
            span = len(SESSION_COLUMNS)
            rows.append(
                f'<tr>{_cell(row["name"])}<td class="error" colspan="{span}">'
                f"{escape(row['error'])}</td></tr>"
            )
            continue
        styles = {"calls_blocked": "blocked", "messages_blocked": "blocked"}
        cells = "".join(_num(row[key], styles.get(key, "")) for key, _ in SESSION_COLUMNS)
        rows.append(f"<tr>{_cell(row['name'])}{cells}</tr>")
    return f'<table id="sessions"><tr><th>Session</th>{head}</tr>{"".join(rows)}</table>'


def _reasons(reasons: list[dict[str, Any]]) -> str:
    rows = []
    for r in reasons:
        ex = r["example"]
        example = f"{ex['session']} turn {ex['turn']} ({ex['event']}): {ex['subject']}"
        rows.append(
            f"<tr>{_cell(r['count'], 'n')}{_cell(r['hook'])}{_cell(r['reason'], 'blocked')}"
            f"<td><code>{escape(example)}</code></td></tr>"
        )
    return (
        '<table id="reasons"><tr><th class="n">n</th><th>Hook</th><th>Reason</th>'
        f"<th>Example call</th></tr>{''.join(rows)}</table>"
    )


def _changes(comparison: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {escape(k)}" for k, n in comparison["counts"].items() if n)
    rows = []
    for c in comparison["changes"]:
        cls = {"newly blocked": "blocked", "rewritten": "rewritten"}.get(c["kind"], "")
        rows.append(
            f"<tr>{_cell(c['kind'], cls)}{_cell(c['session'])}{_cell(c['turn'], 'n')}"
            f"<td><code>{escape(c['event'])}: {escape(c['subject'])}</code></td>"
            f"{_cell(c['before'])}{_cell(c['after'])}{_cell(c.get('hook', ''))}"
            f"{_cell(c.get('detail', ''))}</tr>"
        )
    return (
        f"<p>{counts or 'No call changes outcome.'}</p>"
        '<table id="changes"><tr><th>Change</th><th>Session</th><th class="n">Turn</th>'
        "<th>Call</th><th>Baseline</th><th>Candidate</th><th>Hook</th><th>Detail</th></tr>"
        f"{''.join(rows)}</table>"
    )


def _bars(title: str, values: list[tuple[str, int]], color: str) -> str:
    """A horizontal bar chart as inline SVG."""
    top = max((v for _, v in values), default=0) or 1
    label_w = 200
    width = CHART_WIDTH - label_w - 60
    height = BAR * len(values) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_WIDTH}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">'
    ]
    for i, (label, value) in enumerate(values):
        y = i * BAR + 4
        w = round(width * value / top)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(label[:32])}</text>'
            f'<rect x="{label_w}" y="{y}" width="{max(w, 1) if value else 0}" '
            f'height="{BAR - 4}" fill="{color}"/>'
            f'<text x="{label_w + w + 4}" y="{y + 13}">{value}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _latency(name: str, stats: HookStats) -> str:
    """One hook's latency distribution: a small histogram over log-spaced buckets."""
    bars = stats.latency.bars()
    if not bars:
        return ""
    top = max(n for _, n in bars)
    w, h, pad = 360, 80, 16
    step = w / len(bars)
    rects = []
    for i, (low, n) in enumerate(bars):
        bh = round((h - pad) * n / top)
        rects.append(
            f'<rect x="{i * step:.1f}" y="{h - pad - bh}" width="{max(step - 1, 1):.1f}" '
            f'height="{bh}" fill="#5c6bc0"><title>≥ {low * 1000:.3f} ms: {n}</title></rect>'
        )
    first, last = bars[0][0] * 1000, bars[-1][0] * 1000
    return (
        f"<figure><figcaption>{escape(name)}</figcaption>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
        f'aria-label="latency of {escape(name)}">{"".join(rects)}'
        f'<text x="0" y="{h - 2}">{first:.2f} ms</text>'
        f'<text x="{w}" y="{h - 2}" text-anchor="end">{last:.2f} ms</text></svg></figure>'
    )


def _timeline(name: str, steps: list[dict[str, Any]]) -> str:
    rows = []
    for step in steps[:TIMELINE_ROWS]:
        if "note" in step:
            rows.append(
                f"<tr>{_cell(step['turn'], 'n')}{_cell('note', 'note')}"
                f"{_cell(step['note'], 'note')}<td></td>{_cell(step['subject'])}</tr>"
            )
            continue
        event = ("↳ " if step.get("agent") else "") + step["event"]
        hooks = step["hooks"] or [{"name": "—", "outcome": "no hooks"}]
        for i, h in enumerate(hooks):
            detail = h.get("error") or h.get("detail") or ""
            if i == 0:
                detail = f"{step['subject']}: {detail}" if detail else step["subject"]
            rows.append(
                f"<tr>{_cell(step['turn'] if i == 0 else '', 'n')}"
                f"{_cell(event if i == 0 else '')}{_cell(h['name'])}"
                f"{_cell(h['outcome'], h['outcome'])}{_cell(detail)}</tr>"
            )
        for e in step.get("effects", []):
            rows.append(
                f"<tr><td></td><td></td>{_cell('host')}{_cell(e['kind'], 'action')}"
                f"{_cell(e['detail'])}</tr>"
            )
    more = len(steps) - TIMELINE_ROWS
    tail = f"<p class='dim'>{more} more steps in --json</p>" if more > 0 else ""
    return (
        f"<details><summary>{escape(name)} ({len(steps)} steps)</summary>"
        '<table class="timeline"><tr><th class="n">Turn</th><th>Event</th><th>Hook</th>'
        f"<th>Outcome</th><th>Detail</th></tr>{''.join(rows)}</table>{tail}</details>"
    )


def render(data: dict[str, Any], corpus: Corpus, title: str = "kodelet replay") -> str:
    """The whole document; ``data`` is the corpus JSON (with its comparison, if any)."""
    t = data["totals"]
    hooks = data["hooks"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{t['replayed']} of {t['sessions']} sessions replayed, {t.get('events', 0)} "
        f"events, {t.get('hook_calls', 0)} hook calls; hooks acted in "
        f"{t['sessions_acted']} sessions.</p>",
        "<h2>Hooks</h2>",
        _hooks(hooks),
        "<h2>Blocks per hook</h2>",
        _bars("blocks per hook", [(n, row["blocked"]) for n, row in hooks.items()], "#c62828"),
        "<h2>Latency per hook</h2>",
        "".join(_latency(n, corpus.hooks[n]) for n in hooks if n in corpus.hooks),
        "<h2>Sessions</h2>",
        _sessions(data["sessions"]),
    ]
    if data["block_reasons"]:
        parts += ["<h2>Most frequent block reasons</h2>", _reasons(data["block_reasons"])]
    if "comparison" in data:
        parts += ["<h2>Outcome changes against the baseline</h2>", _changes(data["comparison"])]
    timelines = data.get("timelines") or {}
    if timelines:
        parts.append("<h2>Timelines</h2>")
        parts += [_timeline(name, steps) for name, steps in timelines.items()]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
