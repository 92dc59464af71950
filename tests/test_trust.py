"""Executable trust: a hook someone else could have written is never run, not even
asked its event, and shows as skipped with the reason.

Tests run as root, so "another user" is a made-up uid given with ``os.chown``."""

from __future__ import annotations

import grp
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest
from kodelet import load_runtime
from kodelet.events import Event
from kodelet.payloads import UserMessageSendPayload
from kodelet.runtime import Runtime
from kodelet.testing import discovered, write_hook

OTHER_UID = 12345


def shared_gid() -> int:
    """An existing group that is not the current user's private group: another
    account's primary group (group write by it lets that account write)."""
    mine = pwd.getpwuid(os.geteuid())
    for user in pwd.getpwall():
        if user.pw_uid != mine.pw_uid and user.pw_gid != mine.pw_gid:
            return user.pw_gid
    pytest.skip("no other account's group on this machine")


def group_writable(path: Path) -> str:
    """Make ``path`` group-writable by a group others are in; the reason that gives."""
    gid = shared_gid()
    os.chown(path, -1, gid)
    name = grp.getgrgid(gid).gr_name
    return f"{path} is group-writable by group {name}, which is not its owner's private group"


def script(marker: Path) -> str:
    """Leaves a trace on any invocation at all, ``hook`` query included."""
    return (
        "#!/bin/sh\n"
        f"echo \"$1\" >> '{marker}'\n"
        'if [ "$1" = hook ]; then echo user_message_send; exit 0; fi\n'
        "echo '{}'\n"
    )


def statuses(rt: Runtime) -> dict[str, tuple[str, str]]:
    return {h.name: (h.status, h.reason) for h in discovered(rt)}


def run_once(project: Path) -> dict[str, tuple[str, str]]:
    with load_runtime(cwd=project, entry_points=False) as rt:
        rt.dispatch(UserMessageSendPayload(message="hi"))
        return statuses(rt)


@pytest.fixture
def hooks(project: Path) -> Path:
    return project / ".kodelet" / "hooks"


def test_safe_hook_runs(project: Path, hooks: Path) -> None:
    marker = project / "ran"
    write_hook(hooks, "ok", script(marker))
    assert run_once(project) == {"ok": ("active", "")}
    assert marker.read_text().split() == ["hook", "run"]


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777, 0o722])
def test_writable_hook_file_is_not_run(project: Path, hooks: Path, mode: int) -> None:
    marker = project / "ran"
    path = write_hook(hooks, "guard", script(marker))
    path.chmod(mode)
    why = f"{path} is group- or world-writable"
    if not mode & 0o002:  # group write only: refused when the group is not private
        why = group_writable(path)
    status, reason = run_once(project)["guard"]
    assert status == "skipped"
    assert reason == f"untrusted: {why}"
    assert not marker.exists()


@pytest.mark.parametrize("level", ["hooks", ".kodelet"])
def test_writable_directory_up_to_the_root_is_not_trusted(
    project: Path, hooks: Path, level: str
) -> None:
    marker = project / "ran"
    write_hook(hooks, "guard", script(marker))
    directory = hooks if level == "hooks" else project / ".kodelet"
    directory.chmod(0o777)
    status, reason = run_once(project)["guard"]
    assert (status, reason) == ("skipped", f"untrusted: {directory} is group- or world-writable")
    assert not marker.exists()


def test_directories_above_the_root_do_not_matter(project: Path, hooks: Path) -> None:
    marker = project / "ran"
    write_hook(hooks, "guard", script(marker))
    project.chmod(0o777)
    assert run_once(project)["guard"] == ("active", "")
    assert marker.exists()


@pytest.mark.parametrize("what", ["file", "hooks", ".kodelet"])
def test_owned_by_another_user_is_not_run(project: Path, hooks: Path, what: str) -> None:
    marker = project / "ran"
    path = write_hook(hooks, "guard", script(marker))
    target = {"file": path, "hooks": hooks, ".kodelet": project / ".kodelet"}[what]
    os.chown(target, OTHER_UID, -1)
    status, reason = run_once(project)["guard"]
    assert status == "skipped"
    assert reason == (
        f"untrusted: {target} is owned by uid {OTHER_UID}, not the current user or root"
    )
    assert not marker.exists()


def test_root_owned_hook_is_trusted(project: Path, hooks: Path) -> None:
    marker = project / "ran"
    path = write_hook(hooks, "guard", script(marker))
    os.chown(path, 0, 0)
    assert run_once(project)["guard"] == ("active", "")


def test_global_root_is_checked_too(project: Path, kodelet_home: Path) -> None:
    marker = project / "ran"
    write_hook(kodelet_home / "hooks", "global-guard", script(marker))
    kodelet_home.chmod(0o770)
    why = group_writable(kodelet_home)
    status, reason = run_once(project)["global-guard"]
    assert (status, reason) == ("skipped", f"untrusted: {why}")
    kodelet_home.chmod(0o755)
    assert run_once(project)["global-guard"] == ("active", "")


def test_plugin_repository_hooks_are_checked_up_to_the_root(project: Path, hooks: Path) -> None:
    marker = project / "ran"
    repo = project / ".kodelet" / "plugins" / "acme@guards"
    write_hook(repo / "hooks", "check", script(marker))
    assert run_once(project)["acme/guards/check"] == ("active", "")
    repo.chmod(0o777)
    status, reason = run_once(project)["acme/guards/check"]
    assert (status, reason) == ("skipped", f"untrusted: {repo} is group- or world-writable")


def test_untrusted_hook_does_not_stop_the_others(project: Path, hooks: Path) -> None:
    bad, good = project / "bad-ran", project / "good-ran"
    write_hook(hooks, "a-bad", script(bad)).chmod(0o777)
    write_hook(hooks, "b-good", script(good))
    # Failing open, so a-bad blocks nothing in its place (the default: see test_fail_closed).
    (project / ".kodelet" / "config.toml").write_text('[hooks."a-bad"]\nfail_closed = false\n')
    with load_runtime(cwd=project, entry_points=False) as rt:
        assert [e.name for e in rt.hooks(Event.USER_MESSAGE_SEND)] == ["b-good"]
        rt.dispatch(UserMessageSendPayload(message="hi"))
    assert good.exists() and not bad.exists()


# -- symlinks are judged by what they point at ---------------------------------


def test_symlink_into_a_writable_directory_is_not_trusted(
    project: Path, hooks: Path, tmp_path: Path
) -> None:
    marker = project / "ran"
    shared = tmp_path / "shared"
    real = write_hook(shared, "guard", script(marker))
    shared.chmod(0o777)
    (hooks / "guard").symlink_to(real)
    status, reason = run_once(project)["guard"]
    assert (status, reason) == ("skipped", f"untrusted: {shared} is group- or world-writable")
    assert not marker.exists()


def test_symlink_to_a_file_owned_by_another_user_is_not_trusted(
    project: Path, hooks: Path, tmp_path: Path
) -> None:
    real = write_hook(tmp_path / "elsewhere", "guard", script(project / "ran"))
    os.chown(real, OTHER_UID, -1)
    (hooks / "guard").symlink_to(real)
    assert run_once(project)["guard"][0] == "skipped"


def test_symlink_to_a_safe_file_and_through_a_sticky_directory_runs(
    project: Path, hooks: Path, tmp_path: Path
) -> None:
    marker = project / "ran"
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    mine = sticky / "mine"
    mine.mkdir()
    real = write_hook(mine, "guard", script(marker))
    (hooks / "guard").symlink_to(real)
    assert run_once(project)["guard"] == ("active", "")
    assert marker.exists()


def test_symlink_inside_the_root_is_checked_up_to_the_root(project: Path, hooks: Path) -> None:
    marker = project / "ran"
    lib = project / ".kodelet" / "lib"
    real = write_hook(lib, "guard", script(marker))
    (hooks / "guard").symlink_to(real)
    project.chmod(0o777)
    assert run_once(project)["guard"] == ("active", "")
    lib.chmod(0o775)
    why = group_writable(lib)
    assert run_once(project)["guard"] == ("skipped", f"untrusted: {why}")


# -- the CLI shows why -----------------------------------------------------------


def test_hooks_list_shows_untrusted_hooks_as_skipped(project: Path, hooks: Path) -> None:
    path = write_hook(hooks, "guard", script(project / "ran"))
    path.chmod(0o777)
    res = subprocess.run(
        [sys.executable, "-m", "kodelet", "--cwd", str(project), "hooks", "list", "--json"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    if "No such command" in res.stderr:
        pytest.skip("`kodelet hooks list` is not there yet")
    assert res.returncode == 0, res.stderr
    rows = [r for r in json.loads(res.stdout) if r["name"] == "guard"]
    why = f"untrusted: {path} is group- or world-writable"
    stand_in = f"cannot run ({why}); fail_closed: blocks in its place"
    assert [(r["event"], r["status"], r["reason"], r["fix"]) for r in rows] == [
        ("before_tool_call", "active", stand_in, None),
        ("user_message_send", "active", stand_in, None),
        (None, "skipped", why, f"chmod go-w {path}"),
    ]
    assert not (project / "ran").exists()
