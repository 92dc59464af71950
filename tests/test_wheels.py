"""kodelet's platform wheels, as scripts/build_wheels.py builds them from this machine
with the pinned ``ziglang`` (from PyPI, into a throwaway venv; zig's caches in this run's
temp dir): built once for the module, then checked as pip, a venv and ``uv tool`` see
them. The Linux x86_64 wheel is installed for real and its native client answers a
guarded call through a warm kodelet; the other platforms' programs are read as their
loaders would (ELF and Mach-O headers, parsed here). Needs the network (``installs``)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.kit.claude import pre_tool, reason
from tests.kit.installs import BASE, install_uv, kodelet_wheel, pip_env, run
from tests.kit.warm import wait_for, warm_env, write_guard

pytestmark = pytest.mark.installs

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "build_wheels.py"
REQUIREMENTS = ROOT / "scripts" / "wheels-requirements.txt"
TAGS = {  # the contract: what pip on each platform must find
    "linux-x86_64": "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64",
    "linux-aarch64": "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64",
    "macos-x86_64": "macosx_10_12_x86_64",
    "macos-arm64": "macosx_11_0_arm64",
}
EM_X86_64, EM_AARCH64 = 62, 183
PT_INTERP, PT_DYNAMIC = 3, 2
CPU_X86_64, CPU_ARM64 = 0x01000007, 0x0100000C
LC_VERSION_MIN_MACOSX, LC_BUILD_VERSION, LC_CODE_SIGNATURE = 0x24, 0x32, 0x1D


@pytest.fixture(scope="module")
def platform_wheels(install_cache: Path, wheel_house: Path) -> dict[str, Path]:
    """scripts/build_wheels.py run once, on the py3-none-any wheel the installs built."""
    tools = install_cache / "zig-tools"
    run([BASE, "-m", "venv", str(tools)])
    python = str(tools / "bin" / "python")
    run([python, "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)], pip_env(install_cache))
    out = install_cache / "platform-wheels"
    env = {
        **pip_env(install_cache),
        "ZIG_GLOBAL_CACHE_DIR": str(install_cache / "zig-global"),
        "ZIG_LOCAL_CACHE_DIR": str(install_cache / "zig-local"),
    }
    printed = run(
        [python, str(SCRIPT), "--out", str(out), "--pure", kodelet_wheel(wheel_house)], env
    )
    made = [Path(line) for line in printed.split()]
    version = (ROOT / "core" / "kodelet" / "VERSION").read_text().strip()
    found = {}
    for name, tag in TAGS.items():
        wheel = out / f"kodelet-{version}-py3-none-{tag}.whl"
        assert wheel in made, f"no {wheel.name} among {[m.name for m in made]}"
        found[name] = wheel
    assert out / f"kodelet-{version}-py3-none-any.whl" in made
    assert len(made) == 5, made
    return found


def program(wheel: Path) -> bytes:
    """The ``kodelet-hook`` a wheel installs, after checking the wheel says what it holds:
    its WHEEL tags are its name's, its RECORD is right, and pip will make it executable."""
    with zipfile.ZipFile(wheel) as zf:
        [script] = [i for i in zf.infolist() if i.filename.endswith(".data/scripts/kodelet-hook")]
        [tags] = [n for n in zf.namelist() if n.endswith(".dist-info/WHEEL")]
        [record] = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        data = zf.read(script)
        lines = zf.read(tags).decode().splitlines()
        rows = zf.read(record).decode().splitlines()
    plat = wheel.name.removesuffix(".whl").split("-")[-1]
    assert [x for x in lines if x.startswith("Tag: ")] == [
        f"Tag: py3-none-{t}" for t in plat.split(".")
    ]
    assert "Root-Is-Purelib: true" in lines
    [row] = [r for r in rows if r.startswith(script.filename + ",")]
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert row == f"{script.filename},sha256={digest},{len(data)}"
    assert (script.external_attr >> 16) & 0o111 == 0o111
    return data


def elf(data: bytes) -> tuple[int, list[int]]:
    """An ELF64 little-endian program's machine and the types of its program headers."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, data[:8]
    machine = struct.unpack_from("<H", data, 18)[0]
    phoff = struct.unpack_from("<Q", data, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    types = [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]
    return machine, types


def macho(data: bytes) -> tuple[int, tuple[int, int], set[int]]:
    """A 64-bit Mach-O program's cputype, its minimum macOS (major, minor) and its load
    commands."""
    magic, cputype, _, _, ncmds = struct.unpack_from("<IiiII", data, 0)
    assert magic == 0xFEEDFACF, hex(magic)
    offset, commands, minimum = 32, set(), (0, 0)
    where = {LC_BUILD_VERSION: 12, LC_VERSION_MIN_MACOSX: 8}  # of the minimum's field
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, offset)
        commands.add(cmd)
        if cmd in where:
            version = struct.unpack_from("<I", data, offset + where[cmd])[0]
            minimum = (version >> 16, (version >> 8) & 0xFF)
        offset += size
    return cputype, minimum, commands


def test_every_platforms_wheel_holds_a_program_for_it_with_no_path_of_this_machine(
    platform_wheels: dict[str, Path], install_cache: Path
) -> None:
    for name, wheel in platform_wheels.items():
        data = program(wheel)
        for path in (str(ROOT), str(install_cache), sys.prefix):
            assert path.encode() not in data, f"{name}: {path} compiled in"
        if name.startswith("linux-"):
            machine, headers = elf(data)
            assert machine == {"linux-x86_64": EM_X86_64, "linux-aarch64": EM_AARCH64}[name]
            assert PT_INTERP not in headers and PT_DYNAMIC not in headers, headers
        else:
            cputype, minimum, commands = macho(data)
            assert cputype == {"macos-x86_64": CPU_X86_64, "macos-arm64": CPU_ARM64}[name]
            major, minor = TAGS[name].split("_")[1:3]
            assert minimum == (int(major), int(minor)), minimum
            if name == "macos-arm64":  # arm64 macOS runs signed programs only
                assert LC_CODE_SIGNATURE in commands


def needs_linux_x86_64() -> None:
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("installs the linux x86_64 wheel")


def call(hook: str, project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A PreToolUse call on a Bash ``rm -rf`` as an agent makes it, traced."""
    return subprocess.run(
        [hook, "claude", "hook"],
        input=json.dumps(pre_tool(project)),
        capture_output=True,
        text=True,
        cwd=project,
        env={**env, "KODELET_DAEMON_TRACE": "1"},
        timeout=120,
    )


def test_pip_picks_the_linux_wheel_and_its_static_client_answers_through_a_warm_kodelet(
    platform_wheels: dict[str, Path],
    install_cache: Path,
    wheel_house: Path,
    tmp_path: Path,
    project: Path,
) -> None:
    needs_linux_x86_64()
    venv = tmp_path / "venv"
    run([BASE, "-m", "venv", str(venv)])
    report = tmp_path / "report.json"
    platforms = str(platform_wheels["linux-x86_64"].parent)  # all five wheels: pip picks
    houses = ["--find-links", str(wheel_house), "--find-links", platforms]
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", *houses]
    run([*pip, "--report", str(report), "kodelet"], pip_env(install_cache))
    [chosen] = [
        item["download_info"]["url"]
        for item in json.loads(report.read_text())["install"]
        if item["metadata"]["name"] == "kodelet"
    ]
    assert chosen.endswith(platform_wheels["linux-x86_64"].name), chosen
    hook = venv / "bin" / "kodelet-hook"
    machine, headers = elf(hook.read_bytes())
    assert machine == EM_X86_64 and PT_INTERP not in headers
    (project / ".git").mkdir()
    write_guard(project)
    env = {**warm_env(), "PATH": "/usr/bin:/bin"}
    kodelet = str(venv / "bin" / "kodelet")

    def daemon(*args: str) -> str:
        done = subprocess.run(
            [kodelet, "daemon", *args], capture_output=True, text=True, env=env, cwd=project
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def warm_answer() -> bool:
        done = call(str(hook), project, env)
        assert reason(done) == "no rm"
        return "answered by the warm kodelet" in done.stderr

    assert f"hook client: native ({hook})" in daemon("status")
    try:
        assert not warm_answer()  # no warm kodelet yet: this call starts one
        wait_for(warm_answer)
        status = daemon("status")
        assert f" {project}  age " in status and re.search(r"\(.*native client [1-9]", status)
    finally:
        assert "stopped warm kodelet" in daemon("stop", "--all")


def test_a_uv_tool_install_runs_the_native_client_through_its_path_link(
    platform_wheels: dict[str, Path],
    install_cache: Path,
    wheel_house: Path,
    tmp_path: Path,
    project: Path,
) -> None:
    needs_linux_x86_64()
    wheel = str(platform_wheels["linux-x86_64"])
    kodelet = install_uv(install_cache, wheel_house, tmp_path / "install", wheel=wheel)
    link = kodelet.parent / "kodelet-hook"
    assert link.is_symlink(), f"uv made no kodelet-hook link in {kodelet.parent}"
    real = Path(os.path.realpath(link))
    assert elf(real.read_bytes())[0] == EM_X86_64
    env = {**warm_env(), "PATH": f"{kodelet.parent}:/usr/bin:/bin"}
    where = subprocess.run(
        ["kodelet-hook", "--where"], capture_output=True, text=True, env=env, cwd=project
    )
    kind, hook_py, python = where.stdout.splitlines()
    assert kind == "native"
    assert hook_py.startswith(str(real.parent.parent)) and hook_py.endswith("/kodelet/warm/hook.py")
    assert Path(python).parent == real.parent
    (project / ".git").mkdir()
    write_guard(project)
    done = call("kodelet-hook", project, {**env, "KODELET_DAEMON": "0"})
    assert reason(done) == "no rm"
    assert "handed to the Python client: the warm kodelet is off" in done.stderr
