"""`kodelet plugins new` says what to run next; that line works in a fresh venv."""

from __future__ import annotations

import importlib.metadata
import os
import re
import site
import subprocess
import sys
import zipfile
from pathlib import Path

from kodelet.scaffold import next_steps

from tests.kit.wheels import record_line

HIDDEN = re.compile(r"^(pytest|_pytest|py\.py|pytest-.*\.dist-info|py\.test)$")


def pytest_wheel(where: Path) -> Path:
    """pytest as installed here, packed back into a wheel: pip finds it without an index."""
    dist = importlib.metadata.distribution("pytest")
    files: dict[str, bytes] = {}
    for entry in dist.files or []:
        name = str(entry)
        if name.startswith("..") or "__pycache__" in name:
            continue  # console scripts are pip's to write; byte code is the interpreter's
        if name.endswith(("/RECORD", "/INSTALLER", "/REQUESTED", "/direct_url.json")):
            continue
        files[name] = Path(str(dist.locate_file(entry))).read_bytes()
    info = f"pytest-{dist.version}.dist-info"
    record = f"{info}/RECORD"
    lines = [record_line(n, d) for n, d in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    wheel = where / f"pytest-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


def venv_without_pytest(venv: Path, parent_view: Path) -> Path:
    """A fresh venv (with its own pip) that sees this interpreter's packages, pytest aside.

    This checkout of kodelet is on no index, so the venv sees it through a ``.pth``;
    pytest is left out of that view, so only the hint can bring it in.
    """
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    parent_view.mkdir()
    for directory in site.getsitepackages():
        if not Path(directory).is_dir():
            continue
        for entry in Path(directory).iterdir():
            target = parent_view / entry.name
            if not HIDDEN.match(entry.name) and not target.exists():
                target.symlink_to(entry)
    python = venv / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(own) / "_kodelet_test_parent.pth").write_text(
        f"import site; site.addsitedir({str(parent_view)!r})\n"
    )
    probe = subprocess.run(
        [str(python), "-c", "import kodelet, importlib.util as u; print(u.find_spec('pytest'))"],
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "None", "pytest must not be visible before the hint runs"
    return venv


def run_hint(hint: str, venv: Path, wheels: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The hint in bash, as a user with the venv activated would run it.

    pip keeps its configuration (its index gives the build backend, as for any
    user); pytest also lies in ``wheels``, so a missing index cannot hide it."""
    links = f"{wheels} {os.environ.get('PIP_FIND_LINKS', '')}".strip()
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "VIRTUAL_ENV": str(venv),
        "PIP_FIND_LINKS": links,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PIP_ROOT_USER_ACTION": "ignore",
    }
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        ["bash", "-e", "-c", hint],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _new_project(where: Path, name: str) -> tuple[Path, str]:
    done = subprocess.run(
        [sys.executable, "-m", "kodelet", "plugins", "new", name, "--dir", str(where / name)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return where / name, done.stdout


def test_the_hint_installs_the_test_extra_and_the_tests_pass(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    pytest_wheel(wheels)
    venv = venv_without_pytest(tmp_path / "venv", tmp_path / "parent-view")

    # The hint users were given: the project installs, and there is no pytest to run.
    old, _ = _new_project(tmp_path, "old-scanner")
    done = run_hint(f"cd {old} && pip install -e . && pytest", venv, wheels, cwd=tmp_path)
    assert done.returncode == 127, done.stdout + done.stderr
    assert "pytest: command not found" in done.stderr

    project, _ = _new_project(tmp_path / "work dir", "secret-scanner")
    hint = next_steps(project)
    assert "'.[test]'" in hint
    done = run_hint(hint, venv, wheels, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b2 passed\b", done.stdout), done.stdout
    assert (venv / "bin" / "pytest").exists()  # pytest came with the extra, into the venv


def test_plugins_new_prints_the_hint_that_works(tmp_path: Path) -> None:
    project, out = _new_project(tmp_path, "secret-scanner")
    assert out.splitlines()[-1] == f"Next: {next_steps(project)}"
