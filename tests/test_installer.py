"""Which installer ``plugins install`` runs, from what made kodelet's environment; the
real runs under pip, pipx and uv tool are in test_installs.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kodelet.installer import Unavailable, installed_with, plan
from kodelet.testing import write_hook

ARGS = ["-e", "./mine", "--no-index", "--find-links", "wheels dir", "kodelet-plugin-x"]


def environment(root: Path, marker: str) -> Path:
    prefix = root / "venvs" / "kodelet"
    prefix.mkdir(parents=True)
    (prefix / marker).write_text("{}\n")
    return prefix


def test_a_pipx_environment_is_injected_into_with_pips_options_as_pip_args(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = environment(tmp_path, "pipx_metadata.json")
    assert installed_with(prefix) == "pipx"
    pipx = write_hook(tmp_path / "bin", "pipx", "#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("PATH", str(pipx.parent))
    run = plan("install", ARGS, prefix)
    assert run.argv == [
        str(pipx),
        "inject",
        "kodelet",
        "--editable",
        "--pip-args=--no-index --find-links 'wheels dir'",
        "./mine",
        "kodelet-plugin-x",
    ]
    assert run.env is not None and run.env["PIPX_HOME"] == str(tmp_path)
    assert plan("uninstall", ["-y", "kodelet-plugin-x"], prefix).argv[1:] == [
        "uninject",
        "kodelet",
        "kodelet-plugin-x",
    ]


def test_without_the_installer_on_path_the_exact_command_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(Unavailable, match=r"pipx, which is not on PATH: run pipx inject kodelet"):
        plan("install", ARGS, environment(tmp_path / "a", "pipx_metadata.json"))
    with pytest.raises(Unavailable, match=r"run uv pip install --python "):
        plan("install", ARGS, environment(tmp_path / "b", "uv-receipt.toml"))


def test_a_uv_tool_environment_gets_uv_pip_for_its_own_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = environment(tmp_path, "uv-receipt.toml")
    uv = write_hook(tmp_path / "bin", "uv", "#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("PATH", str(uv.parent))
    run = plan("uninstall", ["-y", "kodelet-plugin-x"], prefix)
    assert run.argv == [str(uv), "pip", "uninstall", "--python", sys.executable, "kodelet-plugin-x"]
