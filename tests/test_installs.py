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
from pathlib import Path

import pytest
from kodelet.testing import write_hook

from tests.kit.installs import (
    BASE,
    INSTALLS,
    PIPX,
    UV,
    pip_env,
    run,
    tool,
)
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


@pytest.mark.parametrize("how", list(INSTALLS))
def test_python_hooks_run_under_every_install(
    how: str, install_cache: Path, wheel_house: Path, tmp_path: Path, project: Path
) -> None:
    kodelet = INSTALLS[how](install_cache, wheel_house, tmp_path / "install")
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
    how: str, install_cache: Path, wheel_house: Path, tmp_path: Path, project: Path
) -> None:
    """pipx and uv tool make environments without pip: ``plugins install`` uses the
    installer that made kodelet's environment, and the plugin is then kodelet's."""
    kodelet = str(INSTALLS[how](install_cache, wheel_house, tmp_path / "install"))
    plugin = build_wheel(tmp_path)
    tools = f"{tool(install_cache, PIPX)}:{tool(install_cache, UV)}"
    env = {
        **pip_env(install_cache),
        "PATH": f"{tools}:/usr/bin:/bin",
        "UV_CACHE_DIR": str(install_cache / "uv"),
    }

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


def test_the_package_builds_and_passes_twine_check(install_cache: Path) -> None:
    """Ready to publish: ``python -m build`` makes the sdist and the wheel, ``twine
    check`` passes both, and their version is the one in ``core/kodelet/VERSION``."""
    tools = install_cache / "publish-tools"
    run([BASE, "-m", "venv", str(tools)])
    python = str(tools / "bin" / "python")
    run([python, "-m", "pip", "install", "-q", BUILD, TWINE], pip_env(install_cache))
    src = source_copy(install_cache / "publish-src")
    dist = install_cache / "dist"
    run([python, "-m", "build", "--outdir", str(dist), str(src)], pip_env(install_cache))
    version = (src / "core" / "kodelet" / "VERSION").read_text().strip()
    built = sorted(p.name for p in dist.iterdir())
    assert built == [f"kodelet-{version}-py3-none-any.whl", f"kodelet-{version}.tar.gz"]
    out = run([python, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())])
    assert out.count("PASSED") == 2, out
