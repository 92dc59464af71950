"""What a newcomer and their team still trip on, driven through the CLI in real
subprocesses: hooks shared in ``.kodelet/hooks`` that must run on a teammate's machine,
answers that only add context, misspelt plugin functions, fields an event does not
have, reports cut to 80 columns, and the help and docs a user reads first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kodelet.testing import write_hook

from tests.test_repos import run_kodelet

LS = '{"tool_name": "bash", "tool_input": {"command": "ls"}}'


def kodelet(project: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_kodelet("--cwd", str(project), *args, **kw)  # type: ignore[arg-type]


def _rows(project: Path, **kw: object) -> dict[str, dict[str, object]]:
    res = kodelet(project, "hooks", "list", "--json", **kw)
    assert res.returncode == 0, res.stderr
    return {r["name"]: r for r in json.loads(res.stdout)}


def _teammate_path(tmp_path: Path) -> str:
    """A PATH like a teammate's: a python3 that is not the one running kodelet (this
    venv's base interpreter, where kodelet is not installed), then the system's."""
    bindir = tmp_path / "teammate-bin"
    bindir.mkdir()
    base = getattr(sys, "_base_executable", sys.executable)
    (bindir / "python3").symlink_to(base)
    return os.pathsep.join([str(bindir), "/usr/bin", "/bin"])


# -- a hook scaffolded into .kodelet/hooks runs on a teammate's checkout ------------


@pytest.mark.parametrize(("lang", "shebang"), [("python", "python3"), ("bash", "bash")])
def test_hooks_new_writes_an_env_shebang_that_runs_on_another_machine(
    project: Path, tmp_path: Path, lang: str, shebang: str
) -> None:
    res = kodelet(project, "hooks", "new", "guard", "-e", "before_tool_call", "--lang", lang)
    assert res.returncode == 0, res.stderr
    text = (project / ".kodelet" / "hooks" / "guard").read_text()
    assert text.splitlines()[0] == f"#!/usr/bin/env {shebang}"
    assert sys.executable not in text and sys.prefix not in text

    teammate = {"PATH": _teammate_path(tmp_path)}
    row = _rows(project, env=teammate)["guard"]
    assert (row["status"], row["event"]) == ("active", "before_tool_call"), row
    ran = kodelet(
        project,
        "hooks",
        "run",
        "before_tool_call",
        "-p",
        "-",
        "--trace",
        env=teammate,
        stdin=LS,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"blocked": False}
    [trace] = [json.loads(ln) for ln in ran.stderr.splitlines()]
    assert (trace["name"], trace["outcome"]) == ("guard", "no-action")


def test_hooks_list_names_an_interpreter_that_cannot_be_found(project: Path) -> None:
    hooks = project / ".kodelet" / "hooks"
    write_hook(hooks, "venv-guard", "#!/home/someone-else/venv/bin/python\nprint('x')\n")
    write_hook(hooks, "env-guard", "#!/usr/bin/env no-such-python-here\nprint('x')\n")
    rows = _rows(project)
    assert rows["venv-guard"]["status"] == "skipped"
    assert rows["venv-guard"]["reason"] == (
        "interpreter /home/someone-else/venv/bin/python (its #! line) not found"
    )
    assert rows["env-guard"]["reason"] == (
        "interpreter 'no-such-python-here' (its #!/usr/bin/env no-such-python-here line) "
        "not found on PATH"
    )
    # Without running anything, the same is said.
    looked = kodelet(project, "hooks", "list", "--no-exec", "--json")
    reasons = {r["name"]: r["reason"] for r in json.loads(looked.stdout)}
    assert reasons["venv-guard"].endswith(
        "; interpreter /home/someone-else/venv/bin/python (its #! line) not found"
    )
    # And a command that runs hooks warns with it.
    ran = kodelet(project, "hooks", "run", "before_tool_call", "-p", "-", stdin=LS)
    assert (
        "kodelet: warning: hook venv-guard skipped: interpreter /home/someone-else/venv/bin/python"
        in ran.stderr
    )


# -- a hook that only adds context has its own outcome word -------------------------

REMINDER = """#!/bin/sh
case "$1" in hook) echo after_tool_call; exit 0;; esac
cat >/dev/null
echo '{"additional_context": ["run the formatter before committing"]}'
"""


def test_a_hook_that_only_adds_context_is_a_context_outcome_everywhere(project: Path) -> None:
    write_hook(project / ".kodelet" / "hooks", "fmt-reminder", REMINDER)
    payload = '{"tool_name": "bash", "tool_output": {"toolName": "bash", "success": true}}'
    ran = kodelet(project, "hooks", "run", "after_tool_call", "-p", "-", "--trace", stdin=payload)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"additional_context": ["run the formatter before committing"]}
    [trace] = [json.loads(ln) for ln in ran.stderr.splitlines()]
    assert (trace["outcome"], trace["detail"]) == ("context", "run the formatter before committing")

    report = kodelet(project, "replay", "--my-hooks", "--only-acted", "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    mine = [h for s in data["timeline"] for h in s["hooks"] if h["name"] == "fmt-reminder"]
    assert mine and {h["outcome"] for h in mine} == {"context"}
    assert data["summary"]["outcomes"]["context"] == len(mine)
    assert data["summary"]["outcomes"]["no-action"] > 0  # the other hooks, left out above

    table = kodelet(project, "replay", "--my-hooks", "--only-acted")
    rows = [ln.split() for ln in table.stdout.splitlines() if " fmt-reminder " in ln]
    assert len(rows) == len(mine) and all(r[3] == "context" for r in rows), rows[:3]
