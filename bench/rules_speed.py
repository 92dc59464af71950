"""What the recommended rule set adds to a tool call inside the warm kodelet.

usage: python bench/rules_speed.py [--quick]

Two projects in one home, each with its warm kodelet answering Claude Code's
``PreToolUse`` over loopback HTTP (a new connection per call, as Claude Code makes):
one with ``use = ["recommended"]`` in ``.kodelet/rules.toml``, one without rules. The
workload is 1,000 different calls made from the rules corpus (every call of it, then
variants with a different command text or path, so no parse is answered from the
cache by a repeat); each call goes to both projects back to back, the order
alternating, and the added cost is the paired difference. The engine's own time per
call (``Engine.decide`` in this process, a fresh engine) is reported beside it.

Part of ``nox -s bench`` (BENCHMARKS.md, "Rules: per-call cost").
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import rules_corpus
from harness import verdict
from kodelet.claude.mapping import to_claude_tool
from kodelet.places import Places
from kodelet.warm import control
from kodelet.warm import http as warm_http

CALLS = 1000
WARMUP = 50
TARGET_MS = 1.0


def workload(cases: list[rules_corpus.Case], n: int, tag: str) -> list[rules_corpus.Case]:
    """``n`` different calls: the corpus, then its calls again with a new text each."""
    out = []
    for i in range(n):
        case = cases[i % len(cases)]
        if i >= len(cases) or tag:
            inp = dict(case.input)
            if case.tool == "bash":
                inp["command"] = f"{inp['command']} && echo {tag}{i}"
            elif "file_path" in inp:
                inp["file_path"] = f"{inp['file_path']}.{tag}{i}"
            else:
                inp["pattern"] = f"{inp.get('pattern', '')}{tag}{i}"
            case = rules_corpus.Case(
                id=f"{case.id}-{tag}{i}",
                cls=case.cls,
                label=case.label,
                tool=case.tool,
                input=inp,
                cwd=case.cwd,
            )
        out.append(case)
    return out


def claude_input(layout: rules_corpus.Layout, case: rules_corpus.Case) -> bytes:
    name, tool_input = to_claude_tool(case.tool, layout.input(case))
    return json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": "bench-rules",
            "transcript_path": "",
            "cwd": str(layout.cwd(case)),
            "permission_mode": "default",
            "tool_name": name,
            "tool_input": tool_input,
            "tool_use_id": "toolu_bench",
        }
    ).encode()


def poster(record: warm_http.Record) -> Callable[[bytes], bytes]:
    def post(body: bytes) -> bytes:
        conn = http.client.HTTPConnection(warm_http.HOST, record.port, timeout=30)
        conn.request(
            "POST",
            warm_http.PATH,
            body=body,
            headers={"Authorization": record.header(), "Content-Type": "application/json"},
        )
        answer = conn.getresponse().read()
        conn.close()
        return answer

    return post


def blocked(answer: bytes) -> bool:
    try:
        out = json.loads(answer or b"{}").get("hookSpecificOutput", {})
    except (ValueError, AttributeError):
        return False
    return out.get("permissionDecision") in ("deny", "ask")


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min) on {os.cpu_count()} cores"


def engine_times(layout: rules_corpus.Layout, calls: list[rules_corpus.Case]) -> list[float]:
    """Seconds ``Engine.decide`` took per call, a fresh engine (no parse cached)."""
    from kodelet.rules.engine import Engine
    from kodelet.rules.ruleset import parse

    engine = Engine([parse('use = ["recommended"]\n', tier="project", origin="rules.toml")])
    times = []
    for case in calls:
        inp = layout.input(case)
        t = time.perf_counter()
        engine.decide(
            case.tool,
            inp,
            cwd=str(layout.cwd(case)),
            project=str(layout.project),
            home=str(layout.home),
            kodelet_home=str(layout.kodelet_home),
        )
        times.append(time.perf_counter() - t)
    return times


def speed(root: Path, scale: float) -> list[str]:
    n = max(100, int(CALLS * scale))
    cases = rules_corpus.load()
    on = rules_corpus.make_layout(root / "speed")
    off_project = on.project.parent / "app-without-rules"
    shutil.copytree(on.project, off_project, symlinks=True)
    (off_project / ".kodelet" / "rules.toml").unlink()
    off = rules_corpus.Layout(home=on.home, project=off_project)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KODELET_DAEMON")}
    env.update(HOME=str(on.home), KODELET_HOME=str(on.kodelet_home))
    env["KODELET_DAEMON_DIR"] = str(Path(tempfile.mkdtemp(prefix="kwr", dir="/tmp")) / "run")
    calls = workload(cases, n, "")
    warmup = workload(cases, WARMUP, "w")
    load_before = load()
    try:
        posts = {}
        for layout in (on, off):
            places = Places.resolve(layout.project, None, env)
            record = warm_http.ensure_record(places)
            control.start(layout.project, {**env, "CLAUDE_PROJECT_DIR": str(layout.project)})
            posts[layout.project] = poster(record)
        for case in warmup:
            for layout in (on, off):
                posts[layout.project](claude_input(layout, case))
        with_rules, without, added = [], [], []
        caught = {on.project: 0, off.project: 0}
        for i, case in enumerate(calls):
            pair = (on, off) if i % 2 == 0 else (off, on)
            took = {}
            for layout in pair:
                body = claude_input(layout, case)
                t = time.perf_counter()
                answer = posts[layout.project](body)
                took[layout.project] = time.perf_counter() - t
                caught[layout.project] += blocked(answer)
            with_rules.append(took[on.project])
            without.append(took[off.project])
            added.append(took[on.project] - took[off.project])
    finally:
        control.stop_all(env)
    load_after = load()
    if caught[on.project] == 0 or caught[off.project] != 0:
        raise RuntimeError(
            f"the rules did not run as set up: {caught[on.project]} calls stopped with them, "
            f"{caught[off.project]} without"
        )
    own = engine_times(on, calls)

    def ms(values: list[float], q: float) -> str:
        v = statistics.median(values) if q == 0.5 else quantile(values, q)
        return f"{v * 1e3:.3f} ms"

    median_added = statistics.median(added) * 1e3
    return [
        "## 10. Rules: per-call cost",
        "",
        f"{n:,} different tool calls made from the rules corpus (its {len(cases)} calls, then "
        "variants with a new command text or path, so no parse is a cache hit), each "
        "answered as Claude Code's `PreToolUse` over loopback HTTP by the warm kodelet of a "
        'project with `use = ["recommended"]` and of one without rules, back to back, the '
        f"order alternating. {caught[on.project]} of them were denied or asked with the "
        "rules, none without.",
        "",
        "| | median | p90 |",
        "|---|---:|---:|",
        f"| answer, recommended rules | {ms(with_rules, 0.5)} | {ms(with_rules, 0.9)} |",
        f"| answer, no rules | {ms(without, 0.5)} | {ms(without, 0.9)} |",
        f"| **added per call (paired difference)** | **{ms(added, 0.5)}** | {ms(added, 0.9)} |",
        f"| `Engine.decide` alone (in process, fresh engine) | {ms(own, 0.5)} | {ms(own, 0.9)} |",
        "",
        f"Target ≤ {TARGET_MS:g} ms added at the median: "
        f"{verdict(median_added <= TARGET_MS)} ({median_added:.3f} ms). Machine load "
        f"before: {load_before}; after: {load_after}.",
        "",
    ]


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="kodelet-bench-")).resolve()
    os.environ["HOME"] = str(tmp / "home")
    os.environ["KODELET_HOME"] = str(tmp / "home" / ".kodelet")
    try:
        print("\n".join(speed(tmp, 0.3 if "--quick" in sys.argv else 1.0)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
