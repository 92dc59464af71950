"""``kodelet audit`` in real subprocesses, over logs written by kodelet's own writer."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kodelet.audit.log import DecisionLog
from kodelet.audit.records import stamp
from kodelet.testing import write_hook

from tests.kit.cli import no_traceback, run_before_tool_call, run_kodelet
from tests.kit.hooks import BLOCKING_HOOK


def kodelet_home(home: Path) -> Path:
    return home / ".kodelet"


def rec(n: int, **fields: Any) -> dict[str, Any]:
    base = {
        "time": stamp(time.time() - 3600 * (100 - n)),
        "agent": "claude",
        "session": "s",
        "project": "/p",
        "event": "before_tool_call",
        "tool": "bash",
        "input": f"cmd {n}",
        "decision": "deny",
        "by": "hook:guard",
        "source": "executable",
        "reason": f"reason {n}",
        "ms": 1.5,
    }
    return {**base, **fields}


def write(home: Path, records: list[dict[str, Any]], max_bytes: int = 10**7) -> DecisionLog:
    log = DecisionLog(kodelet_home(home), max_bytes=max_bytes, keep=50)
    for r in records:
        log.append(r)
    return log


def audit(*args: str) -> subprocess.CompletedProcess[str]:
    res = run_kodelet("audit", *args)
    no_traceback(res)
    return res


def json_lines(res: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_without_a_log_it_says_so(isolated_home: Path) -> None:
    res = audit()
    assert res.returncode == 0
    assert res.stdout.startswith("No decisions logged yet (")
    assert audit("--json").stdout == ""


def test_it_shows_the_last_twenty_across_rotated_files(isolated_home: Path) -> None:
    log = write(isolated_home, [rec(n, reason="r" * 400) for n in range(30)], max_bytes=4096)
    assert len(log.files()) > 2
    shown = audit().stdout
    assert "cmd 10:" not in shown and "cmd 9:" not in shown
    assert all(f"bash: cmd {n}\n" in shown for n in range(10, 30))
    assert [r["input"] for r in json_lines(audit("--json", "-n", "0"))] == [
        f"cmd {n}" for n in range(30)
    ]


def test_filters_narrow_the_records(isolated_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    write(
        isolated_home,
        [
            rec(1),
            rec(2, decision="ask", by="rule:no-push", source="managed"),
            rec(3, agent="codex", tool="file_write"),
            rec(4, decision="rewrite", project=str(project)),
            rec(99, by="rule:no-push", source="user"),
        ],
    )

    def inputs(*args: str) -> list[str]:
        return [r["input"] for r in json_lines(audit("--json", *args))]

    assert inputs("--decision", "ask") == ["cmd 2"]
    assert inputs("--decision", "ask,rewrite") == ["cmd 2", "cmd 4"]
    assert inputs("--agent", "codex") == ["cmd 3"]
    assert inputs("--tool", "file_write") == ["cmd 3"]
    assert inputs("--by", "no-push") == ["cmd 2", "cmd 99"]
    assert inputs("--by", "rule:no-push", "--decision", "deny") == ["cmd 99"]
    assert inputs("--by", "hook:no-push") == []
    assert inputs("--since", "2h") == ["cmd 99"]
    assert inputs("--since", "2000-01-01T00:00") == ["cmd 1", "cmd 2", "cmd 3", "cmd 4", "cmd 99"]
    assert inputs("--project", str(project)) == ["cmd 4"]


def test_summary_counts_per_decision_and_per_rule_or_hook(isolated_home: Path) -> None:
    write(
        isolated_home,
        [rec(1), rec(2), rec(3, decision="ask", by="rule:r1"), rec(4, by="rule:r1")],
    )
    data = json.loads(audit("--summary", "--json").stdout)
    assert data["total"] == 4
    assert data["decisions"] == {"deny": 3, "ask": 1}
    assert data["by"] == {"hook:guard": {"deny": 2}, "rule:r1": {"ask": 1, "deny": 1}}
    text = audit("--summary").stdout
    assert "4 decisions" in text and "rule:r1" in text and "(ask 1, deny 1)" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--decision", "nope"), "--decision 'nope': expected one of deny, ask, rewrite, allow"),
        (("--since", "yesterday"), "--since 'yesterday': expected a duration"),
        (("--project", "/no/such/dir"), "--project /no/such/dir: not a directory"),
    ],
)
def test_bad_filters_are_one_line_errors(
    isolated_home: Path, args: tuple[str, ...], message: str
) -> None:
    write(isolated_home, [rec(1)])
    res = audit(*args)
    assert res.returncode == 2
    [line] = res.stderr.strip().splitlines()
    assert line.startswith("kodelet: error: ") and message in line


def test_follow_prints_records_as_they_are_written(isolated_home: Path, project: Path) -> None:
    write(isolated_home, [rec(1)])
    proc = subprocess.Popen(
        [sys.executable, "-m", "kodelet", "audit", "--follow", "--json", "--decision", "deny"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    try:
        assert proc.stdout is not None
        assert json.loads(_line(proc))["input"] == "cmd 1"
        write_hook(project / ".kodelet" / "hooks", "guard", BLOCKING_HOOK % "not now")
        payload = '{"tool_name": "bash", "tool_input": {"command": "make clean"}}'
        assert run_before_tool_call(project, payload).returncode == 0
        new = json.loads(_line(proc))
        assert (new["input"], new["reason"], new["agent"]) == ("make clean", "not now", "")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _line(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> bytes:
    """The next line the process prints; fails, rather than hangs, if none comes."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "no line within the time limit"
    return proc.stdout.readline()


def test_check_names_a_log_that_cannot_be_written(isolated_home: Path, tmp_path: Path) -> None:
    assert audit("--check").returncode == 0  # no log yet: the first record makes it
    assert not (kodelet_home(isolated_home) / "audit").exists()
    write(isolated_home, [rec(1)])
    assert audit("--check").returncode == 0
    path = kodelet_home(isolated_home) / "audit" / "decisions.jsonl"
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    res = audit("--check")
    assert res.returncode == 1
    assert "log: cannot be written:" in res.stdout and "symbolic link" in res.stdout


def test_an_agents_status_says_when_decisions_are_not_logged(
    isolated_home: Path, project: Path, tmp_path: Path
) -> None:
    fine = json.loads(run_kodelet("codex", "status", "--json", cwd=project).stdout)
    assert fine["audit"]["problem"] is None
    folder = kodelet_home(isolated_home) / "audit"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(tmp_path)
    text = run_kodelet("codex", "status", cwd=project)
    no_traceback(text)
    assert "audit: DECISIONS NOT LOGGED: " in text.stdout and "symbolic link" in text.stdout
    data = json.loads(run_kodelet("codex", "status", "--json", cwd=project).stdout)
    assert "symbolic link" in data["audit"]["problem"]
