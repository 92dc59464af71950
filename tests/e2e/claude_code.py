"""The real Claude Code, from the npm registry, pinned and checked, cached outside the repo.

Only the platform package (``@anthropic-ai/claude-code-<os>-<arch>``) is fetched: it
holds the native binary that ``@anthropic-ai/claude-code`` would install, and
``npm pack`` lets us check the registry's sha512 integrity before anything in it
runs. Nothing of it is committed; the cache is ``$KODELET_E2E_CACHE`` or
``~/.cache/kodelet-e2e``, resolved when this module is imported (before tests move
HOME to a temp dir).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from kodelet.agents.standins.messages import MessagesAPI, Script, Turn

from tests.e2e.npm import CACHE, InstallError, platform_tag, unpack

__all__ = ["CACHE", "InstallError", "Run", "claude_env", "install", "run_claude"]

VERSION = "2.1.332"
INTEGRITY = {
    "linux-x64": "sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckY"
    "xaeebC4h0DqiKzLcw==",
}


def install(cache: Path = CACHE) -> Path:
    """The pinned binary, fetched once into ``cache``; :class:`InstallError` says why not."""
    plat = platform_tag()
    if plat not in INTEGRITY:
        raise InstallError(f"no pinned Claude Code {VERSION} for {plat}")
    binary = cache / f"claude-code-{VERSION}-{plat}" / "claude"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    package = f"@anthropic-ai/claude-code-{plat}@{VERSION}"
    unpack(package, INTEGRITY[plat], binary.parent, only=["claude"], cache=cache)
    binary.chmod(0o755)
    return binary


@attrs.define
class Run:
    """What one ``claude -p`` session did, read from facts."""

    api: MessagesAPI
    returncode: int
    stdout: str
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        try:
            data = json.loads(self.stdout)
        except ValueError:
            raise AssertionError(
                f"claude printed no JSON: {self.stdout!r} {self.stderr!r}"
            ) from None
        assert isinstance(data, dict)
        return data

    def tool_results(self) -> list[dict[str, Any]]:
        return self.api.tool_results()

    def tool_result_text(self, index: int = 0) -> str:
        return self.api.tool_outputs()[index]

    def seen_by_model(self) -> str:
        """Everything the model was sent in the main loop, as one text to search."""
        return self.api.seen_by_model()


CARRIED = ("KODELET_HOME", "KODELET_MANAGED_DIR", "TMPDIR", "KODELET_DAEMON_DIR")
"""What an agent's hook calls get of the test's environment: kodelet's home and managed
rules folder (never this machine's), and the test's runtime directory, so that every
warm kodelet a run starts is stopped when the test ends."""


def claude_env(api: MessagesAPI, home: Path, path_prefix: Sequence[str] = ()) -> dict[str, str]:
    env = {
        "PATH": os.pathsep.join([*path_prefix, os.environ.get("PATH", "/usr/bin:/bin")]),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-standin",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "LANG": "C.UTF-8",
    }
    for key in CARRIED:
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def run_claude(
    binary: Path,
    project: Path,
    home: Path,
    turns: list[Turn] | Script,
    *,
    prompt: str = "go",
    allowed: str = "Bash Read Write Edit",
    cwd: Path | None = None,
    path_prefix: Sequence[str] = (),
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
    timeout: float = 120,
) -> Run:
    """``claude -p PROMPT`` in ``cwd`` (default ``project``) against a stand-in model."""
    script = turns if isinstance(turns, Script) else Script(turns)
    with MessagesAPI(script) as api:
        full = {**claude_env(api, home, path_prefix), **(env or {})}
        done = subprocess.run(
            [
                str(binary),
                "-p",
                prompt,
                "--output-format",
                "json",
                "--allowedTools",
                allowed,
                *args,
            ],
            cwd=cwd or project,
            env=full,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return Run(api, done.returncode, done.stdout, done.stderr)
