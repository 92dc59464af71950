"""``--scope local`` writes this machine's paths (and, with HTTP, a secret) into
``.claude/settings.local.json``: install makes sure git ignores it, so no teammate
ever gets it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.kit.cli import run_kodelet
from tests.kit.repos import GIT_ENV

LOCAL = ".claude/settings.local.json"


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        timeout=60,
    )


def repository(project: Path) -> Path:
    assert git(project, "init", "-q").returncode == 0
    return project


def install(project: Path) -> subprocess.CompletedProcess[str]:
    done = run_kodelet("claude", "install", "--scope", "local", cwd=project)
    assert done.returncode == 0, done.stderr
    return done


def untracked(project: Path) -> str:
    return git(project, "status", "--porcelain", "--untracked-files=all").stdout


def test_the_local_file_is_ignored_by_git_and_install_says_so(project: Path) -> None:
    repository(project)
    done = install(project)
    assert "git now ignores .claude/settings.local.json" in done.stdout
    assert (project / LOCAL).exists()
    assert LOCAL not in untracked(project)
    assert git(project, "check-ignore", "-q", LOCAL).returncode == 0
    again = install(project)
    assert "git now ignores" not in again.stdout
    exclude = (project / ".git" / "info" / "exclude").read_text()
    assert exclude.count(f"/{LOCAL}") == 1


def test_a_file_already_ignored_is_left_to_the_projects_own_rule(project: Path) -> None:
    repository(project)
    (project / ".gitignore").write_text("settings.local.json\n")
    exclude = project / ".git" / "info" / "exclude"
    before = exclude.read_text()
    done = install(project)
    assert "git now ignores" not in done.stdout
    assert exclude.read_text() == before
    assert LOCAL not in untracked(project)


def test_a_tracked_local_file_is_named_with_the_fix(project: Path) -> None:
    repository(project)
    (project / ".claude").mkdir()
    (project / LOCAL).write_text("{}\n")
    assert git(project, "add", LOCAL).returncode == 0
    assert git(project, "commit", "-qm", "settings").returncode == 0
    done = install(project)
    assert f"`git rm --cached {LOCAL}`" in done.stdout


def test_outside_a_repository_install_says_nothing_of_git(project: Path) -> None:
    done = install(project)
    assert "git" not in done.stdout
    assert (project / LOCAL).exists()
