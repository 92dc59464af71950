"""The installed agent's version, beside the one kodelet was verified with.

Each dialect records the version its end-to-end tests run (``verified``) and what an
older version lacks (``gaps``: Claude Code runs skills' shell lines unguarded before
2.1.332). ``kodelet agents`` and ``kodelet AGENT status`` ask the agent's own binary
(its ``--version``, bounded by :data:`TIMEOUT`, its whole process group killed on
expiry) and say where the two differ: a version kodelet was not verified with, and
what is known to be missing in it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import Dialect

TIMEOUT = 10.0
"""Seconds an agent's ``--version`` may take (a Node CLI starts in one or two)."""
_OUTPUT_CAP = 64 * 1024
_VERSION = re.compile(r"\d+(?:\.\d+)+")


def parse(version: str) -> tuple[int, ...] | None:
    """``2.1.332`` as ``(2, 1, 332)``; None when no dotted number is in it."""
    found = _VERSION.search(version)
    return tuple(int(p) for p in found.group().split(".")) if found else None


def binary_path(dialect: Dialect, env: Mapping[str, str]) -> str | None:
    """The agent's binary as the shell finds it on ``env``'s PATH, or None."""
    return shutil.which(dialect.binary, path=env.get("PATH", os.defpath))


def installed_version(
    dialect: Dialect, env: Mapping[str, str], timeout: float = TIMEOUT
) -> tuple[str | None, str | None]:
    """(version, problem): what the agent's binary says of itself, or why it says
    nothing ("not found", timed out, exited non-zero, no version in its output). Only a
    binary found by absolute path runs: a relative PATH entry would run a file of
    whatever folder this is (a cloned repository's)."""
    from ..process import SpawnError, run_process

    found = binary_path(dialect, env)
    if found is None:
        return None, "not found"
    if not os.path.isabs(found):
        return None, f"not run: {found} is found through a relative PATH entry"
    home = env.get("HOME") or str(Path.home())
    try:
        ran = run_process(
            [found, *dialect.version_args],
            b"",
            cwd=home if os.path.isdir(home) else "/",
            env=env,
            timeout=timeout,
            stdout_cap=_OUTPUT_CAP,
        )
    except SpawnError as exc:
        return None, f"cannot run {found}: {exc}"
    failed = ran.failure(timeout)
    if failed is not None:
        return None, f"`{dialect.binary} {' '.join(dialect.version_args)}` {failed}"
    said = ran.stdout.decode("utf-8", "replace")
    found_version = _VERSION.search(said)
    if found_version is None:
        return None, f"`{dialect.binary} {' '.join(dialect.version_args)}` printed no version"
    return found_version.group(), None


def version_state(
    dialect: Dialect, env: Mapping[str, str], timeout: float = TIMEOUT
) -> dict[str, Any]:
    """What ``agents`` and ``status`` say of the agent's version, as JSON-ready data:
    ``version`` (None: not known, ``version_problem`` says why), ``verified``,
    ``unverified`` (a sentence when the two differ or the version is not known) and
    ``missing`` (what kodelet knows does not hold in that version)."""
    version, problem = installed_version(dialect, env, timeout)
    out = {"version": version, "version_problem": problem, "verified": dialect.verified}
    if problem == "not found":
        return {**out, "unverified": None, "missing": []}  # nothing installed to judge
    return {**out, **judged(dialect, version)}


def judged(dialect: Dialect, version: str | None) -> dict[str, Any]:
    """``unverified`` and ``missing`` for ``version`` of the agent (None: not known)."""
    title, verified = dialect.title, dialect.verified
    have, pinned = parse(version or ""), parse(verified)
    if version is None or have is None or pinned is None:
        missing = [f"{what} (before {title} {since})" for since, what in dialect.gaps]
        unverified = (
            f"the installed {title}'s version is not known; kodelet was verified with {verified}"
            + ("; if it is older, the lines below may not hold" if missing else "")
        )
        return {"unverified": unverified, "missing": missing}
    missing = [what for since, what in dialect.gaps if have < (parse(since) or ())]
    if have == pinned:
        return {"unverified": None, "missing": missing}
    side = "older" if have < pinned else "newer"
    return {
        "unverified": (
            f"{title} {version} is {side} than {verified}, the version kodelet was"
            " verified with; kodelet's tests have not run it"
        ),
        "missing": missing,
    }


def version_lines(dialect: Dialect, state: Mapping[str, Any]) -> list[str]:
    """The lines ``status`` prints for :func:`version_state`."""
    shown = state["version"] or state["version_problem"]
    lines = [f"version: {shown} (kodelet verified with {state['verified']})"]
    if state["unverified"]:
        lines.append(f"unverified: {state['unverified']}")
    where = state["version"] or "this version"
    lines += [f"missing in {where}: {m}" for m in state["missing"]]
    return lines
