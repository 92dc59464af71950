"""Agent CLIs from the npm registry, pinned and checked, cached outside the repository.

``npm pack`` fetches a package's tarball without running anything in it (no install
scripts), so its sha512 is checked against the pin before a byte of it is unpacked.
Nothing is committed; the cache is ``$KODELET_E2E_CACHE`` or ``~/.cache/kodelet-e2e``,
resolved when this module is imported (before tests move HOME to a temp dir). A
package is unpacked into a temporary directory and moved into place whole, so a run
cut short never leaves half a CLI to be trusted by the next.
"""

from __future__ import annotations

import base64
import hashlib
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Collection
from pathlib import Path

CACHE = Path(
    os.environ.get("KODELET_E2E_CACHE") or Path.home() / ".cache" / "kodelet-e2e"
).absolute()
COMPLETE = ".kodelet-e2e-complete"


class InstallError(RuntimeError):
    """The pinned CLI cannot be had: the e2e session fails (never skips) with this."""


def platform_tag() -> str:
    """npm's name for this machine: ``linux-x64``, ``darwin-arm64``, ..."""
    machine = platform.machine().lower()
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)
    return f"{platform.system().lower()}-{machine}"


def integrity_of(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def unpack(
    spec: str,
    integrity: str,
    target: Path,
    *,
    only: Collection[str] = (),
    cache: Path = CACHE,
) -> Path:
    """``target``, holding the files of the npm package ``spec`` (``name@version``): all
    of them, or just the paths in ``only`` (relative to the package's root). Fetched
    once; :class:`InstallError` says why it cannot be."""
    if (target / COMPLETE).is_file() and all((target / p).exists() for p in only):
        return target  # unpacked before, with every file asked for now
    if shutil.which("npm") is None:
        raise InstallError("npm is not on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        env = {
            **os.environ,
            "npm_config_cache": str(cache / "npm"),
            "npm_config_update_notifier": "false",
            "npm_config_audit": "false",
            "npm_config_fund": "false",
        }
        done = subprocess.run(
            ["npm", "pack", spec, "--pack-destination", tmp],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
            cwd=tmp,
        )
        if done.returncode != 0:
            raise InstallError(f"npm pack {spec} failed: {done.stderr.strip()[-500:]}")
        tarball = next(Path(tmp).glob("*.tgz"), None)
        if tarball is None:
            raise InstallError(f"npm pack {spec} left no tarball")
        got = integrity_of(tarball.read_bytes())
        if got != integrity:
            raise InstallError(f"{spec}: integrity {got} is not the pinned {integrity}")
        out = Path(tmp) / "x"
        wanted = {f"package/{p}" for p in only}
        with tarfile.open(tarball) as tar:
            members = [m for m in tar.getmembers() if not wanted or m.name in wanted]
            if wanted and len(members) != len(wanted):
                missing = wanted - {m.name for m in members}
                raise InstallError(f"{spec} has no {', '.join(sorted(missing))}")
            tar.extractall(out, members=members, filter="data")
        unpacked = out / "package"
        (unpacked / COMPLETE).write_text(f"{spec} {integrity}\n")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        os.replace(unpacked, target)
    return target
