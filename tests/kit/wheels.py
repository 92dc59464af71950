"""Python packages as pip leaves them, without pip's network: a copy of this checkout to
build kodelet's own wheel from, a real wheel of a native plugin, a plugin's module and
dist-info written into a site directory, and a venv that also sees this interpreter's
packages (kodelet among them)."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def source_copy(where: Path) -> Path:
    """A copy of this checkout to build kodelet's wheel from, so that the build's
    egg-info and build/ never land in the work tree."""
    ignore = shutil.ignore_patterns(
        ".git", ".nox", "*.egg-info", "build", "__pycache__", ".venv", "tests"
    )
    shutil.copytree(ROOT, where, ignore=ignore)
    return where


def record_line(name: str, data: bytes) -> str:
    """One line of a wheel's RECORD: the file, its hash, its size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(where: Path) -> Path:
    """A real wheel of a native plugin that blocks ``rm``: no build backend needed."""
    files = {
        "kodelet_plugin_demo.py": (
            b"from kodelet import hookimpl\n\n\n@hookimpl\n"
            b"def before_tool_call(tool_name):\n"
            b"    if tool_name == 'rm':\n"
            b"        return {'blocked': True, 'reason': 'demo says no'}\n"
        ),
        "kodelet_plugin_demo-1.2.3.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: kodelet-plugin-demo\nVersion: 1.2.3\n"
        ),
        "kodelet_plugin_demo-1.2.3.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        "kodelet_plugin_demo-1.2.3.dist-info/entry_points.txt": (
            b"[kodelet.plugins]\ndemo = kodelet_plugin_demo\n"
        ),
    }
    record = "kodelet_plugin_demo-1.2.3.dist-info/RECORD"
    lines = [record_line(n, d) for n, d in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    wheel = where / "kodelet_plugin_demo-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


def venv_seeing_this_interpreter(venv: Path) -> str:
    """A venv whose own site-packages come first and which also sees the test interpreter's.

    ``--system-site-packages`` would link to the *base* Python, where kodelet is not
    installed on a fresh machine; a ``.pth`` that calls ``site.addsitedir`` on the running
    interpreter's site-packages also honours the editable install's own ``.pth`` files.
    """
    import site

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    own = purelib(python)
    dirs = [d for d in site.getsitepackages() if Path(d).is_dir()]
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs)
    (Path(own) / "_kodelet_test_parent.pth").write_text(lines)
    probe = subprocess.run(
        [python, "-c", "import kodelet, pip; print(kodelet.__file__)"],
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, f"kodelet or pip not importable in the test venv: {probe.stderr}"
    return python


def purelib(python: str) -> str:
    """The site-packages directory of the venv whose interpreter is ``python``."""
    return subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def install(site: Path, ep_name: str, module: str, source: str) -> str:
    """A module and its dist-info with a ``kodelet.plugins`` entry point, as pip leaves them."""
    dist = module.replace("_", "-")
    info = site / f"{module}-0.1.dist-info"
    info.mkdir(parents=True)
    (site / f"{module}.py").write_text(source)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[kodelet.plugins]\n{ep_name} = {module}\n")
    return dist
