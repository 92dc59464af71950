"""What N projects' warm kodelets hold in memory, and what the first calls after a warm
kodelet starts cost against an in-process call.

    python bench/warm_memory.py [--projects 20] [--hooks 3] [--rounds 10]
                                [--no-memory] [--no-calls]

Every project is a git repository with a realistic set of hooks: ``--hooks`` persistent
executables written with ``kodelet.hookkit`` (each a Python ``serve`` process), the
native plugins of section 7 (installed into this interpreter for the run, removed after)
and the recommended rules (``kodelet rules enable recommended``).

Memory: the warm kodelet of each project is started and answers one Claude Code
``PreToolUse`` call, so its runtime, rules engine and hook servers are up; then RSS and
PSS (``/proc/PID/smaps_rollup``; PSS splits each shared page among the processes that
map it, so PSS sums to what the processes cost the machine together) of every warm
kodelet and of its descendants (the hook servers), per project and in total; and, for
scale, the PSS of a warm kodelet with no executables and no rules and of a Python process
that imports nothing.

Calls (``--rounds``, interleaved): a round stops every warm kodelet, then makes the
first call (no warm kodelet: answered in-process, and one started), waits until the
warm kodelet says its start's warm-up is over, makes the second and third calls
through it; and, in the same round, alternately before or after, one in-process call
(``KODELET_DAEMON=0``). Each call is a whole lean client process
(``python -I -S .../kodelet/warm/hook.py claude hook``), as Claude Code runs it. The
machine's load average is printed before and after. Every warm kodelet and hook server
is stopped at the end, and the run fails if one is left.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness import KIT_HOOK, load_average, write_hook
from kodelet.warm import control
from warm import CLIENT, NATIVES, install_natives, pre_tool, run, uninstall_natives

PY = sys.executable
KODELET = str(Path(PY).parent / "kodelet")
MIB = 1024 * 1024
FIELDS = ("Rss", "Pss", "Private_Clean", "Private_Dirty")


def rollup(pid: int) -> dict[str, int] | None:
    """Bytes of ``FIELDS`` for ``pid`` (smaps_rollup), or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in FIELDS:
            out[name] = int(rest.split()[0]) * 1024
    return out


def children() -> dict[int, list[int]]:
    """Every process's children, from ``/proc/*/stat``."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(pid: int, kids: Mapping[int, list[int]]) -> list[int]:
    out, todo = [], list(kids.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def total(pids: Iterable[int]) -> dict[str, int]:
    out = dict.fromkeys(FIELDS, 0)
    for pid in pids:
        for k, v in (rollup(pid) or {}).items():
            out[k] += v
    return out


def mib(n: float) -> str:
    return f"{n / MIB:,.1f}"


def make_project(root: Path, name: str, hooks: int, env: Mapping[str, str]) -> Path:
    project = root / name
    (project / ".git").mkdir(parents=True)
    for i in range(hooks):
        write_hook(project / ".kodelet" / "hooks", f"guard{i}", KIT_HOOK)
    subprocess.run(
        [KODELET, "rules", "enable", "recommended"],
        cwd=project,
        env=dict(env),
        check=True,
        capture_output=True,
    )
    return project


def call(project: Path, env: Mapping[str, str]) -> float:
    e = {**env, "CLAUDE_PROJECT_DIR": str(project)}
    argv = [PY, "-I", "-S", CLIENT, "claude", "hook"]
    start = time.perf_counter()
    run(argv, pre_tool(project), e, project)
    return time.perf_counter() - start


def warmed(project: Path, env: Mapping[str, str], wait: float = 120.0) -> dict[str, object]:
    """The status of ``project``'s warm kodelet once its start's warm-up is over."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for info in control.running(env):
            if info.get("project") == str(project) and info.get("warmed"):
                return info
        time.sleep(0.05)
    raise SystemExit(f"the warm kodelet of {project} did not warm up in {wait:g} s")


def memory(root: Path, env: Mapping[str, str], projects: int, hooks: int) -> set[int]:
    """Start ``projects`` warm kodelets, one call each, and print what they hold; the
    pids seen (warm kodelets and hook servers) for the final check."""
    made = [make_project(root, f"p{i:02}", hooks, env) for i in range(projects)]
    for project in made:
        call(project, env)  # in-process, and it starts the project's warm kodelet
    for project in made:
        warmed(project, env)
        call(project, env)  # answered by the warm kodelet: its hook servers are up
    infos = {i["project"]: int(i["pid"]) for i in control.running(env) if "pid" in i}
    kids = children()
    print(f"\nmemory of {projects} warm kodelets, after one call each (MiB)")
    print(f"load average: {load_average()}")
    print(
        f"{'project':<8} {'kodelet RSS':>12} {'PSS':>8} {'servers':>8} "
        f"{'servers RSS':>12} {'PSS':>8} {'total PSS':>10}"
    )
    seen: set[int] = set()
    sums = {"kodelet": dict.fromkeys(FIELDS, 0), "servers": dict.fromkeys(FIELDS, 0)}
    counts = []
    for project in made:
        pid = infos[str(project)]
        servers = descendants(pid, kids)
        seen |= {pid, *servers}
        own, theirs = total([pid]), total(servers)
        counts.append(len(servers))
        for k in FIELDS:
            sums["kodelet"][k] += own[k]
            sums["servers"][k] += theirs[k]
        print(
            f"{project.name:<8} {mib(own['Rss']):>12} {mib(own['Pss']):>8} {len(servers):>8} "
            f"{mib(theirs['Rss']):>12} {mib(theirs['Pss']):>8} "
            f"{mib(own['Pss'] + theirs['Pss']):>10}"
        )
    k, s = sums["kodelet"], sums["servers"]
    print(
        f"{'total':<8} {mib(k['Rss']):>12} {mib(k['Pss']):>8} {sum(counts):>8} "
        f"{mib(s['Rss']):>12} {mib(s['Pss']):>8} {mib(k['Pss'] + s['Pss']):>10}"
    )
    for name, part in sums.items():
        private = part["Private_Clean"] + part["Private_Dirty"]
        processes = max(1, projects if name == "kodelet" else sum(counts))
        print(
            f"{name}: RSS {mib(part['Rss'])}, PSS {mib(part['Pss'])}, private {mib(private)} "
            f"MiB; PSS per process {mib(part['Pss'] / processes)}"
        )
    all_pss = k["Pss"] + s["Pss"]
    rss = (k["Rss"] + s["Rss"]) / projects
    print(
        f"per project: PSS {mib(all_pss / projects)} MiB "
        f"(hook servers {s['Pss'] / all_pss:.0%} of it), RSS {mib(rss)} MiB"
    )
    print(f"load average: {load_average()}")
    seen |= floors(root, env)
    return seen


def floors(root: Path, env: Mapping[str, str]) -> set[int]:
    """PSS, measured while the projects' warm kodelets run (so shared pages are split
    alike), of a warm kodelet of a project with no executables and no rules (the native
    plugins are the interpreter's: they load) and of a Python
    process that imports nothing: what no hook set can take away."""
    bare = root / "bare"
    (bare / ".git").mkdir(parents=True)
    (bare / ".kodelet").mkdir()
    call(bare, env)
    pid = int(warmed(bare, env)["pid"])
    call(bare, env)
    idle = subprocess.Popen([PY, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        time.sleep(1.0)  # the interpreter's start-up, not a synchronisation
        python = total([idle.pid])["Pss"]
    finally:
        idle.communicate(b"")
    print(
        f"floors: the warm kodelet of a project with no executables and no rules "
        f"{mib(total([pid])['Pss'])} MiB PSS; a Python process importing nothing "
        f"(`python -c`, site on) {mib(python)} MiB PSS"
    )
    return {pid, *descendants(pid, children())}


def calls(root: Path, env: Mapping[str, str], hooks: int, rounds: int) -> set[int]:
    """The first, second and third calls after a warm kodelet starts, paired with an
    in-process call in the same round; the pids of the warm kodelets seen."""
    project = make_project(root, "calls", hooks, env)
    off = {**env, "KODELET_DAEMON": "0"}
    call(project, off)
    seen: set[int] = set()
    rows: dict[str, list[float]] = {"first": [], "second": [], "third": [], "in-process": []}
    warmups = []
    print(f"\nfirst calls after a warm kodelet starts, {rounds} rounds (ms)")
    print(f"load average before: {load_average()}")
    for r in range(rounds):
        if r % 2:
            rows["in-process"].append(call(project, off))
        control.stop_all(env)
        rows["first"].append(call(project, env))
        started = time.perf_counter()
        info = warmed(project, env)
        warmups.append(time.perf_counter() - started)
        pid = int(info["pid"])
        seen |= {pid, *descendants(pid, children())}
        rows["second"].append(call(project, env))
        rows["third"].append(call(project, env))
        if not r % 2:
            rows["in-process"].append(call(project, off))
    print(f"load average after:  {load_average()}")
    inproc = rows["in-process"]
    for name, times in rows.items():
        ratio = statistics.median(t / i for t, i in zip(times, inproc, strict=True))
        print(f"  {name:<11} {statistics.median(times) * 1000:9.2f}  ({ratio:.2f}x in-process)")
    extra = statistics.median(s - t for s, t in zip(rows["second"], rows["third"], strict=True))
    print(f"  second minus third (paired): {extra * 1000:+.2f} ms")
    print(f"  warm-up after the first call returned: {statistics.median(warmups) * 1000:.0f} ms")
    control.stop_all(env)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--hooks", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--no-calls", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kodelet-bench-mem-")).resolve()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KODELET_")}
    env.update(
        HOME=str(root / "home"),
        KODELET_HOME=str(root / "home" / ".kodelet"),
        KODELET_DAEMON_DIR=str(root / "run"),
    )
    (root / "home").mkdir()
    print(
        f"each project: {args.hooks} persistent hookkit hooks, {NATIVES} native plugins, "
        "the recommended rules"
    )
    seen: set[int] = set()
    install_natives(root)
    try:
        if not args.no_memory:
            seen |= memory(root, env, args.projects, args.hooks)
        if not args.no_calls:
            seen |= calls(root, env, args.hooks, args.rounds)
    finally:
        control.stop_all(env)
        uninstall_natives()
        deadline = time.monotonic() + 10
        while (left := [p for p in seen if alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(root, ignore_errors=True)
    if left:
        raise SystemExit(f"left running after the stop: {sorted(left)}")
    print(f"\nstopped: none of the {len(seen)} processes seen is left")


if __name__ == "__main__":
    main()
