"""The warm kodelet, measured as an agent pays for it: whole client processes against
``python -c pass``, the HTTP answer at the socket, instruction counts, and (with
``--claude``) the per-call overhead inside the real Claude Code.

Part of ``nox -s bench`` (section 7 of BENCHMARKS.md); ``python bench/warm.py`` prints it
alone.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from harness import KIT_HOOK, X, compare, median_time, ms, verdict, write_hook
from kodelet.warm import client, control
from kodelet.warm import http as warm_http

PY = sys.executable
CLIENT = os.path.join(os.path.dirname(os.path.realpath(client.__file__)), "hook.py")
NATIVES = 5
EXECUTABLES = 20
NATIVE_DIST = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "kodelet-bench-natives"
version = "1.0"

[project.entry-points."kodelet.plugins"]
{entries}

[tool.setuptools]
py-modules = ["kodelet_bench_natives"]
"""
NATIVE_MODULE = """from kodelet import hookimpl


class Guard:
    def __init__(self, n):
        self.n = n

    @hookimpl
    def before_tool_call(self, tool_name, tool_input):
        if tool_name == "bash" and "rm -rf" in tool_input.get("command", ""):
            return {"blocked": True, "reason": f"guard {self.n}"}
        return None


""" + "\n".join(f"g{i} = Guard({i})" for i in range(NATIVES))


def pre_tool(project: Path, command: str = "ls") -> bytes:
    return json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": "bench",
            "transcript_path": "",
            "cwd": str(project),
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": "toolu_bench",
        }
    ).encode()


def run(argv: list[str], data: bytes, env: dict[str, str], cwd: Path) -> bytes:
    done = subprocess.run(argv, input=data, capture_output=True, env=env, cwd=cwd, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace")[-400:])
    return done.stdout


def install_natives(root: Path) -> None:
    src = root / "natives"
    src.mkdir()
    entries = "\n".join(f'bench-native-{i} = "kodelet_bench_natives:g{i}"' for i in range(NATIVES))
    (src / "pyproject.toml").write_text(NATIVE_DIST.format(entries=entries))
    (src / "kodelet_bench_natives.py").write_text(NATIVE_MODULE)
    subprocess.run(
        [PY, "-m", "pip", "install", "-q", "--no-deps", str(src)], check=True, capture_output=True
    )


def uninstall_natives() -> None:
    subprocess.run(
        [PY, "-m", "pip", "uninstall", "-q", "-y", "kodelet-bench-natives"],
        check=False,
        capture_output=True,
    )


def hooks_own(argv: list[str], data: bytes, env: dict[str, str], cwd: Path, runs: int) -> float:
    """Median seconds the hooks themselves took per call, from the trace's durations."""
    totals = []
    for _ in range(runs):
        done = subprocess.run(
            [*argv, "--trace"], input=data, capture_output=True, env=env, cwd=cwd, check=True
        )
        lines = [json.loads(x) for x in done.stderr.decode().splitlines() if x.startswith("{")]
        totals.append(sum(r.get("duration_ms", 0.0) for r in lines) / 1000)
    return statistics.median(totals)


def instructions(argv: list[str], data: bytes, env: dict[str, str], cwd: Path) -> int | None:
    if shutil.which("valgrind") is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cg") as out:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                f"--cachegrind-out-file={out.name}",
                *argv,
            ],
            input=data,
            capture_output=True,
            env=env,
            cwd=cwd,
            check=False,
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr.decode(errors="replace"))
        return int(found.group(1).replace(",", "")) if found else None


def http_answer(record: warm_http.Record, data: bytes) -> Callable[[], object]:
    def post() -> object:
        conn = http.client.HTTPConnection("127.0.0.1", record.port, timeout=30)
        conn.request(
            "POST",
            warm_http.PATH,
            body=data,
            headers={"Authorization": record.header(), "Content-Type": "application/json"},
        )
        body = conn.getresponse().read()
        conn.close()
        return body

    return post


def warm(root: Path, scale: float) -> list[str]:
    runs = max(5, int(15 * scale))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KODELET_DAEMON")}
    env["KODELET_DAEMON_DIR"] = str(Path(tempfile.mkdtemp(prefix="kwb", dir="/tmp")) / "run")
    off = {**env, "KODELET_DAEMON": "0"}
    lean = [PY, "-I", "-S", CLIENT, "claude", "hook"]
    script = [str(Path(PY).parent / "kodelet"), "claude", "hook"]
    rows: list[str] = []
    figures: dict[str, Any] = {}
    try:
        empty = root / "warm-empty"
        (empty / ".kodelet" / "hooks").mkdir(parents=True)
        (empty / ".git").mkdir()
        full = root / "warm-full"
        (full / ".git").mkdir(parents=True)
        for i in range(EXECUTABLES):
            write_hook(full / ".kodelet" / "hooks", f"guard{i:02}", KIT_HOOK)
        install_natives(root)
        baseline = lambda: run([PY, "-c", "pass"], b"", env, root)  # noqa: E731
        for name, proj in (
            ("no hooks", empty),
            (f"{EXECUTABLES} executables + {NATIVES} native plugins", full),
        ):
            data = pre_tool(proj)
            e = {**env, "CLAUDE_PROJECT_DIR": str(proj)}
            o = {**off, "CLAUDE_PROJECT_DIR": str(proj)}
            control.start(proj, e)
            run(lean, data, e, proj)
            pair = compare(partial(run, lean, data, e, proj), baseline, ops=3, runs=runs)
            via_script = median_time(partial(run, script, data, e, proj), runs)
            in_process = median_time(partial(run, script, data, o, proj), max(3, runs // 3))
            own = hooks_own(lean, data, e, proj, 5)
            net = (pair.subject - own) / pair.baseline
            figures[name] = (pair, via_script, in_process, own, net)
            rows.append(
                f"| {name} | {ms(pair.subject)} | {ms(own)} | {ms(pair.baseline)} | "
                f"{net:.2f}{X} | {ms(via_script)} | {ms(in_process)} |"
            )
            control.stop_all(e)
        # The first call, no warm kodelet yet: it answers in-process and starts one.
        data = pre_tool(empty)
        e = {**env, "CLAUDE_PROJECT_DIR": str(empty)}
        o = {**off, "CLAUDE_PROJECT_DIR": str(empty)}
        firsts, todays = [], []
        for _ in range(max(3, runs // 3)):
            control.stop_all(e)
            t = time.perf_counter()
            run(lean, data, e, empty)
            firsts.append(time.perf_counter() - t)
            control.stop_all(e)  # once started, it would compete with the next run
            t = time.perf_counter()
            run(script, data, o, empty)
            todays.append(time.perf_counter() - t)
        first, today = statistics.median(firsts), statistics.median(todays)
        # HTTP at the socket.
        from kodelet.places import Places

        http_rows = []
        for name, proj in (("no hooks", empty), (f"{NATIVES} native plugins", full)):
            places = Places.resolve(proj, None, env)
            if proj is full:
                shutil.rmtree(proj / ".kodelet" / "hooks")
            record = warm_http.ensure_record(places)
            control.start(proj, {**env, "CLAUDE_PROJECT_DIR": str(proj)})
            post = http_answer(record, pre_tool(proj))
            post()
            http_rows.append((name, median_time(post, runs * 4)))
        e = {**env, "CLAUDE_PROJECT_DIR": str(empty)}
        control.start(empty, e)
        count_lean = instructions(lean, pre_tool(empty), e, empty)
        count_pass = instructions([PY, "-c", "pass"], b"", env, root)
    finally:
        control.stop_all(env)
        uninstall_natives()
    no_hooks = figures["no hooks"]
    loaded = figures[f"{EXECUTABLES} executables + {NATIVES} native plugins"]
    lines = [
        "## 7. Warm kodelet",
        "",
        "One Claude Code `PreToolUse` input answered by a whole client process, as Claude Code "
        "runs it: the lean client `python -I -S .../kodelet/warm/hook.py claude hook` "
        "(what `kodelet claude install` writes for the local and user scopes) with the "
        "project's warm kodelet running, against `python -c pass` of the same interpreter. "
        "The hooks' own time (the trace's durations) is reported apart and taken out of "
        "the ratio. "
        "`kodelet claude hook` is the console script (what the shared project settings run); "
        "in-process is the same with `KODELET_DAEMON=0`, the cost before the warm kodelet.",
        "",
        "| project | lean client, warm | hooks' own | `python -c pass` "
        "| ratio without the hooks | `kodelet claude hook`, warm | in-process |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Target ≤ 1.0{X} `python -c pass`: no hooks {verdict(no_hooks[4] <= 1.0)} "
        f"({no_hooks[4]:.2f}{X}); {EXECUTABLES} executables (persistent `hookkit`) + {NATIVES} "
        f"native plugins {verdict(loaded[4] <= 1.0)} ({loaded[4]:.2f}{X}).",
        "",
        f"The first call with no warm kodelet (answered in-process, then one started): "
        f"{ms(first)} against {ms(today)} for today's in-process call, "
        f"**{first / today:.2f}{X}**; target ≤ 1.1{X}: {verdict(first / today <= 1.1)}.",
        "",
        "HTTP transport, one answer at the socket (a new connection per call, as Claude Code "
        "makes; `http.client` in the bench process):",
        "",
        "| project | median per answer | target ≤ 2 ms |",
        "|---|---:|---|",
        *[f"| {n} | {ms(t)} | {verdict(t <= 0.002)} |" for n, t in http_rows],
        "",
    ]
    if count_lean and count_pass:
        lines += [
            f"Instructions (valgrind cachegrind, the client process only): lean client, warm "
            f"{count_lean / 1e6:,.1f} M against `python -c pass` {count_pass / 1e6:,.1f} M, "
            f"**{count_lean / count_pass:.2f}{X}**. The warm kodelet's own work for the "
            "call happens in its process, which the wall-clock rows above include.",
            "",
        ]
    return lines


if __name__ == "__main__":
    tmp = Path(tempfile.mkdtemp(prefix="kodelet-bench-")).resolve()
    os.environ["HOME"] = str(tmp / "home")
    os.environ["KODELET_HOME"] = str(tmp / "home" / ".kodelet")
    try:
        print("\n".join(warm(tmp, 0.3 if "--quick" in sys.argv else 1.0)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
