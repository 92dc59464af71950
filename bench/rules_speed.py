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

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import rules_corpus
from harness import verdict
from kodelet.claude.mapping import to_claude_tool
from kodelet.places import Places
from kodelet.warm import control
from kodelet.warm import http as warm_http
from warm import http_answer

CALLS = 1000
WARMUP = 50
DANGEROUS_EVERY = 20
TARGET_MS = 1.0


def variant(case: rules_corpus.Case, tag: str) -> rules_corpus.Case:
    """The same call with a new text (a command that also echoes ``tag``, or a path
    ending in it), so its parse cannot come from the cache."""
    inp = dict(case.input)
    if case.tool == "bash":
        inp["command"] = f"{inp['command']} && echo {tag}"
    elif "file_path" in inp:
        inp["file_path"] = f"{inp['file_path']}.{tag}"
    else:
        inp["pattern"] = f"{inp.get('pattern', '')}{tag}"
    return attrs.evolve(case, id=f"{case.id}-{tag}", input=inp)


def session(cases: list[rules_corpus.Case], n: int, rng: random.Random) -> list[rules_corpus.Case]:
    """``n`` calls drawn from the corpus as a session makes them: everyday calls, one in
    twenty dangerous; some repeat, as ``git status`` or ``pytest`` do."""
    dangerous = [c for c in cases if c.dangerous]
    everyday = [c for c in cases if not c.dangerous]
    k = max(1, n // DANGEROUS_EVERY)
    calls = rng.choices(everyday, k=n - k) + rng.choices(dangerous, k=k)
    rng.shuffle(calls)
    return calls


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
    """One Claude Code ``PreToolUse`` POST per call, a new connection each (section 7's)."""

    def post(body: bytes) -> bytes:
        answer = http_answer(record, body)()
        assert isinstance(answer, bytes)
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


@attrs.frozen
class Run:
    """Seconds per answer with and without the rules, paired call by call."""

    with_rules: list[float]
    without: list[float]
    added: list[float]
    stopped: tuple[int, int]
    by_rules: list[bool]
    """Per call: stopped with the rules and not without them."""


def measure(
    posts: dict[Path, Callable[[bytes], bytes]],
    on: rules_corpus.Layout,
    off: rules_corpus.Layout,
    calls: list[rules_corpus.Case],
) -> Run:
    with_rules, without, added, by_rules = [], [], [], []
    stopped = {on.project: 0, off.project: 0}
    for i, case in enumerate(calls):
        pair = (on, off) if i % 2 == 0 else (off, on)
        took, said = {}, {}
        for layout in pair:
            body = claude_input(layout, case)
            t = time.perf_counter()
            answer = posts[layout.project](body)
            took[layout.project] = time.perf_counter() - t
            said[layout.project] = blocked(answer)
            stopped[layout.project] += said[layout.project]
        by_rules.append(said[on.project] and not said[off.project])
        with_rules.append(took[on.project])
        without.append(took[off.project])
        added.append(took[on.project] - took[off.project])
    if stopped[on.project] <= stopped[off.project]:
        raise RuntimeError(
            f"the rules did not run as set up: {stopped[on.project]} calls stopped with them, "
            f"{stopped[off.project]} without"
        )
    return Run(with_rules, without, added, (stopped[on.project], stopped[off.project]), by_rules)


def ms(values: list[float], q: float) -> str:
    v = statistics.median(values) if q == 0.5 else quantile(values, q)
    return f"{v * 1e3:.3f} ms"


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
    rng = random.Random(33)
    drawn = session(cases, n, rng)
    # The worst case: every call a new text, so no parse comes from the cache.
    distinct = [variant(c, f"d{i}") for i, c in enumerate(drawn)]
    warmup = [variant(c, f"w{i}") for i, c in enumerate(session(cases, WARMUP, rng))]
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
        mixed = measure(posts, on, off, drawn)
        fresh = measure(posts, on, off, distinct)
    finally:
        control.stop_all(env)
    load_after = load()
    own = engine_times(on, distinct)
    median_added = statistics.median(mixed.added) * 1e3
    let_be = [a for a, b in zip(mixed.added, mixed.by_rules, strict=True) if not b]
    stopped_added = [a for a, b in zip(mixed.added, mixed.by_rules, strict=True) if b]
    return [
        "## 10. Rules: per-call cost",
        "",
        "Tool calls from the rules corpus, each answered as Claude Code's `PreToolUse` over "
        'loopback HTTP by the warm kodelet of a project with `use = ["recommended"]` and '
        "by that of one without rules, back to back, the order alternating; the added cost "
        f"is the paired difference. The mix: {n:,} calls drawn at random from the corpus as "
        f"a session makes them (everyday calls, one in {DANGEROUS_EVERY} dangerous; a call "
        "that repeats is judged from the parse cache, as in a session); then the same "
        "calls each made new (a command that also echoes a number, a path with a suffix), "
        f"so no parse comes from the cache. In the mix {mixed.stopped[0]} calls were "
        f"denied or asked with the rules and {mixed.stopped[1]} without (kodelet's own "
        "files, which `builtin:protect-kodelet` guards in every project). "
        "`python bench/rules_speed.py` prints this section alone.",
        "",
        "| workload | answer with the recommended rules | answer without rules | "
        "**added per call** | added, p90 |",
        "|---|---:|---:|---:|---:|",
        f"| the mix (median) | {ms(mixed.with_rules, 0.5)} | {ms(mixed.without, 0.5)} | "
        f"**{ms(mixed.added, 0.5)}** | {ms(mixed.added, 0.9)} |",
        f"| every call new (median) | {ms(fresh.with_rules, 0.5)} | {ms(fresh.without, 0.5)} "
        f"| **{ms(fresh.added, 0.5)}** | {ms(fresh.added, 0.9)} |",
        "",
        f"In the mix, the calls no rule stopped: {ms(let_be, 0.5)} added at the median, "
        f"{ms(let_be, 0.9)} at p90; the {len(stopped_added)} the rules stopped: "
        + (f"{ms(stopped_added, 0.5)} added at the median " if stopped_added else "none ")
        + "(their answers differ: a block with the rules, nothing without). "
        f"`Engine.decide` alone, in process, on the every-call-new calls (a fresh engine): "
        f"median {ms(own, 0.5)}, p90 {ms(own, 0.9)}.",
        "",
        f"Target ≤ {TARGET_MS:g} ms added at the median over the mix: "
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
