"""Build kodelet's wheels to publish, from one Linux machine, as ruff and uv ship theirs:

- ``py3-none-any``: ``kodelet-hook`` is the lean Python client (every platform);
- one ``py3-none-<platform>`` wheel per platform below, the same files but for
  ``kodelet-hook``, the native client compiled for that platform with ``zig cc``
  (``ziglang`` from PyPI, pinned in scripts/wheels-requirements.txt): Linux x86_64 and
  aarch64 as static musl programs (no loader, no libc of the machine: one wheel for
  glibc and musl distributions alike), macOS x86_64 and arm64.

The native client has no path compiled in: it finds its kodelet package and the
interpreter of its Python fallback from where it is installed (kodelet_hook.c,
locate()), so one wheel serves every CPython 3.11+ of its platform, hence ``py3-none``.

Usage (ziglang installed in the running interpreter; ``nox -s wheels`` does both)::

    python -m pip install -r scripts/wheels-requirements.txt
    python scripts/build_wheels.py [--out dist] [--pure WHEEL] [--platform NAME ...]

``--pure`` takes a ``py3-none-any`` wheel of this checkout already built (else it is
built here with ``pip wheel``); ``--platform`` builds only those (names below).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "core" / "kodelet" / "warm" / "native" / "kodelet_hook.c"
REQUIREMENTS = Path(__file__).with_name("wheels-requirements.txt")


class Platform(NamedTuple):
    target: str  # zig's -target
    flags: tuple[str, ...]
    tag: str  # the wheel's platform tag (compressed: several joined by ".")


def static_linux(arch: str) -> str:
    """A static program runs on any Linux of its arch: glibc's tags and musl's both."""
    return f"manylinux_2_17_{arch}.manylinux2014_{arch}.musllinux_1_1_{arch}"


PLATFORMS = {
    "linux-x86_64": Platform("x86_64-linux-musl", ("-static",), static_linux("x86_64")),
    "linux-aarch64": Platform("aarch64-linux-musl", ("-static",), static_linux("aarch64")),
    "macos-x86_64": Platform("x86_64-macos.10.12", (), "macosx_10_12_x86_64"),
    "macos-arm64": Platform("aarch64-macos.11.0", (), "macosx_11_0_arm64"),
}
CFLAGS = ("-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-s")


class BuildError(Exception):
    """What stops the build, said in one line with its fix."""


def pinned_zig() -> str:
    """The ziglang version pinned in scripts/wheels-requirements.txt."""
    found = re.search(r"^ziglang==(\S+)$", REQUIREMENTS.read_text(), re.M)
    if found is None:
        raise BuildError(f"{REQUIREMENTS.name} pins no ziglang==VERSION")
    return found.group(1)


def check_zig() -> None:
    want = pinned_zig()
    try:
        have = importlib.metadata.version("ziglang")
    except importlib.metadata.PackageNotFoundError:
        have = "none"
    if have != want:
        raise BuildError(
            f"needs ziglang=={want} in this interpreter (found {have}): "
            f"{sys.executable} -m pip install -r {REQUIREMENTS.relative_to(ROOT)}"
        )


def run(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-20:]
        raise BuildError(f"{' '.join(argv[:6])} ... failed:\n" + "\n".join(tail))


def compile_client(platform: Platform, out: Path) -> Path:
    """``kodelet-hook`` for ``platform``, compiled with zig cc, no path in it."""
    program = out / f"kodelet-hook-{platform.target}"
    argv = [sys.executable, "-m", "ziglang", "cc", "-target", platform.target]
    run([*argv, *platform.flags, *CFLAGS, "-o", str(program), str(SOURCE)], cwd=out)
    return program


def build_pure(work: Path) -> Path:
    """The ``py3-none-any`` wheel, built with pip from a copy of this checkout (so that
    the build's own files never land in it), the Python client as ``kodelet-hook``."""
    src = work / "src"
    ignore = shutil.ignore_patterns(
        ".git", ".nox", "*.egg-info", "build", "dist", "__pycache__", ".venv", "tests"
    )
    shutil.copytree(ROOT, src, ignore=ignore)
    env = {**os.environ, "KODELET_NATIVE_CLIENT": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work), str(src)]
    run(pip, env=env)
    (wheel,) = work.glob("kodelet-*-py3-none-any.whl")
    return wheel


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def platform_wheel(pure: Path, program: Path, tag: str, out: Path) -> Path:
    """``pure`` with its ``kodelet-hook`` replaced by ``program`` and tagged ``tag``.
    Root-Is-Purelib stays true: the package is pure Python, installed where the
    interpreter's pure packages go, which is where the program looks for it."""
    name, version = pure.name.split("-")[:2]
    target = out / f"{name}-{version}-py3-none-{tag}.whl"
    binary = program.read_bytes()
    with zipfile.ZipFile(pure) as src:
        entries = [(info, src.read(info)) for info in src.infolist()]
    scripts = [i.filename for i, _ in entries if i.filename.endswith(".data/scripts/kodelet-hook")]
    wheel_file = [i.filename for i, _ in entries if i.filename.endswith(".dist-info/WHEEL")]
    if len(scripts) != 1 or len(wheel_file) != 1 or not pure.name.endswith("-py3-none-any.whl"):
        raise BuildError(f"{pure.name} is not kodelet's py3-none-any wheel")
    tags = "".join(f"Tag: py3-none-{t}\n" for t in tag.split("."))
    lines: list[str] = []
    record: zipfile.ZipInfo | None = None
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for info, data in entries:
            if info.filename.endswith(".dist-info/RECORD"):
                record = info
                continue
            if info.filename == scripts[0]:
                data = binary
                info.external_attr = (0o100755 & 0xFFFF) << 16
            elif info.filename == wheel_file[0]:
                text = data.decode()
                if "Tag: py3-none-any\n" not in text:
                    raise BuildError(f"{pure.name}: its WHEEL file is not py3-none-any")
                data = text.replace("Tag: py3-none-any\n", tags).encode()
            dst.writestr(info, data)
            lines.append(record_line(info.filename, data))
        if record is None:
            raise BuildError(f"{pure.name} has no RECORD")
        lines.append(f"{record.filename},,")
        dst.writestr(record, "\n".join(lines) + "\n")
    return target


def build(out: Path, pure: Path | None, names: list[str]) -> list[Path]:
    check_zig()
    out.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="kodelet-wheels-") as tmp:
        work = Path(tmp)
        if pure is None:
            pure = build_pure(work)
        if not pure.name.endswith("-py3-none-any.whl"):
            raise BuildError(f"--pure {pure.name}: not a py3-none-any wheel")
        version = (ROOT / "core" / "kodelet" / "VERSION").read_text().strip()
        if pure.name.split("-")[1] != version:
            raise BuildError(f"--pure {pure.name}: not this checkout's version ({version})")
        if pure.parent.resolve() != out.resolve():
            shutil.copy2(pure, out / pure.name)
        made.append(out / pure.name)
        for name in names:
            platform = PLATFORMS[name]
            program = compile_client(platform, work)
            made.append(platform_wheel(pure, program, platform.tag, out))
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="default: dist/")
    parser.add_argument("--pure", type=Path, help="a py3-none-any wheel of this checkout")
    parser.add_argument("--platform", action="append", choices=list(PLATFORMS), help="default: all")
    args = parser.parse_args(argv)
    try:
        made = build(args.out, args.pure, args.platform or list(PLATFORMS))
    except BuildError as exc:
        print(f"build_wheels: {exc}", file=sys.stderr)
        return 1
    for wheel in made:
        print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
