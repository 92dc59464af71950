"""A wheel's ``kodelet-hook`` has no path compiled in: it finds its kodelet package and
the interpreter of its Python client from its own real location, in the layouts pip,
``pip install --user``, pipx and ``uv tool`` leave (pipx and uv put a symlink on PATH
into their venv's bin). Where it finds neither it blocks the call, never lets it
through. Each test lays a real install tree out (a real venv, the package linked into
its site-packages), compiles the client from the repository's source without paths, as
scripts/build_wheels.py does, and runs it as an agent does: by name, through PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.kit.claude import pre_tool, reason
from tests.kit.cli import run_kodelet
from tests.kit.native import PACKAGE, build
from tests.kit.warm import wait_for, warm, warm_env, write_guard

VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"


def site_packages(prefix: Path) -> Path:
    return prefix / "lib" / VERSION / "site-packages"


def venv(prefix: Path) -> Path:
    """A real venv whose site-packages holds kodelet (a link to this checkout's package)
    and sees this interpreter's dependencies of kodelet; its ``python``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    site = site_packages(prefix)
    assert site.is_dir(), f"not the layout this test knows: {sorted(prefix.rglob('site-*'))}"
    (site / "kodelet").symlink_to(PACKAGE)
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return prefix / "bin" / "python"


def wheel_program(bindir: Path) -> Path:
    """The native client as a wheel carries it: no package, no interpreter compiled in."""
    bindir.mkdir(parents=True, exist_ok=True)
    return build(bindir / "kodelet-hook", package="", python="")


def on_path(program: Path, where: Path) -> dict[str, str]:
    """An environment whose PATH finds ``program`` through a symlink in ``where``, as
    pipx and ``uv tool`` link it, and no other kodelet."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "kodelet-hook").symlink_to(program)
    return {**warm_env(), "PATH": f"{where}:/usr/bin:/bin"}


def where(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kodelet-hook", "--where"], capture_output=True, text=True, env=env, cwd=cwd
    )


def call(env: dict[str, str], project: Path) -> subprocess.CompletedProcess[str]:
    """A PreToolUse call on a Bash ``rm -rf``, by name through PATH, as an agent makes it."""
    return subprocess.run(
        ["kodelet-hook", "claude", "hook"],
        input=json.dumps(pre_tool(project)),
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=120,
    )


@pytest.fixture
def guarded(project: Path) -> Path:
    (project / ".git").mkdir()
    write_guard(project)
    return project


def test_through_a_path_symlink_it_finds_its_venv_and_a_warm_kodelet_answers(
    tmp_path: Path, guarded: Path
) -> None:
    prefix = tmp_path / "venvs" / "kodelet"
    python = venv(prefix)
    # Another Python's kodelet, first in glob order, whose interpreter is not here.
    decoy = prefix / "lib" / "python3.0" / "site-packages" / "kodelet" / "warm"
    decoy.mkdir(parents=True)
    (decoy / "hook.py").write_text("raise SystemExit('the wrong kodelet')\n")
    program = wheel_program(prefix / "bin")
    env = on_path(program, tmp_path / "local-bin")
    found = where(env, guarded)
    assert found.returncode == 0, found.stderr
    kind, hook_py, interpreter = found.stdout.splitlines()
    assert kind == "native"
    assert hook_py == str(site_packages(prefix) / "kodelet" / "warm" / "hook.py")
    assert interpreter == str(prefix / "bin" / VERSION)
    status = run_kodelet("daemon", "status", cwd=guarded, python=str(python))
    assert f"hook client: native ({program})" in status.stdout, status.stdout + status.stderr
    traced = {**env, "KODELET_DAEMON_TRACE": "1"}
    assert reason(call(traced, guarded)) == "no rm"  # starts the warm kodelet
    info = wait_for(warm)[0]
    assert info["project"] == str(guarded)
    second = call(traced, guarded)
    assert reason(second) == "no rm"
    assert "answered by the warm kodelet" in second.stderr


@pytest.mark.parametrize("shebang", ["plain", "long path", "long path, single quotes"])
def test_a_user_install_takes_the_interpreter_of_its_console_script(
    tmp_path: Path, guarded: Path, shebang: str
) -> None:
    """``pip install --user`` leaves no interpreter in ~/.local/bin: the one pip wrote
    into the ``kodelet`` console script beside it runs the Python client."""
    python = venv(tmp_path / "interpreter")
    user = tmp_path / "dot-local"
    site_packages(user).mkdir(parents=True)
    (site_packages(user) / "kodelet").symlink_to(PACKAGE)
    program = wheel_program(user / "bin")
    head = {
        "plain": f"#!{python}\n",
        "long path": f"#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''\n",
        "long path, single quotes": f"#!/bin/sh\n'''exec' '{python}' \"$0\" \"$@\"\n' '''\n",
    }[shebang]
    (user / "bin" / "kodelet").write_text(head + "import sys\n")
    env = on_path(program, tmp_path / "path")
    found = where(env, guarded)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[2] == str(python)
    off = {**env, "KODELET_DAEMON": "0", "KODELET_DAEMON_TRACE": "1"}
    done = call(off, guarded)
    assert reason(done) == "no rm"
    assert "handed to the Python client: the warm kodelet is off" in done.stderr


NO_INTERPRETER = {
    "a shell script": "#!/bin/sh\nexec true\n",
    "a bare name in quotes": "#!/bin/sh\n'''exec' \"python3\" \"$0\"\n",
    "an unclosed quote": "#!/bin/sh\n'''exec' 'python3",
    "a bare shebang": "#!python\n",
    "nothing": "",
    "binary": "\x7fELF\x00\x00",
}
"""Console scripts beside the program that name no interpreter it may run."""


@pytest.mark.parametrize(
    ("missing", "script"),
    [("package", "a shell script")] + [("interpreter", k) for k in NO_INTERPRETER],
)
def test_without_its_kodelet_a_wheels_program_blocks_the_call(
    tmp_path: Path, guarded: Path, missing: str, script: str
) -> None:
    prefix = tmp_path / "prefix"
    if missing == "interpreter":  # the package is there, no Python to run its client
        site_packages(prefix).mkdir(parents=True)
        (site_packages(prefix) / "kodelet").symlink_to(PACKAGE)
    program = wheel_program(prefix / "bin")
    (prefix / "bin" / "kodelet").write_text(NO_INTERPRETER[script])
    env = on_path(program, tmp_path / "path")
    assert where(env, guarded).returncode == 1
    done = call(env, guarded)
    assert done.returncode == 2
    gone = {"package": "its package is gone", "interpreter": "its interpreter is gone"}
    [line] = done.stderr.splitlines()
    assert "cannot find kodelet's Python client" in line and gone[missing] in line
    assert "the call is blocked" in line
    assert done.stdout == ""
    assert not os.path.exists(guarded / ".kodelet" / "ran")
