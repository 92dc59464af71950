"""The README's first guardrail, run as a new user would paste it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from kodelet.testing import write_hook

from tests.kit.cli import run_kodelet

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_guardrail_blocks_rm_rf_and_allows_the_rest(tmp_path: Path) -> None:
    text = README.read_text()
    block = re.search(r"```bash\n(mkdir -p \.kodelet/hooks\n.*?)```", text, re.S)
    assert block, "README lost its guardrail example"
    script = block.group(1).replace("kodelet ", f"{sys.executable} -m kodelet ")
    env = {**os.environ}
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout[: done.stdout.index("}") + 1]) == {
        "blocked": True,
        "reason": "no rm -rf here",
    }
    allowed = run_kodelet(
        *("hooks", "run", "before_tool_call", "--payload", "-", "--trace"),
        cwd=tmp_path,
        env=env,
        stdin='{"tool_name": "bash", "tool_input": {"command": "ls"}}',
    )
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout) == {"blocked": False}
    trace = [json.loads(line) for line in allowed.stderr.splitlines() if line.startswith("{")]
    assert [(t["name"], t["outcome"]) for t in trace] == [
        ("no-rm-rf", "no-action"),
        ("builtin:protect-kodelet", "no-action"),
    ]


def test_readme_first_guard_turns_the_recommended_rules_on(tmp_path: Path) -> None:
    """The README's first guard, pasted into a fresh repository: the rules come on, the
    forced push is refused by the rule the comment names, and explain names the rule
    that holds a delete in the home folder; nothing else has to be set up."""
    section = README.read_text().split("\n## Your first guard: the recommended rules\n", 1)
    assert len(section) == 2, "README lost its first-guard section"
    block = re.search(r"```bash\n(.*?)```", section[1], re.S)
    assert block, "README lost the commands of its first guard"
    script = block.group(1).replace("kodelet ", f"{sys.executable} -m kodelet ")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path,
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("recommended rules are now on for this project"), lines
    answer = json.loads(lines[1])
    assert answer["blocked"] is True
    assert answer["reason"].startswith("kodelet rule git-force-push (recommended): ")
    assert "decided: ask by change-outside-project" in done.stdout
    assert (tmp_path / ".kodelet" / "rules.toml").read_text().count("recommended") == 1


def test_readme_guard_that_fails_blocks_unless_it_opts_out(tmp_path: Path) -> None:
    """What the README says of a failing guard: blocked, with the hook, what failed and
    the fix; its config.toml snippet lets the calls through."""
    text = README.read_text()
    section = text.split("\n## A guardrail in two minutes\n", 1)[1].split("\n## ", 1)[0]
    toml = re.search(r"```toml\n(.*?)```", section, re.S)
    assert toml, "README lost its fail_closed = false example"
    name = re.search(r'\[hooks\."([^"]+)"\]', toml.group(1))
    assert name
    failing = '#!/bin/bash\ncase "$1" in hook) echo before_tool_call ;; *) exit 1 ;; esac\n'
    write_hook(tmp_path / ".kodelet" / "hooks", name.group(1), failing)

    def run() -> dict[str, object]:
        done = run_kodelet(
            *("hooks", "run", "before_tool_call", "-p", "-"),
            cwd=tmp_path,
            stdin='{"tool_name": "bash", "tool_input": {"command": "ls"}}',
        )
        assert done.returncode == 0, done.stderr
        answer: dict[str, object] = json.loads(done.stdout)
        return answer

    blocked = run()
    assert blocked["blocked"] is True
    reason = str(blocked["reason"])
    assert reason.startswith(f"hook {name.group(1)} failed (fail-closed): exited with status 1")
    assert "fix: " in reason
    (tmp_path / ".kodelet" / "config.toml").write_text(toml.group(1))
    assert run() == {"blocked": False}


def _block(heading: str) -> str:
    section = README.read_text().split(f"\n## {heading}\n", 1)[1]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found, f"README lost the commands under {heading!r}"
    return found.group(1)


def test_readme_install_lines_need_only_python3() -> None:
    """Each block's first line starts from a machine with python3 alone: it makes and
    activates a venv before any pip, and installs what the next lines run."""
    for heading, needs in [("Try it", "kodelet"), ("Develop", "nox")]:
        first, *rest = _block(heading).splitlines()
        assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install")
        assert rest[0].split()[0] == needs
    assert " nox" in _block("Develop").splitlines()[0]
    assert "nox -s tests " in _block("Develop")


def test_readme_try_it_runs_verbatim_with_only_python3(tmp_path: Path) -> None:
    """The two lines under "Try it", pasted into bash in a fresh copy of the project,
    with no kodelet, pip or venv on PATH: only a python3."""
    import shutil

    src = tmp_path / "kodelet"
    shutil.copytree(
        README.parent,
        src,
        ignore=shutil.ignore_patterns(
            ".git", ".nox", ".venv", "*.egg-info", "build", "__pycache__"
        ),
    )
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(bindir), "/usr/bin", "/bin"]),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        ["bash", "-e", "-c", _block("Try it")],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Replay of demo_session.json" in done.stdout
    assert (src / ".venv" / "bin" / "kodelet").exists()
