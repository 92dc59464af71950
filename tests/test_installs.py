"""kodelet installed from its wheel the three ways users install it (a plain venv,
``pipx install``, ``uv tool install``) runs the Python hooks the docs and ``kodelet
hooks new`` show, with a ``python3`` on PATH that cannot import kodelet: the
redaction masks the AWS key, the guard blocks the call, through ``kodelet hooks run``
and through that install's lean client (the command agents run).

Everything is built and installed in this run's temp dirs: the wheels (kodelet's and
its dependencies', fetched once per run), pipx and uv (pinned, each in a throwaway
venv), their homes, bin dirs and caches. The installs themselves read only those
wheels (no index)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kodelet.testing import write_hook

from tests.kit.python_hooks import (
    GUARD_BODY,
    REDACT_BODY,
    assert_guarded,
    docs_hooks,
    env_for,
    filled_template,
    lean_client,
    path_without_kodelet,
    protocol_guard,
)
from tests.kit.wheels import build_wheel, source_copy

pytestmark = pytest.mark.installs

PIPX = "pipx==1.18.4"
UV = "uv==0.13.9"
# The Python the installs run on: the base interpreter, not this test venv's.
BASE = getattr(sys, "_base_executable", "") or sys.executable


def run(argv: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return str(done.stdout)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's download cache and wheel house."""
    return tmp_path_factory.mktemp("install-cache")


def pip_env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(
        PIP_CACHE_DIR=str(cache / "pip"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
    )
    return env


@pytest.fixture(scope="module")
def wheels(cache: Path) -> Path:
    """kodelet's wheel, built from a copy of this checkout, its dependencies' wheels and pip's."""
    house = cache / "wheels"
    src = source_copy(cache / "src")
    env = pip_env(cache)
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", "-q", "--no-deps", "-w", str(house), str(src)], env)
    (wheel,) = house.glob("kodelet-*.whl")
    run([*pip, "wheel", "-q", "-w", str(house), str(wheel)], env)
    # pipx upgrades its shared pip with the same --pip-args: that pip comes from here too.
    run([*pip, "download", "-q", "--no-deps", "-d", str(house), "pip"], env)
    return house


def kodelet_wheel(house: Path) -> str:
    (wheel,) = house.glob("kodelet-*.whl")
    return str(wheel)


def tool(cache: Path, spec: str) -> Path:
    """``spec`` (pinned) installed in a throwaway venv; that venv's bin directory."""
    venv = cache / f"tool-{spec.split('==')[0]}"
    if not venv.exists():
        run([BASE, "-m", "venv", str(venv)])
        run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", spec], pip_env(cache))
    return venv / "bin"


def install_venv(cache: Path, house: Path, where: Path) -> Path:
    venv = where / "venv"
    run([BASE, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    run([*pip, "--no-index", "--find-links", str(house), kodelet_wheel(house)], pip_env(cache))
    return venv / "bin" / "kodelet"


def install_pipx(cache: Path, house: Path, where: Path) -> Path:
    env = pip_env(cache)
    env.update(
        PIPX_HOME=str(where / "pipx-home"),
        PIPX_BIN_DIR=str(where / "pipx-bin"),
        PIPX_MAN_DIR=str(where / "pipx-man"),
        PIPX_DEFAULT_PYTHON=BASE,
    )
    pipx = str(tool(cache, PIPX) / "pipx")
    pip_args = f"--no-index --find-links {house}"
    run([pipx, "install", "--pip-args", pip_args, kodelet_wheel(house)], env)
    return where / "pipx-bin" / "kodelet"


def install_uv(cache: Path, house: Path, where: Path) -> Path:
    env = pip_env(cache)
    env.update(
        UV_TOOL_DIR=str(where / "uv-tools"),
        UV_TOOL_BIN_DIR=str(where / "uv-bin"),
        UV_CACHE_DIR=str(cache / "uv"),
        UV_PYTHON_DOWNLOADS="never",
        UV_NO_CONFIG="1",
    )
    uv = str(tool(cache, UV) / "uv")
    argv = [uv, "tool", "install", "--python", BASE, "--no-index", "--find-links", str(house)]
    run([*argv, kodelet_wheel(house)], env)
    return where / "uv-bin" / "kodelet"


INSTALLS = {"venv": install_venv, "pipx": install_pipx, "uv tool": install_uv}


@pytest.mark.parametrize("how", list(INSTALLS))
def test_python_hooks_run_under_every_install(
    how: str, cache: Path, wheels: Path, tmp_path: Path, project: Path
) -> None:
    kodelet = INSTALLS[how](cache, wheels, tmp_path / "install")
    assert kodelet.exists(), f"{how} made no kodelet command"
    (project / ".git").mkdir()
    guards = docs_hooks(project)
    filled_template([str(kodelet)], project, "tpl-guard", "before_tool_call", GUARD_BODY)
    filled_template([str(kodelet)], project, "tpl-redact", "after_tool_call", REDACT_BODY)
    guards.update({"tpl-guard": "before_tool_call", "tpl-redact": "after_tool_call"})
    env = env_for(path_without_kodelet(tmp_path))
    assert_guarded([str(kodelet)], project, env, guards)
    # The lean client of that install, as an agent runs it, answering in-process.
    python = installed_python(kodelet)
    lean = os.path.join(run([python, "-c", LEAN]).strip(), "hook.py")
    assert lean.startswith(str(tmp_path)), lean
    for name in list(guards):
        (project / ".kodelet" / "hooks" / name).unlink()
    write_hook(project / ".kodelet" / "hooks", "protocol-guard", protocol_guard())
    reason = lean_client(project, {**env, "KODELET_DAEMON": "0"}, "rm -rf /", python, lean)
    assert reason == "refusing to delete everything"


@pytest.mark.parametrize("how", list(INSTALLS))
def test_plugins_install_into_kodelets_own_environment_under_every_install(
    how: str, cache: Path, wheels: Path, tmp_path: Path, project: Path
) -> None:
    """pipx and uv tool make environments without pip: ``plugins install`` uses the
    installer that made kodelet's environment, and the plugin is then kodelet's."""
    kodelet = str(INSTALLS[how](cache, wheels, tmp_path / "install"))
    plugin = build_wheel(tmp_path)
    tools = f"{tool(cache, PIPX)}:{tool(cache, UV)}"
    env = {**pip_env(cache), "PATH": f"{tools}:/usr/bin:/bin", "UV_CACHE_DIR": str(cache / "uv")}

    def plugins(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [kodelet, "plugins", *args]
        return subprocess.run(
            argv, cwd=project, env=env, capture_output=True, text=True, timeout=600
        )

    def names() -> list[str]:
        return [row["name"] for row in json.loads(plugins("list", "--json").stdout)]

    done = plugins("install", "--no-index", str(plugin))
    assert done.returncode == 0, done.stderr
    assert {"venv": "pip", "pipx": "pipx inject", "uv tool": "uv pip"}[how] in done.stderr
    assert "demo" in names()
    done = plugins("uninstall", "demo")
    assert done.returncode == 0, done.stderr
    assert "demo" not in names()


LEAN = "import os, kodelet.warm.client as c; print(os.path.dirname(c.__file__))"


def installed_python(kodelet: Path) -> str:
    """The Python of an install: beside its ``kodelet`` command in the install's venv
    (pipx and uv link the command from there)."""
    python = Path(os.path.realpath(kodelet)).parent / "python"
    assert python.exists(), f"no python beside {os.path.realpath(kodelet)}"
    return str(python)


BUILD = "build==1.6.1"
TWINE = "twine==7.0.0"


def test_the_package_builds_and_passes_twine_check(cache: Path) -> None:
    """Ready to publish: ``python -m build`` makes the sdist and the wheel, ``twine
    check`` passes both, and their version is the one in ``core/kodelet/VERSION``."""
    tools = cache / "publish-tools"
    run([BASE, "-m", "venv", str(tools)])
    python = str(tools / "bin" / "python")
    run([python, "-m", "pip", "install", "-q", BUILD, TWINE], pip_env(cache))
    src = source_copy(cache / "publish-src")
    dist = cache / "dist"
    run([python, "-m", "build", "--outdir", str(dist), str(src)], pip_env(cache))
    version = (src / "core" / "kodelet" / "VERSION").read_text().strip()
    built = sorted(p.name for p in dist.iterdir())
    assert built == [f"kodelet-{version}-py3-none-any.whl", f"kodelet-{version}.tar.gz"]
    out = run([python, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())])
    assert out.count("PASSED") == 2, out
