"""kodelet's cost inside the real Claude Code (the pinned binary of tests/e2e): ``claude
-p`` making 20 Bash calls against the stand-in Messages API, with kodelet installed
each way, against the same settings with a ``true`` command hook per event.

    python bench/claude_code.py [--runs 5] [--output FILE]

Prints the rows of BENCHMARKS.md's section 8 (and writes them to ``--output``). Needs
the npm registry the first time (the binary is cached like the e2e tests' one).
bench/agents.py measures the same per tool call in Claude Code, Codex and Gemini CLI
with sessions long enough to resolve a few milliseconds (section 8c).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kodelet.warm import control
from tests.e2e.messages_api import text, tool

from tests.e2e import claude_code

CALLS = 20
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop")
BIN = Path(sys.executable).parent


def true_settings() -> dict[str, Any]:
    hooks: dict[str, Any] = {}
    for event in EVENTS:
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": "true"}]}
        if "Tool" in event:
            group = {"matcher": "*", **group}
        hooks[event] = [group]
    return {"hooks": hooks}


def project(root: Path, name: str) -> Path:
    proj = root / name
    (proj / ".kodelet" / "hooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    (proj / ".claude").mkdir()
    return proj


def kodelet(*args: str, cwd: Path, env: dict[str, str]) -> None:
    subprocess.run([str(BIN / "kodelet"), *args], cwd=cwd, env=env, check=True, capture_output=True)


def session(binary: Path, proj: Path, home: Path, env: dict[str, str]) -> float:
    turns = [[tool("Bash", command="true")] for _ in range(CALLS)] + [[text("done")]]
    started = time.perf_counter()
    run = claude_code.run_claude(binary, proj, home, turns, allowed="Bash", env=env)
    took = time.perf_counter() - started
    errors = [r for r in run.tool_results() if r.get("is_error")]
    if run.returncode != 0 or errors:
        raise RuntimeError(f"claude failed: {run.stderr[-400:]} {run.stdout[-400:]} {errors[:1]}")
    return took


def start_up_floor(n: int = 100) -> float:
    """What starting the interpreter alone adds to a command hook, against ``true``."""

    def median(command: str) -> float:
        times = []
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run(["/bin/sh", "-c", command], check=True)
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    python = f"{sys.executable} -I -S -c pass"
    median(python)
    return median(python) - median("true")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--output")
    args = parser.parse_args()
    binary = claude_code.install()
    root = Path(tempfile.mkdtemp(prefix="kcc", dir="/tmp")).resolve()
    home = root / "home"
    (home / ".kodelet").mkdir(parents=True)
    env = {
        "HOME": str(home),
        "KODELET_HOME": str(home / ".kodelet"),
        "KODELET_DAEMON_DIR": str(root / "run"),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    os.environ.update(env)  # claude_env passes these on to Claude Code
    base = {**os.environ}
    variants: dict[str, tuple[Path, dict[str, str]]] = {}
    try:
        proj = project(root, "true")
        (proj / ".claude" / "settings.local.json").write_text(json.dumps(true_settings()))
        variants["`true` command hook"] = (proj, {})
        proj = project(root, "lean")
        kodelet("claude", "install", "--scope", "local", cwd=proj, env=base)
        variants["local scope install (native client where built)"] = (proj, {})
        proj = project(root, "http")
        kodelet("claude", "install", "--scope", "local", "--transport", "http", cwd=proj, env=base)
        variants["HTTP transport"] = (proj, {})
        proj = project(root, "inproc")
        kodelet("claude", "install", "--scope", "local", cwd=proj, env=base)
        variants["in-process (`KODELET_DAEMON=0`)"] = (proj, {"KODELET_DAEMON": "0"})
        times: dict[str, list[float]] = {name: [] for name in variants}
        for proj, extra in variants.values():
            session(binary, proj, home, extra)  # warm-up: starts the warm kodelets
        for _ in range(args.runs):
            for name, (proj, extra) in variants.items():
                times[name].append(session(binary, proj, home, extra))
    finally:
        control.stop_all(os.environ)
        shutil.rmtree(root, ignore_errors=True)
    baseline = statistics.median(times["`true` command hook"])
    lines = [
        f"Claude Code {claude_code.VERSION}, `claude -p` with {CALLS} Bash calls, median of "
        f"{args.runs} interleaved runs per row, hooks on {', '.join(EVENTS)}:",
        "",
        "| kodelet installed as | session | overhead per tool call vs `true` |",
        "|---|---:|---:|",
    ]
    for name, ts in times.items():
        t = statistics.median(ts)
        per_call = (t - baseline) / CALLS * 1000
        lines.append(f"| {name} | {t:.2f} s | {per_call:+.1f} ms |")
    floor = start_up_floor()
    lines += [
        "",
        f"The floor of any command hook written in Python: `/bin/sh -c 'python -I -S -c pass'` "
        f"costs {floor * 1000:+.1f} ms more than `/bin/sh -c true` per invocation (median of "
        "100, same run), and Claude Code invokes the command twice per tool call "
        "(PreToolUse, PostToolUse).",
    ]
    out = "\n".join(lines) + "\n"
    print(out)
    if args.output:
        Path(args.output).write_text(out)


if __name__ == "__main__":
    main()
