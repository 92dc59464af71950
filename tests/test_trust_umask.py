"""Trust under ``umask 002``: group write is accepted when the group is the owner's
private group (its primary group, no other listed member, no other account's primary
group) and refused otherwise; everything kodelet creates is private whatever the
umask; what is still refused blocks (fail-closed) and is listed with its fix.

Real files made under a real ``umask 002``; groups are ones this machine has."""

from __future__ import annotations

import collections
import grp
import json
import os
import pwd
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kodelet import load_runtime
from kodelet.adapters.discovery import UserDatabase
from kodelet.payloads import BeforeToolCallPayload
from kodelet.testing import discovered

GUARD = """#!/bin/sh
if [ "$1" = hook ]; then echo before_tool_call; exit 0; fi
if grep -q 'rm -rf'; then echo '{"blocked": true, "reason": "no rm -rf here"}'; fi
"""


@pytest.fixture
def umask_002() -> Iterator[None]:
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def me() -> pwd.struct_passwd:
    return pwd.getpwuid(os.geteuid())


def my_group_is_private() -> bool:
    """The precondition, read from the user database as a person would check it."""
    mine = me()
    group = grp.getgrgid(mine.pw_gid)
    others = [u for u in pwd.getpwall() if u.pw_gid == mine.pw_gid and u.pw_uid != mine.pw_uid]
    return set(group.gr_mem) <= {mine.pw_name} and not others


def written_by_hand(project: Path) -> Path:
    """A guard as a user writes it in a shell: ``mkdir -p``, an editor, ``chmod +x``."""
    hooks = project / ".kodelet" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    guard = hooks / "no-rm-rf"
    guard.write_text(GUARD)
    guard.chmod(guard.stat().st_mode | 0o111)
    return guard


def rm_rf() -> BeforeToolCallPayload:
    return BeforeToolCallPayload(tool_name="bash", tool_input={"command": "rm -rf victim"})


def test_umask_002_makes_group_writable_files(tmp_path: Path, umask_002: None) -> None:
    guard = written_by_hand(tmp_path / "p")
    assert stat.S_IMODE(guard.stat().st_mode) == 0o775
    assert stat.S_IMODE(guard.parent.stat().st_mode) == 0o775


def test_a_guard_in_the_owners_private_group_runs(tmp_path: Path, umask_002: None) -> None:
    if not my_group_is_private():
        pytest.skip("the current user's primary group has other members here")
    project = tmp_path / "p"
    written_by_hand(project)
    with load_runtime(cwd=project, entry_points=False) as rt:
        assert [(h.name, h.status) for h in discovered(rt)] == [("no-rm-rf", "active")]
        d = rt.dispatch(rm_rf())
    assert d.result.blocked is True and d.result.reason == "no rm -rf here"


def test_a_group_others_share_is_refused_and_blocks_with_its_fix(
    tmp_path: Path, umask_002: None
) -> None:
    mine = me()
    other = next(
        (u for u in pwd.getpwall() if u.pw_uid != mine.pw_uid and u.pw_gid != mine.pw_gid), None
    )
    if other is None:
        pytest.skip("no other account's group on this machine")
    project = tmp_path / "p"
    guard = written_by_hand(project)
    os.chown(guard, -1, other.pw_gid)  # group-writable by another account's group
    name = grp.getgrgid(other.pw_gid).gr_name
    why = f"{guard} is group-writable by group {name}, which is not its owner's private group"
    with load_runtime(cwd=project, entry_points=False) as rt:
        ((hook_name, status, reason),) = [(h.name, h.status, h.reason) for h in discovered(rt)]
        d = rt.dispatch(BeforeToolCallPayload(tool_name="bash", tool_input={"command": "ls"}))
    assert (hook_name, status, reason) == ("no-rm-rf", "skipped", f"untrusted: {why}")
    assert d.result.blocked is True
    assert f"fix: chmod go-w {guard}" in (d.result.reason or "")
    listed = subprocess.run(
        [sys.executable, "-m", "kodelet", "--cwd", str(project), "hooks", "list", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = [r for r in json.loads(listed.stdout) if r["status"] == "skipped"]
    assert [(r["name"], r["fix"]) for r in rows] == [("no-rm-rf", f"chmod go-w {guard}")]


def test_private_group_reads_the_user_database() -> None:
    private_group = UserDatabase().private_group
    mine = me()
    assert private_group(mine.pw_uid, mine.pw_gid) is my_group_is_private()
    # Not the owner's primary group: never private, whoever is in it.
    other = next((g for g in grp.getgrall() if g.gr_gid != mine.pw_gid), None)
    assert other is not None
    assert private_group(mine.pw_uid, other.gr_gid) is False
    # A primary group another account shares (nobody's, on most systems).
    counts = collections.Counter(u.pw_gid for u in pwd.getpwall())
    shared = next((u for u in pwd.getpwall() if counts[u.pw_gid] > 1), None)
    if shared is not None:
        assert private_group(shared.pw_uid, shared.pw_gid) is False
    # A group listing a member other than the owner, the owner's primary group or not.
    listed = next(
        (
            (u, g)
            for g in grp.getgrall()
            for u in pwd.getpwall()
            if u.pw_gid == g.gr_gid and any(m != u.pw_name for m in g.gr_mem)
        ),
        None,
    )
    if listed is not None:
        assert private_group(listed[0].pw_uid, listed[1].gr_gid) is False
    # Unknown ids are not private.
    assert private_group(mine.pw_uid, 2**31 - 7) is False
    assert private_group(2**31 - 7, mine.pw_gid) is False


def kodelet(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kodelet", "--cwd", str(cwd), *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.umask(0o002),
    )


def modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode)
        for p in [root, *sorted(root.rglob("*"))]
    }


def test_what_kodelet_creates_is_private_under_umask_002(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    made = kodelet(project, "hooks", "new", "guard", "--event", "before_tool_call")
    assert made.returncode == 0, made.stderr
    made = kodelet(project, "claude", "install")
    assert made.returncode == 0, made.stderr
    assert "writable" not in made.stderr
    for folder in (".kodelet", ".claude"):
        for name, mode in modes(project / folder).items():
            path = project / folder / name
            if path.is_dir() or os.access(path, os.X_OK):
                assert mode == 0o700, (path, oct(mode))
            else:
                assert mode == 0o600, (path, oct(mode))
    status = kodelet(project, "claude", "status", "--json")
    assert status.returncode == 0, status.stderr
    rows = json.loads(status.stdout)["hooks"]
    assert [(r["name"], r["status"]) for r in rows if r["name"] == "guard"] == [("guard", "active")]
