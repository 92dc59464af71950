"""kodelet's build: pyproject.toml holds the metadata; this adds the ``kodelet-hook``
program, the native client of the warm kodelet (core/kodelet/warm/native/), compiled
with the C compiler found (``$CC``, else ``cc``). Where none is, or it fails,
``kodelet-hook`` is the lean Python client under the same name, so the command the
installers write always exists; ``kodelet daemon status`` says which one is there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.dist import Distribution

build_scripts = Distribution().get_command_class("build_scripts")


def compiler(editable: bool) -> str | None:
    """The C compiler to build the native client with; None: the Python client. An
    editable install builds it where a compiler is; a wheel only when asked to
    (``KODELET_NATIVE_CLIENT=1``: the wheel is then this platform's, not a
    ``py3-none-any`` one to publish); ``KODELET_NATIVE_CLIENT=0`` never does."""
    wanted = os.environ.get("KODELET_NATIVE_CLIENT", "")
    if wanted in ("0", "no", "off") or not (editable or wanted in ("1", "yes", "on")):
        return None
    chosen = os.environ.get("CC") or "cc"
    return chosen if shutil.which(chosen.split()[0]) else None


class KodeletDistribution(Distribution):
    """A wheel holding the native client is this platform's, never a ``py3-none-any``
    one that another platform's pip would install with a program it cannot run (the
    wheels to publish are made by scripts/build_wheels.py)."""

    def has_ext_modules(self) -> bool:
        return compiler(editable=False) is not None


NATIVE = os.path.join("core", "kodelet", "warm", "native")
SOURCE = os.path.join(NATIVE, "kodelet_hook.c")
SCRIPT = os.path.join(NATIVE, "kodelet-hook")


def c_string(text: str) -> str | None:
    """``text`` as a C string literal; None when it holds what no define can carry."""
    if any(ch in text for ch in "\n\r\0"):
        return None
    return json.dumps(text, ensure_ascii=False)


class BuildNativeClient(build_scripts):
    """build_scripts, then the native client over the Python one where it compiles. An
    editable install runs the package of the source tree, so its path and this
    interpreter are compiled in; a wheel's program finds both at run time from where
    it is installed (kodelet_hook.c, locate()), so no path of this machine is in it."""

    editable_mode = False  # set by setuptools' editable_wheel

    def run(self) -> None:
        super().run()
        cc = compiler(self.editable_mode)
        if cc is None:
            print("kodelet-hook: the Python client (no C compiler, or KODELET_NATIVE_CLIENT)")
            return
        defines: dict[str, str | None] = {}
        if self.editable_mode:
            package = os.path.abspath(os.path.join("core", "kodelet"))
            defines["KODELET_PACKAGE"] = c_string(package)
            defines["KODELET_PYTHON"] = c_string(sys.executable)
        if None in defines.values():
            print("kodelet-hook: a path cannot be compiled in: the Python client is installed")
            return
        target = os.path.join(self.build_dir, "kodelet-hook")
        partial = target + ".native"
        argv = [*cc.split(), "-O2", "-std=c99", "-o", partial, SOURCE]
        argv += [f"-D{name}={value}" for name, value in defines.items()]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"kodelet-hook: {cc} failed: the Python client is installed")
            print(done.stderr)
            return
        os.chmod(partial, 0o755)
        os.replace(partial, target)
        print(f"kodelet-hook: the native client, built with {cc}")


setup(
    scripts=[SCRIPT],
    cmdclass={"build_scripts": BuildNativeClient},
    distclass=KodeletDistribution,
)
