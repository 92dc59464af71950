"""``kodelet audit``: the decision log, tailed, filtered, followed and summarised."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import typer

from ..audit.log import DecisionLog
from ..config import AuditSettings, ConfigError, load_config
from ..places import Places
from .common import fail, printable, state

DECISIONS = ("deny", "ask", "rewrite", "allow")
_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
FOLLOW_POLL = 0.25
"""Seconds between looks at the log under ``--follow``."""

Record = dict[str, Any]
Filter = Callable[[Record], bool]


def since_of(text: str, now: datetime | None = None) -> datetime:
    """``--since``: a duration back from now (``90s``, ``15m``, ``2h``, ``7d``, ``1w``) or
    an ISO 8601 time (local time unless it names its offset)."""
    now = now or datetime.now(UTC)
    spec = text.strip().lower()
    if _DURATION.fullmatch(spec):
        n, unit = spec[:-1].strip(), spec[-1]
        return now - timedelta(seconds=int(n) * _UNITS[unit])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--since {text!r}: expected a duration (90s, 15m, 2h, 7d) or an ISO time"
            " (2026-01-31T12:00)"
        ) from None
    return when.astimezone(UTC) if when.tzinfo is None else when


def _when(record: Record) -> datetime | None:
    try:
        return datetime.fromisoformat(str(record.get("time", "")))
    except ValueError:
        return None


def filters(
    decision: str | None,
    agent: str | None,
    tool: str | None,
    by: str | None,
    since: str | None,
    project: str | None,
) -> list[Filter]:
    """The record tests the options ask for; a ValueError names a bad one."""
    out: list[Filter] = []
    if decision is not None:
        wanted = {d.strip() for d in decision.split(",") if d.strip()}
        bad = sorted(wanted - set(DECISIONS))
        if bad or not wanted:
            raise ValueError(
                f"--decision {decision!r}: expected one of {', '.join(DECISIONS)}"
                " (several separated by commas)"
            )
        out.append(lambda r: r.get("decision") in wanted)
    if agent is not None:
        out.append(lambda r: r.get("agent") == agent)
    if tool is not None:
        out.append(lambda r: r.get("tool") == tool)
    if by is not None:
        if ":" in by:
            out.append(lambda r: r.get("by") == by)
        else:
            out.append(lambda r: str(r.get("by", "")).partition(":")[2] == by)
    if since is not None:
        start = since_of(since)
        out.append(lambda r: (w := _when(r)) is not None and w >= start)
    if project is not None:
        path = Path(project).expanduser()
        if not path.is_dir():
            raise ValueError(f"--project {project}: not a directory")
        names = {str(path.absolute()), str(path.resolve())}
        out.append(lambda r: r.get("project") in names)
    return out


def parsed(lines: Iterable[bytes], bad: Counter[str]) -> Iterator[Record]:
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            bad["lines"] += 1
            continue
        if isinstance(record, dict):
            yield record
        else:
            bad["lines"] += 1


def read_all(log: DecisionLog, bad: Counter[str]) -> Iterator[Record]:
    """Every record, oldest first, rotated files included."""
    for path in log.files():
        try:
            yield from parsed(log.lines(path), bad)
        except OSError as exc:
            fail(f"{path}: cannot read: {exc.strerror or exc}")


def shown(record: Record) -> str:
    """Two lines for a person: when, what, who decided and on what; then why."""
    when = str(record.get("time", ""))[:19].replace("T", " ")
    by = f"{record.get('by', '')} ({record.get('source', '')})"
    where = record.get("tool") or record.get("event", "")
    agent = record.get("agent") or "-"
    what = f"{where}: {record.get('input', '')}"
    head = f"{when}  {record.get('decision', ''):<7}  {by}  {agent}  {what}"
    tail = f"    {record.get('reason', '')}"
    ms = record.get("ms")
    if isinstance(ms, int | float):
        tail += f"  [{ms:g} ms, {record.get('project', '')}]"
    return printable(head) + "\n" + printable(tail)


def summary(records: list[Record]) -> dict[str, Any]:
    decisions = Counter(str(r.get("decision", "")) for r in records)
    by: dict[str, Counter[str]] = {}
    for r in records:
        by.setdefault(str(r.get("by", "")), Counter())[str(r.get("decision", ""))] += 1
    ordered = sorted(by.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    return {
        "total": len(records),
        "first": records[0].get("time") if records else None,
        "last": records[-1].get("time") if records else None,
        "decisions": dict(decisions.most_common()),
        "by": {name: dict(counts.most_common()) for name, counts in ordered},
    }


def _print_summary(data: dict[str, Any]) -> None:
    typer.echo(f"{data['total']} decisions ({data['first']} .. {data['last']})")
    typer.echo("by decision:")
    for name, n in data["decisions"].items():
        typer.echo(f"  {name:<8} {n}")
    typer.echo("by rule or hook:")
    width = max((len(k) for k in data["by"]), default=0)
    for name, counts in data["by"].items():
        detail = ", ".join(f"{d} {n}" for d, n in counts.items())
        typer.echo(printable(f"  {name:<{width}}  {sum(counts.values()):>5}  ({detail})"))


def _settings(places: Places) -> AuditSettings:
    try:
        return load_config(places, os.environ).audit
    except ConfigError as exc:
        fail(str(exc), 2)


def audit_state(settings: AuditSettings, global_root: Path) -> dict[str, Any]:
    """The decision log's state, for ``--check`` and the agents' ``status``: where it is,
    whether a record could be written now (``problem``), and where the export goes."""
    from ..audit import AuditWriteError, export_state

    log = DecisionLog(global_root, settings.max_bytes, settings.keep)
    problem, files = None, 0
    if settings.enabled:
        try:
            files = log.check()
        except (AuditWriteError, OSError) as exc:
            problem = str(exc)
    ok, export = export_state(settings, os.environ)
    return {
        "log": str(log.path),
        "enabled": settings.enabled,
        "files": files,
        "problem": problem,
        "export": export,
        "export_problem": None if ok else export,
    }


def audit_lines(data: dict[str, Any]) -> list[str]:
    """What ``status`` says of the log: only what needs fixing."""
    lines = []
    if data["problem"]:
        lines.append(f"audit: DECISIONS NOT LOGGED: {data['problem']}")
    if data["export_problem"]:
        lines.append(f"audit export: {data['export_problem']}")
    return lines


def check(places: Places) -> None:
    """``--check``: whether records can be written, and where the export goes."""
    data = audit_state(_settings(places), places.global_root)
    if not data["enabled"]:
        typer.echo(printable(f"log: off ([audit] enabled = false); {data['log']}"))
    elif data["problem"]:
        typer.echo(printable(f"log: cannot be written: {data['problem']}"))
    else:
        typer.echo(printable(f"log: {data['log']} (writable; {data['files']} file(s))"))
    typer.echo(printable(f"export: {data['export']}"))
    if data["problem"] or data["export_problem"]:
        raise typer.Exit(1)


def audit(
    ctx: typer.Context,
    lines: int = typer.Option(
        20, "-n", "--lines", metavar="N", help="Show the last N records (0: all).", min=0
    ),
    follow: bool = typer.Option(False, "-f", "--follow", help="Keep printing new records."),
    decision: str | None = typer.Option(
        None, "--decision", metavar="D", help="Only deny, ask, rewrite or allow (a,b: either)."
    ),
    agent: str | None = typer.Option(None, "--agent", metavar="NAME", help="Only this agent's."),
    tool: str | None = typer.Option(None, "--tool", metavar="NAME", help="Only this tool's."),
    by: str | None = typer.Option(
        None,
        "--by",
        metavar="NAME",
        help="Only this rule's or hook's (NAME, rule:NAME, hook:NAME).",
    ),
    since: str | None = typer.Option(
        None, "--since", metavar="WHEN", help="Only since WHEN: 15m, 2h, 7d or an ISO time."
    ),
    project: str | None = typer.Option(
        None, "--project", metavar="DIR", help="Only calls in this project."
    ),
    as_summary: bool = typer.Option(
        False, "--summary", help="Counts per decision and per rule or hook."
    ),
    as_json: bool = typer.Option(False, "--json", help="The records as JSON lines."),
    check_only: bool = typer.Option(
        False, "--check", help="Check the log can be written and the export is installed."
    ),
) -> None:
    """Show the decision log: what hooks and rules denied, asked about or rewrote.

    Records are read from <global root>/audit/decisions.jsonl and its rotated files
    (docs/AUDIT.md)."""
    places = Places.resolve(state(ctx).cwd, None, os.environ)
    if check_only:
        check(places)
        return
    try:
        tests = filters(decision, agent, tool, by, since, project)
    except ValueError as exc:
        fail(str(exc), 2)
    log = DecisionLog(places.global_root, 1, 0)  # reading: size and count do not matter

    def wanted(record: Record) -> bool:
        return all(t(record) for t in tests)

    bad: Counter[str] = Counter()
    if not log.files() and not follow:
        if not as_json:
            typer.echo(printable(f"No decisions logged yet ({log.path} does not exist)."))
        return
    matching = [r for r in read_all(log, bad) if wanted(r)]
    if as_summary:
        data = summary(matching)
        if as_json:
            sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        else:
            _print_summary(data)
    else:
        for record in matching[-lines:] if lines else matching:
            _emit(record, as_json)
    if bad["lines"]:
        typer.echo(f"kodelet: warning: {bad['lines']} unreadable line(s) skipped", err=True)
    if follow:
        _follow(log, wanted, as_json)


def _emit(record: Record, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    else:
        typer.echo(shown(record))
    sys.stdout.flush()


def _follow(log: DecisionLog, wanted: Filter, as_json: bool) -> None:
    """Print records appended from now on, across rotations, until interrupted."""
    inode, offset = _position(log.path)
    try:
        while True:
            now_inode, size = _position(log.path)
            if now_inode != inode:  # rotated (or made): the new file from its start
                inode, offset = now_inode, 0
            if size > offset:
                fd = os.open(log.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    chunk = os.pread(fd, size - offset, offset)
                finally:
                    os.close(fd)
                whole = chunk[: chunk.rfind(b"\n") + 1]
                offset += len(whole)
                for record in parsed(whole.splitlines(), Counter()):
                    if wanted(record):
                        _emit(record, as_json)
            time.sleep(FOLLOW_POLL)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _position(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return 0, 0
    return st.st_ino, st.st_size
