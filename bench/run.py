"""kodelet's benchmarks (``nox -s bench``): every figure is a ratio against a baseline
timed in the same run (median of repeated, interleaved runs), written to BENCHMARKS.md.

usage: python bench/run.py [--output BENCHMARKS.md] [--quick] [--only NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pluggy
from harness import (
    KIT_HOOK,
    Pair,
    X,
    compare,
    machine,
    median_time,
    ms,
    per_op,
    us,
    verdict,
    write_hook,
)
from kodelet import BeforeToolCallPayload, Event, Runtime, hookimpl, hookspecs, load_runtime
from kodelet.adapters.cache import DiscoveryCache
from kodelet.adapters.discovery import BATCH_LIMIT, discover
from kodelet.markers import PROJECT
from kodelet.places import Places
from kodelet.testing import executables as runners_of
from kodelet.testing import per_call_runtime
from kodelet.wire import payload_to_wire
from rules_corpus import section as rules_corpus_section
from rules_speed import speed as rules_speed
from stand_down import stand_down
from warm import warm

PY = sys.executable
BASH_HOOK = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call;;
  run) cat > /dev/null;;
esac
"""
PY_HOOK = f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("before_tool_call")
elif sys.argv[1] == "run":
    payload = json.load(sys.stdin)
    if "rm -rf" in payload["tool_input"].get("command", ""):
        print(json.dumps({{"blocked": True, "reason": "no"}}))
"""
PAYLOAD = BeforeToolCallPayload(
    tool_name="bash", tool_input={"command": "ls -la"}, conv_id="c1", cwd="/tmp"
)


class Native:
    """A typical observing hook: looks at the call, takes no action."""

    @hookimpl
    def before_tool_call(self, tool_name: str, tool_input: dict[str, Any]) -> None:
        if tool_name == "rm":
            raise AssertionError("never")


def pluggy_kwargs() -> dict[str, Any]:
    data = {a: getattr(PAYLOAD, a) for a in ("tool_name", "tool_input", "tool_user_id")}
    data.update(
        event=PAYLOAD.EVENT,
        conv_id=PAYLOAD.conv_id,
        cwd=PAYLOAD.cwd,
        invoked_by=PAYLOAD.invoked_by,
        recipe_name=PAYLOAD.recipe_name,
    )
    return data


def with_cpu(fn: Any) -> tuple[float, float, float]:
    """(wall, this process's CPU, children's CPU) seconds for one call of ``fn``."""
    own0, kids0 = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    started = time.perf_counter()
    fn()
    wall = time.perf_counter() - started
    own1, kids1 = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    own = own1.ru_utime + own1.ru_stime - own0.ru_utime - own0.ru_stime
    kids = kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime
    return wall, own, kids


def project(root: Path, name: str) -> Path:
    path = root / name
    (path / ".kodelet" / "hooks").mkdir(parents=True)
    return path


# -- 1. native dispatch ---------------------------------------------------------------


def native(scale: float) -> list[str]:
    kwargs = pluggy_kwargs()
    rows = []
    headline: dict[str, Pair] = {}
    for n in (1, 10, 100, 1000):
        plugins = [Native() for _ in range(n)]
        rt = load_runtime(
            entry_points=False,
            builtins=False,
            executables=False,
            plugins=[(f"p{i}", p) for i, p in enumerate(plugins)],
        )
        pm = pluggy.PluginManager(PROJECT)
        pm.add_hookspecs(hookspecs)
        for i, p in enumerate(plugins):
            pm.register(p, name=f"p{i}")
        ops = max(20, int(20000 * scale / n))
        caller = pm.hook.before_tool_call

        def raw_pluggy(caller: Any = caller) -> Any:
            return caller(**kwargs)

        def dispatch(rt: Runtime = rt) -> Any:
            return rt.dispatch(PAYLOAD)

        def with_trace(rt: Runtime = rt) -> Any:
            return rt.dispatch(PAYLOAD).trace

        pair = compare(dispatch, raw_pluggy, ops=ops, runs=15)
        traced = compare(with_trace, raw_pluggy, ops=ops, runs=7)
        rows.append((n, pair, traced))
        if n == 10:
            headline = {"dispatch": pair, "trace": traced}
        rt.close()
    ten = headline["dispatch"]
    out = [
        "## 1. Native dispatch",
        "",
        "`Runtime.dispatch` of a before_tool_call payload to N native impls (each looks at "
        "`tool_name`, takes no action) vs calling the same impls through raw pluggy, "
        "`pm.hook.before_tool_call(**kwargs)`.",
        "",
        f"**10 impls: {ten.ratio:.2f}{X} raw pluggy** ({us(ten.subject)} vs {us(ten.baseline)}); "
        f"target ≤ 1.25{X}: {verdict(ten.ratio <= 1.25)}. "
        f"Reading the trace as well (building its 10 TraceRecords): "
        f"{headline['trace'].ratio:.2f}{X}.",
        "",
        "| impls | dispatch | raw pluggy | ratio | with trace read | µs per impl (marginal) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    base = rows[0][1].subject
    for n, pair, traced in rows:
        marginal = "" if n == 1 else f"{(pair.subject - base) / (n - 1) * 1e6:.3f}"
        out.append(
            f"| {n} | {us(pair.subject)} | {us(pair.baseline)} | {pair.ratio:.2f}{X} | "
            f"{traced.ratio:.2f}{X} | {marginal} |"
        )
    per_100 = (rows[2][1].subject - base) / 99
    per_1000 = (rows[3][1].subject - base) / 999
    out += [
        "",
        f"Growth is linear: the marginal cost per impl is {per_100 * 1e6:.3f} µs between 1 and "
        f"100 impls and {per_1000 * 1e6:.3f} µs between 1 and 1000 "
        f"({per_1000 / per_100:.2f}{X} of it).",
        "",
    ]
    return out


# -- 2. executable dispatch -----------------------------------------------------------


def executables(root: Path, scale: float) -> list[str]:
    wire = json.dumps(payload_to_wire(PAYLOAD)).encode()
    out = [
        "## 2. Executable dispatch (per call)",
        "",
        "One hook in `.kodelet/hooks`, spawned per call, dispatched through the runtime vs "
        '`subprocess.run([exe, "run"], input=payload)` of the same file.',
        "",
        f"| hook | dispatch | subprocess.run | ratio | target ≤ 1.10{X} |",
        "|---|---:|---:|---:|---|",
    ]
    for label, text in (("bash", BASH_HOOK), ("python", PY_HOOK)):
        proj = project(root, f"exe-{label}")
        path = write_hook(proj / ".kodelet" / "hooks", "hook", text)
        with load_runtime(cwd=proj, entry_points=False, builtins=False) as rt:
            assert len(runners_of(rt)) == 1

            def dispatch(rt: Runtime = rt) -> Any:
                return rt.dispatch(PAYLOAD)

            def baseline(path: Path = path) -> Any:
                return subprocess.run([str(path), "run"], input=wire, capture_output=True)

            pair = compare(dispatch, baseline, ops=max(3, int(10 * scale)), runs=9)
        out.append(
            f"| {label} | {ms(pair.subject)} | {ms(pair.baseline)} | {pair.ratio:.2f}{X} | "
            f"{verdict(pair.ratio <= 1.10)} |"
        )
    out.append("")
    return out


# -- 3. discovery ---------------------------------------------------------------------


def discovery(root: Path, scale: float) -> list[str]:
    proj = project(root, "discovery")
    hooks = [write_hook(proj / ".kodelet" / "hooks", f"h{i:02}", BASH_HOOK) for i in range(50)]
    places = Places.resolve(proj, root / "home-discovery")
    cache_dir = root / "discovery-cache"
    runs = max(5, int(21 * scale))

    def sequential() -> Any:
        return [subprocess.run([str(h), "hook"], capture_output=True).stdout for h in hooks]

    def cold() -> Any:
        cache = DiscoveryCache(root / f"cold-{time.monotonic_ns()}")
        found = discover(places, query=cache)
        cache.save()
        return found

    def warm() -> Any:
        cache = DiscoveryCache(cache_dir)
        found = discover(places, query=cache)
        cache.save()
        assert cache.misses == 0
        return found

    def construct() -> Any:
        load_runtime(cwd=proj, home=root / "home-discovery", entry_points=False).close()

    def construct_ordered() -> Any:
        with load_runtime(cwd=proj, home=root / "home-discovery", entry_points=False) as rt:
            rt.hooks(Event.BEFORE_TOOL_CALL)

    seeded = DiscoveryCache(cache_dir)
    assert all(h.status == "active" for h in discover(places, query=seeded))
    seeded.save()
    construct()  # fills the runtime's own discovery cache under home-discovery
    base: list[tuple[float, float, float]] = []
    cold_t: list[tuple[float, float, float]] = []
    warm_t: list[float] = []
    built_t: list[float] = []
    ordered_t: list[float] = []
    for _ in range(runs):
        base.append(with_cpu(sequential))
        cold_t.append(with_cpu(cold))
        warm_t.append(per_op(warm, 5))
        built_t.append(per_op(construct, 5))
        ordered_t.append(per_op(construct_ordered, 5))
    b, c, w, r, o = (
        statistics.median(x[0] for x in base),
        statistics.median(x[0] for x in cold_t),
        statistics.median(warm_t),
        statistics.median(built_t),
        statistics.median(ordered_t),
    )
    b_own, b_kids = (statistics.median(x[i] for x in base) for i in (1, 2))
    c_own, c_kids = (statistics.median(x[i] for x in cold_t) for i in (1, 2))
    cores = os.cpu_count() or 1
    floor = (c_own + c_kids) / cores
    out = [
        "## 3. Discovery of 50 executable hooks",
        "",
        "50 bash hooks (the cheapest kind to ask, so the hardest case for the ratios). "
        "Baseline: asking `hook` one file after another, as the seeds' Go code does "
        f"({ms(b)}).",
        "",
        "| discovery | time | vs sequential | target |",
        "|---|---:|---:|---|",
        f"| cold (queried all at once, cache written) | {ms(c)} | {c / b:.3f}{X} | "
        f"≤ 0.6{X}: {verdict(c / b <= 0.6)} |",
        f"| warm (discovery cache, nothing spawned) | {ms(w)} | {w / b:.4f}{X} | "
        f"≤ 0.02{X}: {verdict(w / b <= 0.02)} |",
        f"| a whole runtime built (`load_runtime`, warm cache, built-ins included) | {ms(r)} | "
        f"{r / b:.4f}{X} | ≤ 0.05{X}: {verdict(r / b <= 0.05)} |",
        f"| the same, and the 50 hooks' before_tool_call call order made (what a first "
        f"dispatch adds before it calls a hook) | {ms(o)} | {o / b:.4f}{X} |  |",
        "",
        "The executables reach the runtime as one adapter plugin, so 50 hooks cost one "
        "pluggy registration, not 50 attribute scans. An event's entries are made when "
        "the event is first asked for, so a start pays only for the events it dispatches; "
        "the last row shows that cost for all 50.",
        "",
        f"CPU spent by a cold discovery: {ms(c_kids)} in the 50 hooks themselves (bash "
        f"start-up; {ms(b_kids)} in the sequential baseline) and {ms(c_own)} in kodelet "
        f"(every query spawned from one thread and read in one selector loop, trust checks, "
        f"the cache; the sequential baseline's own share is {ms(b_own)}). On {cores} cores "
        f"that is a floor of {ms(floor)}, {floor / b:.2f}{X} of the baseline, whatever the "
        "parallelism.",
        "",
    ]
    if c / b > 0.6:
        out += [
            "**Cold discovery misses its target** on this machine. Spawning every query from "
            "one thread and reading them in one selector loop keeps kodelet's own CPU close "
            "to the sequential baseline's (figures above), but with "
            f"{cores} cores and hooks this cheap the hooks' own start-up CPU alone is "
            f"{b_kids / cores / b:.2f}{X} of the sequential time, and starting processes does "
            "not parallelise: each spawn blocks the spawning thread until the new child has "
            "been scheduled and has exec'd, and while both cores are busy with hooks that "
            "wait is several times longer than on an idle machine, so the spawns form a "
            "serial chain that sets the pace. Other load on the machine hurts the parallel "
            "side more than the sequential one. With slower hooks (any interpreter) the ratio "
            "approaches 1/cores. The warm start, which is what every start after the first "
            "pays, spawns nothing.",
            "",
        ]
    else:
        out += [
            "All queries are spawned from one thread and their answers collected in one "
            f"selector loop (at most {BATCH_LIMIT} in flight), so kodelet's own CPU stays "
            "close to the sequential baseline's; what is left is the hooks' own start-up CPU "
            f"spread over the {cores} cores, and the spawns themselves, which do not "
            "parallelise (each blocks the spawning thread until the child has exec'd). The "
            "margin is thin on 2 cores and other load on the machine eats it first; with "
            "slower hooks (any interpreter) the ratio approaches 1/cores.",
            "",
        ]
    return out


# -- 4. persistent hooks --------------------------------------------------------------


def persistent(root: Path, scale: float) -> list[str]:
    proj = project(root, "persistent")
    write_hook(proj / ".kodelet" / "hooks", "kit", KIT_HOOK)
    kept = load_runtime(cwd=proj, entry_points=False, builtins=False)
    spawned = per_call_runtime(cwd=proj, entry_points=False, builtins=False)
    with kept, spawned:
        kept.dispatch(PAYLOAD)

        def fast(rt: Runtime = kept) -> Any:
            return rt.dispatch(PAYLOAD)

        def slow(rt: Runtime = spawned) -> Any:
            return rt.dispatch(PAYLOAD)

        pair = compare(
            fast, slow, ops=max(50, int(500 * scale)), runs=7, baseline_ops=max(3, int(10 * scale))
        )

        async def many(n: int) -> None:
            for _ in range(n):
                await kept.adispatch(PAYLOAD)

        n_async = max(50, int(300 * scale))
        async_t = median_time(lambda: asyncio.run(many(n_async)), 5) / n_async
    speedup = 1 / pair.ratio
    return [
        "## 4. Persistent executable hooks",
        "",
        "One Python hook written with `kodelet.hookkit`, so the same file speaks both "
        "protocols: kept running (`serve`, one JSON line per event) vs spawned per call "
        "(`run`).",
        "",
        "| mode | per event | vs per call |",
        "|---|---:|---:|",
        f"| per call (`run`) | {ms(pair.baseline)} | 1{X} |",
        f"| persistent, `dispatch` | {us(pair.subject)} | {speedup:,.0f}{X} faster |",
        f"| persistent, `adispatch` | {us(async_t)} | {pair.baseline / async_t:,.0f}{X} faster |",
        "",
        f"Target ≥ 50{X} faster per event: {verdict(speedup >= 50)}.",
        "",
    ]


# -- 5. start-up ----------------------------------------------------------------------


def startup(root: Path, scale: float) -> list[str]:
    runs = max(3, int(9 * scale))
    empty = project(root, "cli")
    env = {**os.environ}
    argv = [
        PY,
        "-m",
        "kodelet",
        "--cwd",
        str(empty),
        "hooks",
        "run",
        "before_tool_call",
        "--payload",
        "-",
    ]
    data = json.dumps({"tool_name": "bash", "tool_input": {"command": "ls"}}).encode()
    hooked = project(root, "cli-hooked")
    for i in range(20):
        write_hook(hooked / ".kodelet" / "hooks", f"h{i:02}", BASH_HOOK)

    def claude_argv(cwd: Path) -> tuple[list[str], bytes]:
        given = {
            "session_id": "bench",
            "transcript_path": "",
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
        }
        return [PY, "-m", "kodelet", "claude", "hook"], json.dumps(given).encode()

    cases = [
        ("`kodelet claude hook` (PreToolUse), no hooks", *claude_argv(empty), 3.0),
        ("`kodelet claude hook` (PreToolUse), 20 executables, warm cache",
         *claude_argv(hooked), 4.0),
        ("`kodelet hooks run before_tool_call`, no hooks", argv, data, None),
        ("`kodelet hooks run before_tool_call`, 20 executables, warm cache",
         [*argv[:4], str(hooked), *argv[5:]], data, None),
    ]  # fmt: skip
    out = [
        "## 5. Start-up",
        "",
        "What a user pays per call when an agent spawns kodelet for every tool call: the "
        "whole process, end to end, vs `python -c pass` timed in the same run.",
        "",
        "| command | time | `python -c pass` | ratio | target |",
        "|---|---:|---:|---:|---|",
    ]
    for label, cmd, stdin, target in cases:
        probe = subprocess.run(cmd, input=stdin, capture_output=True, env=env)
        if probe.returncode != 0:
            why = probe.stderr.decode(errors="replace").strip().splitlines()[-1:]
            out.append(f"| {label} | failed: {why} | | | |")
            continue
        pair = compare(
            lambda cmd=cmd, stdin=stdin: subprocess.run(
                cmd, input=stdin, capture_output=True, env=env
            ),
            lambda: subprocess.run([PY, "-c", "pass"], capture_output=True, env=env),
            ops=1,
            runs=runs,
        )
        goal = "" if target is None else f"≤ {target:g}{X}: {verdict(pair.ratio <= target)}"
        out.append(
            f"| {label} | {ms(pair.subject)} | {ms(pair.baseline)} | {pair.ratio:.1f}{X} | {goal} |"
        )
    profile = subprocess.run(
        [PY, "-X", "importtime", *claude_argv(empty)[0][1:]],
        input=claude_argv(empty)[1], capture_output=True, env=env,
    )  # fmt: skip
    top = sorted(
        (line.split("|") for line in profile.stderr.decode().splitlines() if "|" in line),
        key=lambda f: -int(f[1]) if f[1].strip().isdigit() else 0,
    )[:8]
    out += [
        "",
        "Where `kodelet claude hook` spends its start-up (`python -X importtime`, cumulative "
        "microseconds of the heaviest imports):",
        "",
        "```",
        *(f"{f[1].strip():>8}  {f[2].rstrip()}" for f in top),
        "```",
        "",
    ]
    proj = project(root, "construct")
    for i in range(20):
        write_hook(proj / ".kodelet" / "hooks", f"h{i:02}", BASH_HOOK)
    natives = [(f"native{i}", Native()) for i in range(20)]
    hooks = sorted((proj / ".kodelet" / "hooks").iterdir())

    def construct() -> Any:
        load_runtime(cwd=proj, entry_points=False, plugins=natives).close()

    def construct_cold() -> Any:
        env = {**os.environ, "KODELET_NO_CACHE": "1"}
        load_runtime(cwd=proj, entry_points=False, plugins=natives, env=env).close()

    def seeds_startup() -> Any:
        pm = pluggy.PluginManager(PROJECT)
        pm.add_hookspecs(hookspecs)
        for name, plugin in natives:
            pm.register(plugin, name=name)
        return [subprocess.run([str(h), "hook"], capture_output=True).stdout for h in hooks]

    construct()  # fills the discovery cache
    base = median_time(seeds_startup, runs)
    warm = median_time(construct, runs, ops=3)
    cold = median_time(construct_cold, runs)
    out += [
        "Runtime construction with 20 native plugins and 20 executable hooks, vs the "
        "seeds' start-up (registering the 20 natives with a bare pluggy manager and asking "
        f"the 20 executables `hook` one after another: {ms(base)}):",
        "",
        "| construction | time | vs seeds' start-up |",
        "|---|---:|---:|",
        f"| warm discovery cache | {ms(warm)} | {warm / base:.3f}{X} |",
        f"| no cache (`KODELET_NO_CACHE=1`) | {ms(cold)} | {cold / base:.3f}{X} |",
        "",
    ]
    return out


# -- 6. corpus replay -------------------------------------------------------------------

CORPUS_SESSIONS = 200
CORPUS_HOOKS = {
    "user_message_send": "secrets",
    "before_tool_call": "guard",
    "after_tool_call": "audit",
}
SH_HOOK = """#!/bin/sh
case "$1" in
  hook) echo {event};;
  run) input=$(cat)
       case "$input" in *'rm -rf'*) echo '{{"blocked": true, "reason": "no"}}';; esac;;
esac
"""
KIT_CORPUS_HOOK = f"""#!{PY}
from kodelet import hookkit


def check(payload):
    if "rm -rf" in str(payload.get("tool_input", "")):
        return {{"blocked": True, "reason": "no"}}
    return None


hookkit.main("{{event}}", check)
"""


def synthetic_session(n: int) -> dict[str, Any]:
    """50 events: a prompt, 16 turns of one tool call each (3 events a turn), a prompt."""
    items: list[dict[str, Any]] = [{"type": "user", "content": f"task {n}"}]
    for i in range(16):
        command = "rm -rf build" if (n + i) % 37 == 0 else f"pytest -q tests/test_{i}.py"
        items.append(
            {
                "type": "assistant",
                "content": f"step {i}",
                "usage": {"input_tokens": 2000 + 500 * i, "output_tokens": 50},
                "tool_calls": [
                    {
                        "id": f"t{n}-{i}",
                        "name": "bash",
                        "input": {"command": command},
                        "output": {"toolName": "bash", "success": True, "timestamp": "T"},
                    }
                ],
            }
        )
    items.append({"type": "user", "content": "thanks"})
    return {"version": 1, "conv_id": f"s{n}", "max_context_window": 200000, "items": items}


def corpus(root: Path, scale: float) -> list[str]:
    sessions = root / "corpus-sessions"
    sessions.mkdir()
    for n in range(CORPUS_SESSIONS):
        (sessions / f"s{n:03}.json").write_text(json.dumps(synthetic_session(n)))
    spawned = project(root, "corpus-spawned")
    kept = project(root, "corpus-kept")
    for event, name in CORPUS_HOOKS.items():
        write_hook(spawned / ".kodelet" / "hooks", name, SH_HOOK.format(event=event))
        write_hook(kept / ".kodelet" / "hooks", name, KIT_CORPUS_HOOK.replace("{event}", event))

    def replay(proj: Path, jobs: int) -> dict[str, Any]:
        argv = [PY, "-m", "kodelet", "--cwd", str(proj), "replay", str(sessions)]
        proc = subprocess.run([*argv, "--jobs", str(jobs), "--json"], capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.decode(errors="replace")[-500:])
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    events = replay(spawned, 2)["totals"]["events"]
    runs = max(1, int(3 * scale))
    pair = compare(lambda: replay(spawned, 1), lambda: replay(spawned, 2), ops=1, runs=runs)
    speedup = pair.subject / pair.baseline
    kept_1 = median_time(lambda: replay(kept, 1), runs)
    kept_2 = median_time(lambda: replay(kept, 2), runs)
    cores = os.cpu_count() or 1
    return [
        "## 6. Corpus replay",
        "",
        f"`kodelet replay DIR` over {CORPUS_SESSIONS} synthetic sessions of 50 events each "
        f"({events} events in all) with 3 executable hooks (`user_message_send`, "
        "`before_tool_call`, `after_tool_call`), end to end (start-up, discovery, report) "
        f"on {cores} cores.",
        "",
        "| hooks | `--jobs 1` | `--jobs 2` | speed-up | events/s (`--jobs 2`) |",
        "|---|---:|---:|---:|---:|",
        f"| spawned per call (sh) | {pair.subject:.2f} s | {pair.baseline:.2f} s | "
        f"{speedup:.2f}{X} | {events / pair.baseline:,.0f} |",
        f"| persistent (`hookkit`) | {kept_1:.2f} s | {kept_2:.2f} s | "
        f"{kept_1 / kept_2:.2f}{X} | {events / kept_2:,.0f} |",
        "",
        f"Target `--jobs 2` ≥ 1.7{X} faster than `--jobs 1` with spawned hooks: "
        f"{verdict(speedup >= 1.7)}. Persistent hooks: {events / kept_1:,.0f} events/s in one "
        "process.",
        "",
    ]


CLAUDE_HEADING = "## 8. Inside the real Claude Code"
CARRIED_WARM = ("## 7c.",)
"""Measured by bench/warm_memory.py alone (it starts 20 warm kodelets): kept as it was,
after section 7b."""
CARRIED = ("## 8b.", "## 8c.")
"""Sections measured by their own scripts (bench/hook_client.py, bench/agents.py), never
by this one: kept from the output file as they were."""


def sections_of(text: str, prefixes: tuple[str, ...]) -> list[str]:
    """The ``## `` sections of ``text`` whose headings start with one of ``prefixes``,
    each up to the next ``## `` heading."""
    found: list[str] = []
    for part in ("\n" + text).split("\n## ")[1:]:
        section = "## " + part
        if section.startswith(prefixes):
            found += [section.strip(), ""]
    return found


def previous(output: Path) -> str:
    """The output file as the last run (or a hand-run script) left it; "" if none."""
    try:
        return output.read_text()
    except OSError:
        return ""


def claude_section(output: Path, run: bool) -> list[str]:
    """Section 8: timed now with ``--claude``, else carried over from ``output``; and
    the sections of :data:`CARRIED` carried over."""
    old = previous(output)
    if run:
        done = subprocess.run(
            [PY, str(Path(__file__).parent / "claude_code.py")],
            capture_output=True,
            text=True,
            check=True,
        )
        eight = [CLAUDE_HEADING, "", done.stdout.strip(), ""]
    else:
        eight = sections_of(old, (CLAUDE_HEADING,))
    return [*eight, *sections_of(old, CARRIED)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", default="BENCHMARKS.md")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--only", metavar="NAME", help="run one benchmark (e.g. 'corpus replay')")
    parser.add_argument(
        "--claude",
        action="store_true",
        help="also time the real Claude Code (bench/claude_code.py; needs the npm registry); "
        "without it, section 8 of the output file is kept as it was",
    )
    args = parser.parse_args()
    scale = 0.2 if args.quick else 1.0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kodelet-bench-") as tmp:
        root = Path(tmp).resolve()
        os.environ["HOME"] = str(root / "home")
        os.environ["KODELET_HOME"] = str(root / "home" / ".kodelet")
        for var in ("KODELET_NO_HOOKS", "KODELET_NO_CACHE", "KODELET_HOOK_TIMEOUT"):
            os.environ.pop(var, None)
        sections: list[str] = []
        for name, bench in (
            ("native dispatch", lambda: native(scale)),
            ("executable dispatch", lambda: executables(root, scale)),
            ("discovery", lambda: discovery(root, scale)),
            ("persistent hooks", lambda: persistent(root, scale)),
            ("start-up", lambda: startup(root, scale)),
            ("corpus replay", lambda: corpus(root, scale)),
            ("warm kodelet", lambda: warm(root, scale)),
            ("stand-down", lambda: stand_down(root, scale)),
        ):
            if args.only and name != args.only:
                continue
            t = time.monotonic()
            sections += bench()
            print(f"bench: {name}: {time.monotonic() - t:.1f}s", file=sys.stderr)
    sections += sections_of(previous(Path(args.output)), CARRIED_WARM)
    sections += claude_section(Path(args.output), args.claude)
    with tempfile.TemporaryDirectory(prefix="kodelet-bench-") as tmp:
        root = Path(tmp).resolve()
        for name, bench in (
            ("rules corpus", lambda: rules_corpus_section(cc_safety_net=True)),
            ("rules speed", lambda: rules_speed(root, scale)),
        ):
            if args.only and name != args.only:
                continue
            t = time.monotonic()
            sections += bench()
            print(f"bench: {name}: {time.monotonic() - t:.1f}s", file=sys.stderr)
    text = "\n".join(
        [
            "# Benchmarks",
            "",
            "Written by `nox -s bench` (bench/run.py). Every figure is compared with a "
            "baseline timed in the same run on the same machine; times are medians of "
            "repeated runs, subject and baseline interleaved.",
            "",
            *machine(),
            f"- total bench time: {time.monotonic() - started:.0f}s",
            "",
            *sections,
        ]
    )
    Path(args.output).write_text(text.rstrip() + "\n")
    print(text)


if __name__ == "__main__":
    main()
