"""Attacks on ``plugins add`` (issue 17, items 15, 16, 24, 25): a symlink fan-out that
fills the disk, a re-install with a window where no plugin exists, killed installs
leaving debris, private modes widened, and a git remote that never answers."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from kodelet import repos
from kodelet.testing import write_hook

from tests.kit.processes import alive, kill_sessions, wait_for
from tests.kit.repos import GIT_ENV, leftovers, make_git_repo, make_plugin_tree


def add(src_dir: Path, plugins: Path, **kw: object) -> repos.InstalledRepo:
    return repos.add(repos.parse_source(str(src_dir)), plugins, location="local", **kw)  # type: ignore[arg-type]


def fan_out(base: Path, levels: int, width: int = 4, size: int = 10_000) -> None:
    """``base/d0`` holds ``width`` links to ``d1``, which holds ``width`` links to ``d2``...:
    copied as files, that is width**levels copies of the last directory."""
    for i in range(levels + 1):
        (base / f"d{i}").mkdir(parents=True)
    (base / f"d{levels}" / "payload").write_bytes(b"x" * size)
    for i in range(levels):
        for j in range(width):
            (base / f"d{i}" / f"l{j}").symlink_to(f"../d{i + 1}")


def tree_size(root: Path) -> tuple[int, int]:
    count = size = 0
    for dirpath, dirnames, filenames in os.walk(root):
        count += len(dirnames) + len(filenames)
        size += sum(os.lstat(os.path.join(dirpath, f)).st_size for f in filenames)
    return count, size


# -- item 15: bounded installs; in-tree links stay links --------------------------------


def test_a_symlink_fan_out_inside_the_plugin_is_installed_as_links(tmp_path: Path) -> None:
    """The attack: 74 KB of repository became 160 MB at depth 12 (every link copied)."""
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    fan_out(src_dir / "skills" / "fan", 12)
    started = time.monotonic()
    got = add(src_dir, tmp_path / "plugins")
    assert time.monotonic() - started < 10
    count, size = tree_size(got.path)
    assert count < 100 and size < 100_000
    link = got.path / "skills" / "fan" / "d0" / "l0"
    assert link.is_symlink() and os.readlink(link) == "../d1"
    assert (link / "l3" / "l2" / "l1").resolve() == (got.path / "skills" / "fan" / "d4")
    assert (got.path / "skills/fan/d11/l0/payload").read_bytes() == b"x" * 10_000


def test_a_fan_out_outside_the_plugin_dirs_hits_the_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Links into the rest of the repository are copied as what they point to; the
    install caps stop a fan-out there before it fills the disk (a lower cap here,
    only to keep the test quick)."""
    monkeypatch.setattr(repos, "INSTALL_MAX_ENTRIES", 2000)
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    fan_out(src_dir / "scripts", 12, size=10)
    (src_dir / "skills" / "fan").symlink_to("../scripts/d0")
    plugins = tmp_path / "plugins"
    started = time.monotonic()
    with pytest.raises(repos.RepoError, match=r"more than 2000 files and directories"):
        add(src_dir, plugins)
    assert time.monotonic() - started < 60
    assert leftovers(plugins) == []


def test_file_count_and_size_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    many = src_dir / "skills" / "many"
    many.mkdir()
    for i in range(60):
        (many / f"f{i}").write_text("x")
    plugins = tmp_path / "plugins"
    monkeypatch.setattr(repos, "INSTALL_MAX_ENTRIES", 50)
    with pytest.raises(repos.RepoError, match="more than 50 files and directories"):
        add(src_dir, plugins)
    monkeypatch.undo()
    with (src_dir / "skills" / "big").open("wb") as fh:
        fh.truncate(repos.INSTALL_MAX_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(repos.RepoError, match=rf"more than {repos.INSTALL_MAX_BYTES} bytes"):
        add(src_dir, plugins)
    assert leftovers(plugins) == []


# -- item 24: modes are kept (minus group/world write) ---------------------------------


def test_private_modes_are_kept_and_writable_bits_dropped(tmp_path: Path) -> None:
    """The attack: 0600 files and 0700 directories were installed as 0644 and 0755."""
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    secret = src_dir / "skills" / "private"
    secret.mkdir(mode=0o700)
    secret.chmod(0o700)
    (secret / "key").write_text("k")
    (secret / "key").chmod(0o600)
    (src_dir / "hooks" / "guard").chmod(0o4777)
    (src_dir / "skills" / "pdf").chmod(0o775)
    got = add(src_dir, tmp_path / "plugins")

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.lstat().st_mode)

    assert mode(got.path / "skills" / "private") == 0o700
    assert mode(got.path / "skills" / "private" / "key") == 0o600
    assert mode(got.path / "hooks" / "guard") == 0o755
    assert mode(got.path / "skills" / "pdf") == 0o755
    assert mode(got.path / "recipes" / "review.md") == 0o644


# -- item 16: --force is atomic; killed installs are cleaned up -------------------------


def test_force_reinstall_never_shows_a_missing_plugin(tmp_path: Path) -> None:
    """The attack: between the two renames of --force no plugin existed (seen 217 times
    in 150 re-installs): a host starting then lost a fail-closed guard."""
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    plugins = tmp_path / "plugins"
    add(src_dir, plugins)
    guard = plugins / "acme@tools" / "hooks" / "guard"
    misses = 0
    looks = 0
    stop = threading.Event()

    def watch() -> None:
        nonlocal misses, looks
        while not stop.is_set():
            looks += 1
            if not os.path.exists(guard):
                misses += 1

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _ in range(60):
            add(src_dir, plugins, force=True)
    finally:
        stop.set()
        watcher.join()
    assert looks > 1000 and misses == 0
    assert leftovers(plugins) == ["acme@tools"]


def test_debris_of_killed_installs_is_removed_by_the_next_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for kind in ("tmp", "old", "clone", "del"):
        debris = plugins / f".acme@tools.{kind}-dead"
        (debris / "hooks").mkdir(parents=True)
    (plugins / ".other@repo.tmp-alive").mkdir()  # another plugin's: not ours to touch
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    stale = tmp_path / "tmp" / "kodelet-plugin-stale"
    fresh = tmp_path / "tmp" / "kodelet-plugin-fresh"
    stale.mkdir()
    fresh.mkdir()
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    add(src_dir, plugins)
    assert leftovers(plugins) == [".other@repo.tmp-alive", "acme@tools"]
    assert not stale.exists() and fresh.exists()


# -- item 25: a git remote that never answers ------------------------------------------

HANGING_SSH = """#!/bin/sh
sleep 600 &
echo "$$ $!" >> "{pids}"
wait
"""


def hanging_remote(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A remote that never answers, on loopback only: git runs this as its ssh, and it
    sleeps (with a child of its own) instead of speaking the protocol. Each run appends
    one line of pids; git may run it more than once for one clone (``ssh -G`` first, to
    learn which ssh it is)."""
    pids = tmp_path / "ssh-pids"
    ssh = write_hook(tmp_path / "bin", "fake-ssh", HANGING_SSH.format(pids=pids))
    env = {**os.environ, **GIT_ENV, "GIT_SSH_COMMAND": str(ssh), repos.GIT_TIMEOUT_ENV: "2"}
    return env, pids


def test_a_remote_that_never_answers_times_out_and_leaves_nothing(tmp_path: Path) -> None:
    """The attack: `plugins add` from a silent remote hung for ever and left a lock
    and a temp directory behind."""
    env, pids = hanging_remote(tmp_path)
    plugins = tmp_path / "plugins"
    src = repos.parse_source("ssh://git@127.0.0.1/acme/tools.git", env=env)
    started = time.monotonic()
    with pytest.raises(repos.RepoError, match=r"git clone gave no result in 2s"):
        repos.add(src, plugins, location="local", env=env)
    assert time.monotonic() - started < 10
    assert leftovers(plugins) == []
    hung = [int(p) for p in pids.read_text().split()]
    assert hung and not any(alive(p) for p in hung)


def test_a_killed_clone_is_cleaned_up_by_the_next_add(tmp_path: Path) -> None:
    """SIGKILL in the middle of a clone: the lock file and the clone directory stay
    behind; the next add of that plugin removes them."""
    env, pids = hanging_remote(tmp_path)
    env[repos.GIT_TIMEOUT_ENV] = "60"
    plugins = tmp_path / "plugins"
    code = (
        "import sys; from kodelet import repos; from pathlib import Path\n"
        "src = repos.parse_source('ssh://git@127.0.0.1/acme/tools.git')\n"
        "repos.add(src, Path(sys.argv[1]), location='local')\n"
    )

    def cloning() -> bool:
        return pids.exists() and len(pids.read_text().split()) >= 2

    proc = subprocess.Popen([sys.executable, "-c", code, str(plugins)], env=env)
    try:
        assert wait_for(lambda: cloning() or proc.poll() is not None) and cloning()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
        proc.wait()
        # git runs in a session of its own, which outlives the killed add: kill all of
        # it (git, every ssh it started, their children) before looking at the debris.
        assert kill_sessions(int(p) for p in (pids.read_text() if pids.exists() else "").split())
    debris = leftovers(plugins)
    assert any(".clone-" in name for name in debris) and ".acme@tools.lock" in debris
    repo = make_git_repo(tmp_path / "src" / "acme" / "tools")
    repos.add(
        repos.parse_source(str(repo)), plugins, location="local", env={**os.environ, **GIT_ENV}
    )
    assert leftovers(plugins) == ["acme@tools"]


def test_a_bad_git_timeout_is_one_line(tmp_path: Path) -> None:
    src = repos.parse_source("ssh://git@127.0.0.1/acme/tools.git")
    with pytest.raises(repos.RepoError, match="KODELET_GIT_TIMEOUT: expected seconds"):
        repos.add(src, tmp_path / "p", location="local", env={repos.GIT_TIMEOUT_ENV: "soon"})
