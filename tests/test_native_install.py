"""The installers and ``kodelet-hook``: the shared project file names it (found on each
teammate's PATH), this machine's files run the native client by path where this
installation has a working one, and a missing or broken one is never written: the
lean Python client is. Each test runs the CLI of a real venv whose ``bin`` holds the
``kodelet-hook`` under test, and the entries it writes as an agent runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.kit.claude import our_commands as commands
from tests.kit.claude import pre_tool
from tests.kit.cli import run_kodelet
from tests.kit.native import build

ROOT = Path(__file__).resolve().parents[1]
GUARD = """#!/bin/sh
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'rm -rf'; then echo '{"blocked": true, "reason": "no rm"}'; fi ;;
esac
"""


def venv(where: Path) -> Path:
    """A venv that runs this checkout's kodelet, with no ``kodelet-hook`` of its own."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    paths = {sysconfig.get_paths()["purelib"], str(ROOT / "core")}
    Path(site, "kodelet-test.pth").write_text("\n".join(sorted(paths)) + "\n")
    return python


def compiled(target: Path, source: str) -> Path:
    """A real program at ``target`` (a compiled one, as the native client is)."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    c = target.with_suffix(".c")
    c.write_text(source)
    subprocess.run([cc, "-o", str(target), str(c)], check=True)
    return target


@pytest.fixture
def guarded(project: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    guard = project / ".kodelet" / "hooks" / "guard"
    guard.write_text(GUARD)
    guard.chmod(0o755)
    return project


def call(command: str, project: Path, path: str) -> subprocess.CompletedProcess[str]:
    """An entry's command as the agent runs it (``sh -c``), on a Bash ``rm -rf``."""
    env = {**os.environ, "PATH": path}
    env.pop("KODELET_DAEMON", None)
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(pre_tool(project)),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
    )


def test_a_working_native_client_runs_in_every_scope(guarded: Path, tmp_path: Path) -> None:
    python = venv(tmp_path / "venv")
    native = build(tmp_path / "venv" / "bin" / "kodelet-hook", python=str(python))
    for scope in ("project", "user"):
        done = run_kodelet("claude", "install", "--scope", scope, cwd=guarded, python=str(python))
        assert done.returncode == 0, done.stderr
    project_file = json.loads((guarded / ".claude" / "settings.json").read_text())
    user_file = json.loads((Path.home() / ".claude" / "settings.json").read_text())
    [shared] = commands(project_file)["PreToolUse"]
    [mine] = commands(user_file)["PreToolUse"]
    assert shared.endswith("; kodelet-hook claude hook")  # no path of this machine
    assert mine.endswith(f"; {native} claude hook --scope user")
    on_path = f"{native.parent}:/usr/bin:/bin"
    for command in (shared, mine):
        answer = json.loads(call(command, guarded, on_path).stdout)
        assert answer["hookSpecificOutput"]["permissionDecisionReason"] == "no rm"
    status = run_kodelet("claude", "status", cwd=guarded, python=str(python))
    assert f"hook client: native ({native})" in status.stdout
    daemon = run_kodelet("daemon", "status", cwd=guarded, python=str(python))
    assert f"hook client: native ({native})" in daemon.stdout


@pytest.mark.parametrize("how", ["not executable", "exits 1", "prints garbage", "elsewhere"])
def test_a_broken_native_client_is_never_written(guarded: Path, tmp_path: Path, how: str) -> None:
    python = venv(tmp_path / "venv")
    target = tmp_path / "venv" / "bin" / "kodelet-hook"
    if how == "not executable":
        build(target, python=str(python)).chmod(0o644)
    elif how == "exits 1":
        compiled(target, "int main(void) { return 1; }\n")
    elif how == "prints garbage":
        compiled(target, '#include <stdio.h>\nint main(void) { puts("native"); return 0; }\n')
    else:  # a native client of another kodelet
        build(target, package=str(tmp_path / "other" / "kodelet"), python=str(python))
    done = run_kodelet("codex", "install", "--scope", "user", cwd=guarded, python=str(python))
    assert done.returncode == 0, done.stderr
    data = json.loads((Path.home() / ".codex" / "hooks.json").read_text())
    [command] = commands(data)["PreToolUse"]
    assert command.startswith(f"{python} -I -S ") and "/kodelet/warm/hook.py " in command
    shared = run_kodelet("codex", "install", cwd=guarded, python=str(python))
    assert shared.returncode == 0, shared.stderr
    data = json.loads((guarded / ".codex" / "hooks.json").read_text())
    assert commands(data)["PreToolUse"] == ["kodelet claude hook --agent codex"]
    status = run_kodelet("codex", "status", cwd=guarded, python=str(python))
    assert f"hook client: broken ({target})" in status.stdout


def test_without_a_native_client_the_python_one_runs(guarded: Path, tmp_path: Path) -> None:
    python = venv(tmp_path / "venv")
    done = run_kodelet("gemini", "install", "--scope", "user", cwd=guarded, python=str(python))
    assert done.returncode == 0, done.stderr
    data = json.loads((Path.home() / ".gemini" / "settings.json").read_text())
    [command] = commands(data)["BeforeTool"]
    assert command.startswith(f"{python} -I -S ")
    status = run_kodelet("gemini", "status", cwd=guarded, python=str(python))
    assert "hook client: missing: no kodelet-hook next to" in status.stdout


def test_entries_of_the_old_command_are_kodelets_and_install_upgrades_them(
    guarded: Path,
) -> None:
    done = run_kodelet("qwen", "install", cwd=guarded)
    assert done.returncode == 0, done.stderr
    path = guarded / ".qwen" / "settings.json"
    path.write_text(path.read_text().replace("kodelet-hook claude hook", "kodelet claude hook"))
    old = commands(json.loads(path.read_text()))
    assert old and all(c == ["kodelet claude hook --agent qwen"] for c in old.values())
    status = run_kodelet("qwen", "status", cwd=guarded)
    assert "kodelet claude hook --agent qwen" in status.stdout
    done = run_kodelet("qwen", "install", cwd=guarded)
    assert done.returncode == 0, done.stderr
    new = commands(json.loads(path.read_text()))
    assert new.keys() == old.keys()
    assert all(c == ["kodelet-hook claude hook --agent qwen"] for c in new.values())
    done = run_kodelet("qwen", "uninstall", cwd=guarded)
    assert done.returncode == 0, done.stderr
    assert not commands(json.loads(path.read_text())) if path.exists() else True
