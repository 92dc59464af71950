"""kodelet's own build, as ``pip install -e .`` and ``pip wheel .`` run it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.kit.wheels import source_copy

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_builds_without_a_deprecation_and_says_its_license(tmp_path: Path) -> None:
    """The build's own output has no setuptools deprecation (the old ``license = { text =
    ... }`` table had a removal date), and the metadata carries the SPDX expression."""
    src = source_copy(tmp_path / "src")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    cmd = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0 and "setuptools>=77" in done.stdout + done.stderr:
        pytest.skip(f"no index reachable for the build requirements: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    output = done.stdout + done.stderr
    assert "SetuptoolsDeprecationWarning" not in output, output[-3000:]
    assert "project.license" not in output, output[-3000:]
    [wheel] = tmp_path.glob("kodelet-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
        headers = zf.read(meta).decode().split("\n\n", 1)[0].splitlines()
    # Every module of the source tree is in the wheel: a package left out of
    # pyproject's list imports in the editable install and fails in the wheel.
    sources = {
        str(p.relative_to(ROOT / "core"))
        for p in (ROOT / "core" / "kodelet").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert sorted(sources - set(names)) == []
    # And every data file the code reads at run time (the recommended rule set, the
    # recipes, the schemas): package data a pattern left out would be missing.
    data = {
        str(p.relative_to(ROOT / "core"))
        for suffix in ("*.toml", "*.json", "*.jsonl", "*.md", "*.tmpl")
        for p in (ROOT / "core" / "kodelet").rglob(suffix)
        if "__pycache__" not in p.parts
    }
    assert "kodelet/rules/recommended.toml" in data
    assert sorted(data - set(names)) == []
    assert "License-Expression: MIT" in headers
    assert not any(h.startswith("License: ") for h in headers)
    # The wheel to publish is py3-none-any: its kodelet-hook is the Python client.
    assert wheel.name.endswith("-py3-none-any.whl")
    [script] = [n for n in names if n.endswith(".data/scripts/kodelet-hook")]
    with zipfile.ZipFile(wheel) as zf:
        program = zf.read(script).decode()
    assert program.startswith("#!python\n")
    assert "from kodelet.warm.client import main" in program


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_a_wheel_asked_for_the_native_client_is_this_platforms(tmp_path: Path) -> None:
    """A py3-none-any wheel would carry the program to platforms it cannot run on."""
    src = source_copy(tmp_path / "src")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "KODELET_NATIVE_CLIENT": "1"}
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0 and "setuptools>=77" in done.stdout + done.stderr:
        pytest.skip(f"no index reachable for the build requirements: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    [wheel] = tmp_path.glob("kodelet-*.whl")
    assert not wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as zf:
        [script] = [n for n in zf.namelist() if n.endswith(".data/scripts/kodelet-hook")]
        program = zf.read(script)
    assert program.startswith(b"\x7fELF")
    # It finds kodelet and the interpreter where it is installed: no path of this build.
    for path in (sys.executable, str(src), str(tmp_path)):
        assert path.encode() not in program, path
