"""The per-tool-call bench (bench/agents.py): its pure helpers on a real install's hook
file, and what ``nox -s bench`` (bench/run.py) carries over from BENCHMARKS.md. The
sessions themselves are timed by running the script, never here."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from tests.kit.bench import BENCH, bench_module


def test_help_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "agents.py"), "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "--calls" in done.stdout and "--quick" in done.stdout


def test_an_unknown_agent_is_one_line_not_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "agents.py"), "--agents", "cursor"],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "--agents takes claude, codex, gemini" in done.stderr


def test_paired_overhead_and_rotation() -> None:
    agents = bench_module("agents")
    assert agents.paired([2.0, 3.0], [1.0, 1.5], 100) == [0.01, 0.015]
    names = ["a", "b", "c"]
    assert [agents.rotated(names, r)[0] for r in range(4)] == ["a", "b", "c", "a"]


def test_rewrite_replaces_every_entry_claude_install_writes(tmp_path: Path) -> None:
    """The project entry (behind install's PATH check) becomes ``true`` for the
    baseline, or the lean Python client with the check and arguments kept."""
    agents = bench_module("agents")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    kodelet = Path(sys.executable).parent / "kodelet"
    subprocess.run([str(kodelet), "claude", "install"], cwd=tmp_path, check=True)
    installed = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    events = agents.events(installed)
    assert "PreToolUse" in events
    baseline = json.loads(json.dumps(installed))
    assert agents.rewrite(baseline, lambda *_: "true") >= len(events)
    assert baseline["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "true"
    lean = json.loads(json.dumps(installed))
    agents.rewrite(lean, agents.lean)
    command = lean["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    check, _, run = command.rpartition("; ")
    assert check.startswith("command -v kodelet-hook")
    assert shlex.split(run)[:3] == [sys.executable, "-I", "-S"]
    assert shlex.split(run)[-2:] == ["claude", "hook"]


def test_run_carries_sections_8_8b_and_8c_over_once(tmp_path: Path) -> None:
    """Without ``--claude``, section 8 and the sections timed by their own scripts are
    kept; the sections bench/run.py writes itself (9 and on) are not carried too."""
    run = bench_module("run")
    old = tmp_path / "BENCHMARKS.md"
    assert run.claude_section(old, False) == []
    old.write_text(
        "\n".join(
            [
                "# Benchmarks",
                "## 7. Warm kodelet",
                "seven",
                "## 8. Inside the real Claude Code",
                "eight",
                "## 8b. The hook client, per invocation",
                "eight b",
                "## 8c. Per tool call inside Claude Code, Codex and Gemini CLI",
                "eight c",
                "### Codex",
                "codex rows",
                "## 9. Rules: the recommended set on a corpus",
                "nine",
            ]
        )
    )
    text = "\n".join(run.claude_section(old, False))
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## 8. Inside the real Claude Code",
        "## 8b. The hook client, per invocation",
        "## 8c. Per tool call inside Claude Code, Codex and Gemini CLI",
    ]
    assert "codex rows" in text and "nine" not in text and "seven" not in text
