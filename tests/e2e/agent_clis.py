"""The real agent CLIs other than Claude Code, pinned, and one way to drive each offline.

Codex and Qwen Code come from the npm registry through :mod:`tests.e2e.npm` (sha512
checked, cached outside the repository); each run gets a fresh HOME, a project, the
stand-in model API of :mod:`tests.e2e.openai_api` and ``kodelet`` on PATH, and what the
run did is read from facts: the files its tools wrote, what the model was sent back.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
import pytest

from tests.e2e.conftest import kodelet
from tests.e2e.npm import CACHE, InstallError, platform_tag, unpack
from tests.e2e.openai_api import OpenAIAPI, Script, Turn


@attrs.frozen
class Pin:
    """One CLI at one version: the npm package per platform, its sha512, and the file to
    run inside it."""

    name: str
    version: str
    packages: Mapping[str, tuple[str, str]]
    """Platform -> (``name@version`` of the package holding it, its integrity)."""
    entry: str
    """The executable (or the script ``node`` runs), relative to the package root."""
    needs: tuple[str, ...] = ()
    """What to unpack besides ``entry``; empty with no ``needs``: the whole package."""


CODEX = Pin(
    "codex",
    "0.169.0",
    {
        "linux-x64": (
            "@openai/codex@0.169.0-linux-x64",
            "sha512-o05NyAOCDygSPRo1yinzxvkRSdmsZyBD9E7mbpmjRanSfM8lypqWtQgEo4XfNkwhuCR2aFu8ml"
            "GOsQGFXVbVww==",
        ),
    },
    entry="vendor/x86_64-unknown-linux-musl/bin/codex",
    needs=("vendor/x86_64-unknown-linux-musl/bin/codex",),
)
QWEN = Pin(
    "qwen",
    "0.24.4",
    {
        plat: (
            "@qwen-code/qwen-code@0.24.4",
            "sha512-pmexy/Nj+BKd3Un1ogqGQE8V4GJn5B6N9PQOrU1GH+lMR29kn6Bgf6YdbZa8hNIoTmAKT1LTP"
            "K+P8TibZRPPVg==",
        )
        for plat in ("linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64")
    },
    entry="cli-entry.js",
)


def install(pin: Pin, cache: Path = CACHE) -> Path:
    """The pinned CLI's entry file, fetched once; :class:`InstallError` says why not."""
    plat = platform_tag()
    if plat not in pin.packages:
        raise InstallError(f"no pinned {pin.name} {pin.version} for {plat}")
    spec, integrity = pin.packages[plat]
    target = cache / f"{pin.name}-{pin.version}-{plat}"
    root = unpack(spec, integrity, target, only=pin.needs, cache=cache)
    return root / pin.entry


@attrs.define
class Run:
    """What one agent session did."""

    api: OpenAIAPI
    returncode: int
    stdout: str
    stderr: str

    def tool_outputs(self) -> list[str]:
        return self.api.tool_outputs()

    def seen_by_model(self) -> str:
        return self.api.seen_by_model()


def agent_env(home: Path, path_prefix: Sequence[str], **extra: str) -> dict[str, str]:
    """A fresh HOME; the warm kodelet on, as for a user, in the test's own runtime
    directory so every warm kodelet the run starts is stopped when the test ends.
    ``kodelet`` is on PATH only through ``path_prefix``: folders of the inherited PATH
    holding one (a nox session's venv) are left out."""
    inherited = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    kept = [d for d in inherited if d and not os.access(os.path.join(d, "kodelet"), os.X_OK)]
    env = {
        "PATH": os.pathsep.join([*path_prefix, *kept]),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        **extra,
    }
    for key in ("KODELET_HOME", "TMPDIR", "KODELET_DAEMON_DIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


Launch = Callable[[OpenAIAPI, "Agent", Sequence[str]], tuple[list[str], dict[str, str]]]
"""(command, environment beside :func:`agent_env`) of one run against the stand-in."""


@attrs.define
class Agent:
    """One pinned CLI in one project and fresh HOME, with ``kodelet`` beside the tests."""

    name: str
    entry: Path
    project: Path
    home: Path
    venv_bin: Path
    launch: Launch

    def kodelet(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return kodelet(self.venv_bin, *args, cwd=self.project, check=check)

    def run(
        self,
        turns: list[Turn] | Script,
        *,
        on_path: bool = True,
        args: Sequence[str] = (),
        timeout: float = 90,
    ) -> Run:
        """One session in the project against the stand-in; ``on_path=False`` leaves
        ``kodelet`` off PATH (as on a machine where it is not installed)."""
        script = turns if isinstance(turns, Script) else Script(turns)
        with OpenAIAPI(script) as api:
            command, extra = self.launch(api, self, args)
            env = agent_env(self.home, [str(self.venv_bin)] if on_path else [], **extra)
            done = subprocess.run(
                command,
                cwd=self.project,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
            return Run(api, done.returncode, done.stdout, done.stderr)


def connected(pin: Pin, launch: Launch, project: Path, home: Path, venv_bin: Path) -> Agent:
    """The agent with the guard in ``.kodelet/hooks`` and kodelet installed in the
    project; the test fails (never skips) when the pinned CLI cannot be had."""
    try:
        entry = install(pin)
    except (InstallError, OSError) as exc:
        pytest.fail(f"cannot install {pin.name} {pin.version}: {exc}", pytrace=False)
    agent = Agent(pin.name, entry, project, home, venv_bin, launch)
    write_hook(project, "guard", GUARD)
    agent.kodelet(pin.name, "install")
    return agent


def codex_config(project: Path) -> str:
    """Codex's user config.toml: the stand-in as a custom Responses provider (its URL
    given per run with ``-c``), and the project trusted (Codex reads a project's
    ``.codex/`` only then). kodelet records its hooks' trust in this file too."""
    return f"""model = "standin"
model_provider = "standin"

[model_providers.standin]
name = "standin"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"

[projects."{project}"]
trust_level = "trusted"
"""


def codex(api: OpenAIAPI, agent: Agent, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``codex exec go`` against the stand-in Responses API. Hooks run only as trusted
    by ``config.toml`` (``kodelet codex install`` records it)."""
    config = agent.home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    text = config.read_text() if config.exists() else ""
    if "model_provider" not in text:
        config.write_text(codex_config(agent.project) + "\n" + text)
    base_url = f'model_providers.standin.base_url="{api.url}"'
    command = [str(agent.entry), "exec", "--dangerously-bypass-approvals-and-sandbox"]
    return [*command, "-c", base_url, *args, "go"], {}


def qwen(api: OpenAIAPI, agent: Agent, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``qwen -p go --yolo`` against the stand-in Chat Completions API."""
    command = ["node", str(agent.entry), "-p", "go", "--yolo", "--auth-type", "openai", *args]
    return command, {
        "OPENAI_BASE_URL": api.url,
        "OPENAI_API_KEY": "sk-standin",
        "OPENAI_MODEL": "standin",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }


GUARD = """#!/bin/bash
# A guard written once, for kodelet's own tool names: it never heard of exec_command
# or run_shell_command.
case "$1" in
  hook) echo before_tool_call ;;
  run)
    payload=$(cat)
    printf '%s\\n' "$payload" >> "$KODELET_SEEN"
    grep -q '"tool_name": *"bash"' <<< "$payload" || exit 0
    case "$payload" in
      *'danger'*) echo '{"blocked": true, "reason": "kodelet guard: no danger here"}' ;;
      *'sudo '*) echo '{"input": {"command": "echo rewritten > rewritten.txt"}}' ;;
      *'explain'*) echo '{"additional_context": ["kodelet context: the build dir is generated"]}' ;;
    esac
    ;;
esac
"""

AFTER = """#!/bin/bash
case "$1" in
  hook) echo after_tool_call ;;
  run) grep -q explain && echo '{"additional_context": ["kodelet after: the output is fine"]}' ;;
esac
exit 0
"""

STOP = """#!/bin/bash
case "$1" in
  hook) echo agent_stop ;;
  run) cat > /dev/null; echo '{"follow_up_messages": ["kodelet follow-up: run the tests"]}' ;;
esac
"""


def write_hook(project: Path, name: str, text: str) -> Path:
    path = project / ".kodelet" / "hooks" / name
    path.write_text(text.replace("$KODELET_SEEN", str(project / ".kodelet" / "seen.jsonl")))
    path.chmod(0o755)
    return path


def seen(project: Path) -> list[dict[str, object]]:
    """The payloads the guard was given."""
    path = project / ".kodelet" / "seen.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]
