"""Settings files edited while kodelet edits them: nothing anyone wrote is lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kodelet import jsonio


def test_a_file_changed_since_it_was_read_is_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"a": 1}\n')
    old = path.read_text()
    path.write_text('{"a": 1, "theirs": 2}\n')  # someone else's edit
    with pytest.raises(jsonio.ChangedError, match="changed while kodelet was editing it"):
        jsonio.write_atomically(path, '{"ours": 3}\n', expect=old)
    assert json.loads(path.read_text()) == {"a": 1, "theirs": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]  # no temporary left
    with pytest.raises(jsonio.ChangedError):
        jsonio.remove_unchanged(path, old)
    assert path.exists()
    with pytest.raises(jsonio.ChangedError):
        jsonio.write_atomically(tmp_path / "absent.json", "{}", expect="{}")
    jsonio.write_atomically(path, '{"ours": 3}\n', expect=path.read_text())
    assert json.loads(path.read_text()) == {"ours": 3}


def test_installs_racing_another_locking_editor_lose_nothing(project: Path) -> None:
    """Another kodelet command (here: an editor holding the same lock) adds a key every
    few milliseconds while install and uninstall run: every key it added is still there."""
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{"k0": 0}\n')
    stop = threading.Event()
    added: list[int] = []

    def editor() -> None:
        i = 1
        while not stop.is_set():
            with jsonio.editing(settings.parent):
                data = json.loads(settings.read_text())
                data[f"k{i}"] = i
                jsonio.write_atomically(settings, json.dumps(data) + "\n")
            added.append(i)
            i += 1
            time.sleep(0.003)

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        for n in range(10):
            verb = "install" if n % 2 == 0 else "uninstall"
            done = subprocess.run(
                [sys.executable, "-m", "kodelet", "claude", verb, "--scope", "local"],
                cwd=project,
                capture_output=True,
                text=True,
                env={**os.environ, "KODELET_DAEMON": "0"},
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
    finally:
        stop.set()
        thread.join()
    data = json.loads(settings.read_text())
    missing = [i for i in added if f"k{i}" not in data]
    assert added and missing == []


@pytest.mark.skipif(os.getuid() != 0, reason="a file of another user needs root to make")
@pytest.mark.parametrize("verb", ["install", "uninstall"])
def test_another_users_settings_file_is_left_as_it_is(project: Path, verb: str) -> None:
    """Run as root, install must not rewrite (and so re-own) a settings file someone
    else owns: the file keeps its owner, mode and bytes."""
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{"theirs": true}\n')
    os.chown(settings, 4242, 4242)
    before = settings.stat()
    done = subprocess.run(
        [sys.executable, "-m", "kodelet", "claude", verb, "--scope", "local"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "owned by uid 4242, not by you; left unchanged" in done.stderr
    after = settings.stat()
    assert (after.st_uid, after.st_mode, after.st_ino) == (4242, before.st_mode, before.st_ino)
    assert settings.read_text() == '{"theirs": true}\n'
