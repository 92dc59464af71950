"""Timing helpers shared by the benchmarks: interleaved runs, medians, machine facts."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import attrs

X = "\N{MULTIPLICATION SIGN}"
PY = sys.executable
KIT_HOOK = f"""#!{PY}
from kodelet import hookkit


def check(payload):
    if "rm -rf" in payload["tool_input"].get("command", ""):
        return {{"blocked": True, "reason": "no"}}
    return None


hookkit.main("before_tool_call", check)
"""
"""A persistent (``serve``) guard written with the hook kit: blocks ``rm -rf``."""


@attrs.frozen
class Pair:
    """Median seconds per operation of a subject and its baseline, timed in the same run."""

    subject: float
    baseline: float

    @property
    def ratio(self) -> float:
        return self.subject / self.baseline


def per_op(fn: Callable[[], object], ops: int) -> float:
    started = time.perf_counter()
    for _ in range(ops):
        fn()
    return (time.perf_counter() - started) / ops


def compare(
    subject: Callable[[], object],
    baseline: Callable[[], object],
    *,
    ops: int,
    runs: int,
    baseline_ops: int | None = None,
) -> Pair:
    """Alternate subject and baseline runs so that drift in the machine hits both alike."""
    per_op(subject, max(1, ops // 10))
    per_op(baseline, max(1, (baseline_ops or ops) // 10))
    got: list[float] = []
    base: list[float] = []
    for _ in range(runs):
        got.append(per_op(subject, ops))
        base.append(per_op(baseline, baseline_ops or ops))
    return Pair(statistics.median(got), statistics.median(base))


def median_time(fn: Callable[[], object], runs: int, ops: int = 1) -> float:
    fn()
    return statistics.median(per_op(fn, ops) for _ in range(runs))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> list[str]:
    import pluggy

    return [
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {platform.system()} {platform.release()} {platform.machine()}, "
        f"{os.cpu_count()} cores, {cpu_model()}",
        f"- python: {platform.python_implementation()} {sys.version.split()[0]}, "
        f"pluggy {pluggy.__version__}",
    ]


def write_hook(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages, printed beside every timing."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"
