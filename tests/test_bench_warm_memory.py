"""The memory bench (bench/warm_memory.py): its helpers on this process, and section 7c,
which ``nox -s bench`` (bench/run.py) carries over from BENCHMARKS.md. The warm kodelets
themselves are measured by running the script, never here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.kit.bench import BENCH, bench_module


def test_help_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "warm_memory.py"), "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "--projects" in done.stdout


def test_memory_is_read_from_smaps_rollup_and_children_from_proc() -> None:
    memory = bench_module("warm_memory")
    mine = memory.rollup(os.getpid())
    assert mine is not None and 0 < mine["Pss"] <= mine["Rss"]
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        assert child.pid in memory.descendants(os.getpid(), memory.children())
        assert memory.alive(child.pid)
    finally:
        child.communicate(b"")
    assert not memory.alive(child.pid)
    assert memory.rollup(child.pid) is None


def test_run_carries_section_7c_over_after_7b(tmp_path: Path) -> None:
    run = bench_module("run")
    old = tmp_path / "BENCHMARKS.md"
    assert run.sections_of(run.previous(old), run.CARRIED_WARM) == []
    old.write_text(
        "# Benchmarks\n## 7b. Which entry\nseven b\n## 7c. Memory of N warm kodelets\n"
        "seven c\n## 8. Inside the real Claude Code\neight\n"
    )
    text = "\n".join(run.sections_of(run.previous(old), run.CARRIED_WARM))
    assert text.startswith("## 7c. Memory of N warm kodelets")
    assert "seven c" in text and "seven b" not in text and "eight" not in text
