"""kodelet installed from its wheels the three ways users install it (a plain venv,
``pipx install``, ``uv tool install``), for the ``installs`` tests: this run's download
cache and wheel house (session fixtures, so every module of the session shares one
build), pipx and uv pinned, each in a throwaway venv, and the installs reading only the
house (no index)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.wheels import source_copy

PIPX = "pipx==1.18.4"
UV = "uv==0.13.9"
# The Python the installs run on: the base interpreter, not this test venv's.
BASE = getattr(sys, "_base_executable", "") or sys.executable


def run(argv: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return str(done.stdout)


@pytest.fixture(scope="session")
def install_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's download cache and wheel house."""
    return tmp_path_factory.mktemp("install-cache")


def pip_env(install_cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(
        PIP_CACHE_DIR=str(install_cache / "pip"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
    )
    return env


@pytest.fixture(scope="session")
def wheel_house(install_cache: Path) -> Path:
    """kodelet's wheel, built from a copy of this checkout, its dependencies' wheels and pip's."""
    house = install_cache / "wheels"
    src = source_copy(install_cache / "src")
    env = pip_env(install_cache)
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", "-q", "--no-deps", "-w", str(house), str(src)], env)
    (wheel,) = house.glob("kodelet-*.whl")
    run([*pip, "wheel", "-q", "-w", str(house), str(wheel)], env)
    # pipx upgrades its shared pip with the same --pip-args: that pip comes from here too.
    run([*pip, "download", "-q", "--no-deps", "-d", str(house), "pip"], env)
    return house


def kodelet_wheel(house: Path) -> str:
    (wheel,) = house.glob("kodelet-*-py3-none-any.whl")
    return str(wheel)


def tool(install_cache: Path, spec: str) -> Path:
    """``spec`` (pinned) installed in a throwaway venv; that venv's bin directory."""
    venv = install_cache / f"tool-{spec.split('==')[0]}"
    if not venv.exists():
        run([BASE, "-m", "venv", str(venv)])
        run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", spec],
            pip_env(install_cache),
        )
    return venv / "bin"


def install_venv(install_cache: Path, house: Path, where: Path, wheel: str | None = None) -> Path:
    venv = where / "venv"
    run([BASE, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    wheel = wheel or kodelet_wheel(house)
    run([*pip, "--no-index", "--find-links", str(house), wheel], pip_env(install_cache))
    return venv / "bin" / "kodelet"


def install_pipx(install_cache: Path, house: Path, where: Path, wheel: str | None = None) -> Path:
    env = pip_env(install_cache)
    env.update(
        PIPX_HOME=str(where / "pipx-home"),
        PIPX_BIN_DIR=str(where / "pipx-bin"),
        PIPX_MAN_DIR=str(where / "pipx-man"),
        PIPX_DEFAULT_PYTHON=BASE,
    )
    pipx = str(tool(install_cache, PIPX) / "pipx")
    pip_args = f"--no-index --find-links {house}"
    run([pipx, "install", "--pip-args", pip_args, wheel or kodelet_wheel(house)], env)
    return where / "pipx-bin" / "kodelet"


def install_uv(install_cache: Path, house: Path, where: Path, wheel: str | None = None) -> Path:
    env = pip_env(install_cache)
    env.update(
        UV_TOOL_DIR=str(where / "uv-tools"),
        UV_TOOL_BIN_DIR=str(where / "uv-bin"),
        UV_CACHE_DIR=str(install_cache / "uv"),
        UV_PYTHON_DOWNLOADS="never",
        UV_NO_CONFIG="1",
    )
    uv = str(tool(install_cache, UV) / "uv")
    argv = [uv, "tool", "install", "--python", BASE, "--no-index", "--find-links", str(house)]
    run([*argv, wheel or kodelet_wheel(house)], env)
    return where / "uv-bin" / "kodelet"


INSTALLS = {"venv": install_venv, "pipx": install_pipx, "uv tool": install_uv}
