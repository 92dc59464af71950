"""Packages into kodelet's own environment, however kodelet was installed.

A native plugin must land where kodelet imports from. ``python -m pip`` does that in a
plain venv, as ``llm install`` does; but the venvs pipx and ``uv tool`` make have no
pip, and a package added behind their back is not in their record of the tool. So a
pipx install is asked to ``pipx inject`` (which keeps it across ``pipx upgrade``), a
``uv tool`` install or a venv without pip gets ``uv pip --python`` (uv's own
installer, pip's syntax), and where the tool is not on PATH the user gets the exact
command instead of a traceback.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from .errors import KodeletError

__all__ = ["Plan", "Unavailable", "installed_with", "plan"]

_TAKES_VALUE = frozenset(
    [
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-e",
        "--editable",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--trusted-host",
        "-C",
        "--config-settings",
        "--no-binary",
        "--only-binary",
        "--upgrade-strategy",
        "--progress-bar",
        "--cache-dir",
        "--log",
        "--proxy",
        "--retries",
        "--timeout",
        "--exists-action",
        "--cert",
        "--client-cert",
        "--src",
        "--root",
        "--prefix",
        "-t",
        "--target",
        "--platform",
        "--python-version",
        "--implementation",
        "--abi",
    ]
)
_YES = ("-y", "--yes")


class Unavailable(KodeletError):
    """The installer kodelet's environment needs is not on PATH; the message holds the
    command to run by hand."""


@attrs.frozen
class Plan:
    """One installer run: what runs, with what environment, and what it is."""

    argv: list[str]
    env: dict[str, str] | None
    how: str


def installed_with(prefix: Path | None = None) -> str:
    """``pipx``, ``uv tool`` or ``venv``: what made kodelet's environment."""
    prefix = Path(sys.prefix) if prefix is None else prefix
    if (prefix / "pipx_metadata.json").is_file():
        return "pipx"
    if (prefix / "uv-receipt.toml").is_file():
        return "uv tool"
    return "venv"


def _split(args: Sequence[str]) -> tuple[list[str], list[str], bool]:
    """pip's arguments as (packages, options, editable)."""
    packages: list[str] = []
    options: list[str] = []
    editable = False
    words = iter(args)
    for word in words:
        name = word.split("=", 1)[0]
        if name in ("-e", "--editable"):
            editable = True
            value = word.split("=", 1)[1] if "=" in word else next(words, None)
            if value is not None:
                packages.append(value)
        elif name in _TAKES_VALUE and "=" not in word:
            options += [word, *[v for v in [next(words, None)] if v is not None]]
        elif word.startswith("-"):
            options.append(word)
        else:
            packages.append(word)
    return packages, options, editable


def _tool(name: str, argv: list[str], instead: str = "") -> str:
    found = shutil.which(name)
    if found is None:
        raise Unavailable(
            instead
            or f"kodelet's environment is changed with {name}, which is not on PATH: run"
            f" {shlex.join(argv)}"
        )
    return found


def plan(action: str, args: Sequence[str], prefix: Path | None = None) -> Plan:
    """How to ``install`` or ``uninstall`` ``args`` (pip's syntax) in kodelet's own
    environment."""
    prefix = Path(sys.prefix) if prefix is None else prefix
    how = installed_with(prefix)
    if how == "pipx":
        packages, options, editable = _split([a for a in args if a not in _YES])
        verb = "inject" if action == "install" else "uninject"
        argv = ["pipx", verb, prefix.name]
        if action == "install":
            argv += ["--editable"] if editable else []
            argv += [f"--pip-args={shlex.join(options)}"] if options else []
        argv += packages
        argv[0] = _tool("pipx", argv)
        env = {**os.environ, "PIPX_HOME": str(prefix.parent.parent)}
        return Plan(argv, env, f"pipx {verb} (kodelet was installed with pipx)")
    if how == "venv" and importlib.util.find_spec("pip") is not None:
        yes = ["-y"] if action == "uninstall" else []
        argv = [sys.executable, "-m", "pip", action, *yes, *args]
        return Plan(argv, None, "pip in kodelet's environment")
    argv = ["uv", "pip", action, "--python", sys.executable, *[a for a in args if a not in _YES]]
    instead = (
        ""
        if how == "uv tool"
        else (
            f"kodelet's environment has no pip: run {shlex.quote(sys.executable)} -m ensurepip,"
            f" then this command again (or put uv on PATH)"
        )
    )
    argv[0] = _tool("uv", argv, instead)
    why = "kodelet was installed with uv tool" if how == "uv tool" else "it has no pip"
    return Plan(argv, None, f"uv pip in kodelet's environment ({why})")
