"""`kodelet replay PATH...`: a corpus through the same hooks, in processes or on Dask; the
corpus report, --only-acted, the baseline comparison, the HTML report and Ctrl-C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kodelet.testing import write_hook

from tests.kit.cli import run_kodelet as kodelet
from tests.kit.replay import PY, without_timings

# Public Claude Code transcripts (marot/spotter, MIT) are not kept in this repository:
# point KODELET_CLAUDE_TRANSCRIPTS at a local copy of them to run these tests.
REAL = Path(os.environ.get("KODELET_CLAUDE_TRANSCRIPTS", "/nonexistent")) / "marot__spotter"
needs_real = pytest.mark.skipif(
    not REAL.is_dir(), reason="public transcripts not present (KODELET_CLAUDE_TRANSCRIPTS)"
)
DOC = Path(__file__).parent.parent / "docs" / "REPLAY.md"

GUARDRAIL = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call;;
  run) input=$(cat)
       case "$input" in
         *'git commit'*) echo '{"blocked": true, "reason": "commits go through review"}';;
         *'rm -rf'*) echo '{"blocked": true, "reason": "no rm -rf"}';;
       esac;;
esac
"""

SLOW = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call;;
  run) cat > /dev/null; sleep 0.3; echo call >> "$KODELET_TEST_CALLS";;
esac
"""


def session(conv: str, commands: list[str]) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"type": "user", "content": f"work on {conv}"}]
    for i, command in enumerate(commands):
        items.append(
            {
                "type": "assistant",
                "content": f"step {i}",
                "usage": {"input_tokens": 1000 + i, "output_tokens": 10},
                "tool_calls": [
                    {
                        "id": f"{conv}-t{i}",
                        "name": "bash",
                        "input": {"command": command},
                        "output": {"toolName": "bash", "success": True, "timestamp": "T"},
                    }
                ],
            }
        )
    items.append({"type": "assistant", "content": "done", "usage": {"input_tokens": 2000}})
    return {"version": 1, "conv_id": conv, "max_context_window": 100000, "items": items}


CORPUS = {
    "a.json": ["ls", "git commit -m wip", "pytest -q"],
    "b.json": ["ls", "ls -la"],
    "c.json": ["rm -rf build", "git commit -am fix", "git commit -m again"],
    "d.json": ["make"],
}


def write_corpus(root: Path) -> Path:
    directory = root / "sessions"
    directory.mkdir(parents=True)
    for name, commands in CORPUS.items():
        (directory / name).write_text(json.dumps(session(name[0], commands)))
    return directory


@pytest.fixture
def guarded(project: Path) -> Path:
    write_hook(project / ".kodelet" / "hooks", "guardrail", GUARDRAIL)
    return project


def corpus_json(project: Path, *args: str) -> dict[str, Any]:
    proc = kodelet("--cwd", str(project), "replay", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


# -- the report -------------------------------------------------------------------------


def test_corpus_report_per_hook_per_session_and_block_reasons(guarded: Path) -> None:
    sessions = write_corpus(guarded)
    (sessions / "broken.json").write_text("{")
    data = corpus_json(guarded, str(sessions), "--jobs", "2")
    totals = data["totals"]
    assert totals["sessions"] == 5 and totals["replayed"] == 4 and totals["failed_to_load"] == 1
    assert totals["calls_blocked"] == 4 and totals["sessions_acted"] == 2
    guard = data["hooks"]["guardrail"]
    assert guard["events"] == 9 and guard["blocked"] == 4 and guard["acted"] == 4
    assert guard["failed"] == 0 and guard["timed_out"] == 0
    assert 0 < guard["p50_ms"] <= guard["p95_ms"]
    assert data["hooks"]["builtin:compact-trigger"]["blocked"] == 0
    lines = {s["name"]: s for s in data["sessions"]}
    assert lines["c.json"]["calls_blocked"] == 3 and lines["b.json"]["calls_blocked"] == 0
    assert lines["broken.json"]["error"].startswith("broken.json: not valid JSON")
    first, second = data["block_reasons"]
    assert (first["hook"], first["reason"], first["count"]) == (
        "guardrail",
        "commits go through review",
        3,
    )
    assert first["example"] == {
        "session": "a.json",
        "turn": 2,
        "event": "before_tool_call",
        "subject": "bash: git commit -m wip",
    }
    assert (second["reason"], second["count"]) == ("no rm -rf", 1)


def test_one_job_and_two_jobs_give_the_same_report(guarded: Path) -> None:
    sessions = write_corpus(guarded)
    one = corpus_json(guarded, str(sessions), "--jobs", "1")
    two = corpus_json(guarded, str(sessions), "--jobs", "2")
    drop = ("p50_ms", "p95_ms")

    def stable(data: dict[str, Any]) -> Any:
        for row in data["hooks"].values():
            for key in drop:
                row.pop(key)
        return without_timings(data)

    assert stable(one) == stable(two)


def test_only_acted_keeps_the_rows_where_a_hook_did_something(guarded: Path) -> None:
    data = corpus_json(guarded, str(write_corpus(guarded)), "--only-acted")
    assert [s["name"] for s in data["sessions"]] == ["a.json", "c.json"]
    assert list(data["hooks"]) == ["guardrail"]


@needs_real
def test_globs_and_several_files_make_a_corpus(guarded: Path) -> None:
    sessions = write_corpus(guarded)
    data = corpus_json(guarded, str(sessions / "[ab].json"))
    assert [s["name"] for s in data["sessions"]] == [
        str(sessions / "a.json"),
        str(sessions / "b.json"),
    ]
    data = corpus_json(guarded, str(sessions / "d.json"), str(REAL / "short.jsonl"))
    assert data["totals"]["replayed"] == 2


@needs_real
def test_text_report_fits_the_terminal(guarded: Path) -> None:
    sessions = write_corpus(guarded)
    shutil.copy(REAL / "tool_heavy.jsonl", sessions / "tool_heavy.jsonl")
    proc = kodelet("--cwd", str(guarded), "replay", str(sessions), env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for text in ("Corpus: 5 of 5 sessions replayed", "Hooks", "Sessions", "p95 ms", "timeout"):
        assert text in out, text
    assert "Most frequent block reasons" in out and "commits go through review" in out
    assert all(len(line) <= 80 for line in out.splitlines())


def test_a_directory_leaves_out_subagent_files_whose_parent_is_there(tmp_path: Path) -> None:
    from kodelet.replay.sources import expand

    root = tmp_path / "projects" / "-home-me-app"
    sub = root / "s1" / "subagents"
    sub.mkdir(parents=True)
    (root / "s1.jsonl").write_text("{}")
    (sub / "agent-a1.jsonl").write_text("{}")
    (root / "lonely" / "subagents").mkdir(parents=True)
    (root / "lonely" / "subagents" / "agent-b2.jsonl").write_text("{}")
    sources, many = expand([str(tmp_path / "projects")])
    assert many
    assert [s.name for s in sources] == [
        "-home-me-app/lonely/subagents/agent-b2.jsonl",
        "-home-me-app/s1.jsonl",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nothing-*.json"], "kodelet: error: nothing-*.json: matches no file"),
        (["--executor", "dask"], "kodelet: error: --executor dask needs --scheduler ADDRESS"),
        (
            ["--executor", "spark"],
            "kodelet: error: --executor spark: expected one of processes, dask",
        ),
        (["--baseline", "missing.toml"], "kodelet: error: --baseline missing.toml: no such file"),
    ],
)
def test_bad_corpus_arguments_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    proc = kodelet("--cwd", str(tmp_path), "replay", *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [message]


def test_save_needs_one_session(guarded: Path) -> None:
    proc = kodelet("--cwd", str(guarded), "replay", str(write_corpus(guarded)), "--save", "x.json")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["kodelet: error: --save writes one session; give one file"]


# -- baseline comparison ---------------------------------------------------------------------


def test_baseline_config_reports_exactly_the_calls_that_change(guarded: Path) -> None:
    sessions = write_corpus(guarded)
    baseline = guarded / "baseline.toml"
    baseline.write_text('[hooks]\ndisabled = ["guardrail"]\n')
    data = corpus_json(guarded, str(sessions), "--baseline", str(baseline))
    comparison = data["comparison"]
    assert comparison["counts"]["newly blocked"] == 4
    assert sum(comparison["counts"].values()) == 4
    changed = {(c["session"], c["subject"]) for c in comparison["changes"]}
    assert changed == {
        ("a.json", "bash: git commit -m wip"),
        ("c.json", "bash: rm -rf build"),
        ("c.json", "bash: git commit -am fix"),
        ("c.json", "bash: git commit -m again"),
    }
    first = comparison["changes"][0]
    assert (first["before"], first["after"], first["hook"]) == ("passed", "blocked", "guardrail")
    assert first["detail"] == "commits go through review"

    without = corpus_json(guarded, str(sessions), "--compare-without", "guardrail")
    assert without["comparison"] == comparison

    # The other way round: the baseline has the guardrail, the candidate does not.
    (guarded / ".kodelet" / "config.toml").write_text('[hooks]\ndisabled = ["guardrail"]\n')
    back = guarded / "back.toml"
    back.write_text("[hooks]\ndisabled = []\n")
    reverse = corpus_json(guarded, str(sessions), "--baseline", str(back))
    assert reverse["comparison"]["counts"]["no longer blocked"] == 4


def test_a_rewrite_and_a_blocked_message_show_as_changes(project: Path) -> None:
    write_hook(
        project / ".kodelet" / "hooks",
        "tidy",
        f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("before_tool_call"); sys.exit(0)
if json.load(sys.stdin)["tool_input"].get("command") == "ls":
    print(json.dumps({{"input": {{"command": "ls -la"}}}}))
""",
    )
    write_hook(
        project / ".kodelet" / "hooks",
        "no-d",
        f"""#!{PY}
import json, sys
if sys.argv[1] == "hook":
    print("user_message_send"); sys.exit(0)
if "work on d" in json.load(sys.stdin)["message"]:
    print(json.dumps({{"blocked": True, "reason": "not d"}}))
""",
    )
    sessions = write_corpus(project)
    data = corpus_json(
        project, str(sessions), "--compare-without", "tidy", "--compare-without", "no-d"
    )
    counts = data["comparison"]["counts"]
    assert counts["rewritten"] == 2  # the two plain `ls` calls
    assert counts["newly blocked"] == 1  # d's message
    assert counts["not reached"] == 2  # d's `make` call, before and after


# -- HTML ----------------------------------------------------------------------------------


def test_html_report_is_self_contained(guarded: Path) -> None:
    sessions = write_corpus(guarded)
    out = guarded / "report.html"
    baseline = guarded / "baseline.toml"
    baseline.write_text('[hooks]\ndisabled = ["guardrail"]\n')
    proc = kodelet(
        "--cwd",
        str(guarded),
        "replay",
        str(sessions),
        "--html",
        str(out),
        "--baseline",
        str(baseline),
    )
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    for needle in ('<table id="hooks">', '<table id="sessions">', '<table id="reasons">'):
        assert needle in text
    assert '<table id="changes">' in text and "newly blocked" in text
    assert text.count("<svg") >= 2 and "<details>" in text
    for fetch in ("src=", "href=", "url(", "@import", "<script", "<link"):
        assert fetch not in text, fetch


def test_html_escapes_what_the_recording_says(guarded: Path) -> None:
    evil = session("e", ["git commit -m '<script>alert(1)</script>'"])
    path = guarded / "evil.json"
    path.write_text(json.dumps(evil))
    out = guarded / "one.html"
    proc = kodelet("--cwd", str(guarded), "replay", str(path), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")
def test_html_report_renders_in_headless_chromium(guarded: Path, tmp_path: Path) -> None:
    out = guarded / "report.html"
    proc = kodelet("--cwd", str(guarded), "replay", str(write_corpus(guarded)), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    assert CHROMIUM is not None
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'chromium'}",
            "--dump-dom",
            out.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert '<table id="hooks">' in html and '<table id="sessions">' in html
    assert "<td>guardrail</td>" in html and "<td>c.json</td>" in html
    assert "commits go through review" in html


# -- Dask --------------------------------------------------------------------------------------


@pytest.fixture
def dask_scheduler() -> Any:
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        scheduler_port=0,
        dashboard_address=None,
    )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def test_dask_executor_gives_the_same_report_as_processes(
    guarded: Path, dask_scheduler: str
) -> None:
    sessions = write_corpus(guarded)
    (sessions / "broken.json").write_text("{")
    local = corpus_json(guarded, str(sessions))
    dask = corpus_json(guarded, str(sessions), "--executor", "dask", "--scheduler", dask_scheduler)

    def stable(data: dict[str, Any]) -> Any:
        for row in data["hooks"].values():
            row.pop("p50_ms"), row.pop("p95_ms")
        return without_timings(data)

    assert stable(dask) == stable(local)
    assert dask["hooks"]["guardrail"]["blocked"] == 4


# -- parallel processes: progress, Ctrl-C --------------------------------------------------------


def test_progress_bar_over_sessions_on_a_terminal_only(guarded: Path) -> None:
    sessions = write_corpus(guarded)
    tty = {"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"}
    proc = kodelet("--cwd", str(guarded), "replay", str(sessions), "--json", "-j", "2", env=tty)
    assert proc.returncode == 0 and "replaying" in proc.stderr
    json.loads(proc.stdout)
    proc = kodelet("--cwd", str(guarded), "replay", str(sessions), "--json", "-j", "2")
    assert proc.returncode == 0 and proc.stderr == ""


def _in_session(sid: int) -> list[str]:
    """Processes still alive in session ``sid`` (the replay's own, started for it)."""
    left = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            left.append(stat.parent.name)
    return left


def test_ctrl_c_stops_the_workers_and_reports_what_finished(project: Path, tmp_path: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "slow", SLOW)
    calls = tmp_path / "calls"
    calls.touch()
    sessions = project / "many"
    sessions.mkdir()
    for i in range(12):
        (sessions / f"s{i:02}.json").write_text(json.dumps(session(f"s{i}", ["a", "b", "c"])))
    proc = subprocess.Popen(
        [PY, "-m", "kodelet", "--cwd", str(project), "replay", str(sessions), "-j", "2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "KODELET_TEST_CALLS": str(calls)},
    )
    try:
        deadline = time.monotonic() + 60
        # Two sessions' worth of calls (3 each): some sessions finished, the rest have not.
        while len(calls.read_text().splitlines()) < 7 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    data = json.loads(out)
    done = data["totals"]["sessions"]
    assert 0 < done < 12
    assert err.strip().splitlines()[-1] == f"kodelet: interrupted: {done} of 12 sessions replayed"
    deadline = time.monotonic() + 5
    while _in_session(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _in_session(proc.pid) == []


# -- docs/REPLAY.md ---------------------------------------------------------------------------


def doc_blocks(lang: str) -> list[str]:
    parts = DOC.read_text().split(f"```{lang}\n")[1:]
    return [part.split("```", 1)[0] for part in parts]


@needs_real
def test_the_docs_corpus_commands_run(
    guarded: Path, isolated_home: Path, dask_scheduler: str
) -> None:
    """Every ``sh`` block of the corpus, baseline, HTML and Dask sections, as written."""
    projects = isolated_home / ".claude" / "projects" / "-home-me-app"
    projects.mkdir(parents=True)
    for name in ("short.jsonl", "tool_heavy.jsonl"):
        shutil.copy(REAL / name, projects / name)
    write_corpus(guarded)
    (guarded / "baseline.toml").write_text('[hooks]\ndisabled = ["guardrail"]\n')
    blocks = doc_blocks("sh")
    assert len(blocks) == 4
    script = "\n".join(blocks).replace("tcp://scheduler.internal:8786", dask_scheduler)
    runner = f'set -e\nkodelet() {{ "{PY}" -m kodelet "$@"; }}\n{script}'
    proc = subprocess.run(
        ["bash", "-c", runner],
        cwd=guarded,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.count("Corpus: 2 of 2 sessions replayed") == 6
    assert json.loads((guarded / "corpus.json").read_text())["totals"]["replayed"] == 4
    assert '<table id="hooks">' in (guarded / "report.html").read_text()
    assert proc.stdout.count("Against the baseline") == 2
