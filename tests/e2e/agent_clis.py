"""The real agent CLIs other than Claude Code, pinned, and one way to drive each offline.

Codex, Qwen Code, Gemini CLI, Copilot CLI and opencode come from the npm registry
through :mod:`tests.e2e.npm` (sha512 checked, cached outside the repository); each run
gets a fresh HOME, a project, a stand-in model API (:mod:`kodelet.agents.standins.openai`, or
:mod:`kodelet.agents.standins.gemini` for Gemini CLI) and ``kodelet`` on PATH, and what the run
did is read from facts: the files its tools wrote, what the model was sent back.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from kodelet import testing
from kodelet.agents.standins import gemini as gemini_api
from kodelet.agents.standins.base import StandIn
from kodelet.agents.standins.openai import OpenAIAPI, Script
from kodelet.warm import control

from tests.e2e.claude_code import CARRIED
from tests.e2e.npm import CACHE, InstallError, platform_tag, unpack
from tests.kit import redaction
from tests.kit.cli import venv_kodelet as kodelet


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
    # The host of its code mode (a JavaScript ``exec`` calling the other tools), which
    # Codex runs with a model it knows.
    needs=(
        "vendor/x86_64-unknown-linux-musl/bin/codex",
        "vendor/x86_64-unknown-linux-musl/bin/codex-code-mode-host",
    ),
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
GEMINI = Pin(
    "gemini-cli",
    "0.61.0",
    {
        plat: (
            "@google/gemini-cli@0.61.0",
            "sha512-dbQ9A0qBtFJNi6XBkHvfZ6Azpn6PNgH/P8h2MZ67RLlX8hSAVjup39CRWqdRxZv7YXIuhrFaytr8y0"
            "jKnkoxnQ==",
        )
        for plat in ("linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64")
    },
    entry="bundle/gemini.js",
)
COPILOT = Pin(
    "copilot",
    "1.0.102",
    {
        "linux-x64": (
            "@github/copilot-linux-x64@1.0.102",
            "sha512-eGHPbsP0p2QgfVZCjtbGBFZPBOJQ0DN7xIbBRAo7oG8b1zfLirQIdfI4h8Iy68Dv2cKJGJZg2/EO7W"
            "7KpIMJOw==",
        ),
    },
    entry="copilot",
    needs=("copilot",),
)
OPENCODE = Pin(
    "opencode",
    "1.18.33",
    {
        "linux-x64": (
            "opencode-linux-x64@1.18.33",
            "sha512-q/t/3p2CTxOT9y2kvjesb/LZab2+1eqlhhWA02Be6mjTtmYtNBcBsrI5yDo4Fw7ZSPBW2oyMIGMN"
            "RqiKQjiAWw==",
        ),
    },
    entry="bin/opencode",
    needs=("bin/opencode",),
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

    api: StandIn
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
    for key in CARRIED:
        if key in os.environ:
            env[key] = os.environ[key]
    return env


Launch = Callable[[Any, "Agent", Sequence[str]], tuple[list[str], dict[str, str]]]
"""(command, environment beside :func:`agent_env`) of one run against the stand-in."""

StandInFor = Callable[[list[Any]], StandIn]
"""The stand-in model API that answers a run's scripted turns."""


def openai(turns: list[Any]) -> StandIn:
    return OpenAIAPI(Script(turns))


def gemini_generate(turns: list[Any]) -> StandIn:
    return gemini_api.GeminiAPI(gemini_api.Script(turns))


@attrs.define
class Agent:
    """One pinned CLI in one project and fresh HOME, with ``kodelet`` beside the tests."""

    name: str
    entry: Path
    project: Path
    home: Path
    venv_bin: Path
    launch: Launch
    stand_in: StandInFor = openai

    def kodelet(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return kodelet(self.venv_bin, *args, cwd=self.project, check=check)

    def command(
        self, api: StandIn, *, on_path: bool = True, args: Sequence[str] = ()
    ) -> tuple[list[str], dict[str, str]]:
        """(command, environment) of a session against ``api``; ``on_path=False`` leaves
        ``kodelet`` off PATH (as on a machine where it is not installed)."""
        command, extra = self.launch(api, self, args)
        return command, agent_env(self.home, [str(self.venv_bin)] if on_path else [], **extra)

    def run(
        self,
        turns: list[Any],
        *,
        on_path: bool = True,
        args: Sequence[str] = (),
        timeout: float = 90,
    ) -> Run:
        """One session in the project against the stand-in (see :meth:`command`)."""
        with self.stand_in(turns) as api:
            command, env = self.command(api, on_path=on_path, args=args)
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


def connected(
    name: str,
    pin: Pin,
    launch: Launch,
    project: Path,
    home: Path,
    venv_bin: Path,
    stand_in: StandInFor = openai,
) -> Agent:
    """The agent (``kodelet NAME``) with the guard in ``.kodelet/hooks`` and kodelet
    installed in the project; the test fails (never skips) when the pinned CLI cannot
    be had."""
    try:
        entry = install(pin)
    except (InstallError, OSError) as exc:
        pytest.fail(f"cannot install {pin.name} {pin.version}: {exc}", pytrace=False)
    agent = Agent(name, entry, project, home, venv_bin, launch, stand_in)
    write_hook(project, "guard", GUARD)
    agent.kodelet(name, "install")
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


def gemini(api: Any, agent: Agent, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``gemini -p go --yolo`` with a named model (no routing call to answer) against the
    stand-in generateContent API, which takes any key: Gemini CLI is told to use one."""
    user = agent.home / ".gemini" / "settings.json"
    if not user.exists():
        user.parent.mkdir(parents=True, exist_ok=True)
        user.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    command = ["node", str(agent.entry), "-p", "go", "--yolo", "-m", "gemini-2.5-flash", *args]
    return command, {
        "GOOGLE_GEMINI_BASE_URL": api.url,
        "GEMINI_API_KEY": "standin",
        # A project's .gemini/settings.json, hooks included, is read only in a trusted
        # folder; --skip-trust comes too late for the settings.
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


COPILOT_UNPACKED = CACHE / "copilot-unpacked"
"""Where the binary unpacks the rest of itself on first run (``COPILOT_CACHE_HOME``):
shared by every test, so a fresh HOME does not cost 230 MB."""


def copilot(api: Any, agent: Agent, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``copilot -p go`` offline against the stand-in Chat Completions API."""
    return [str(agent.entry), "-p", "go", "--allow-all-tools", *args], {
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": api.url,
        "COPILOT_PROVIDER_API_KEY": "standin",
        "COPILOT_MODEL": "gpt-4.1",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_CACHE_HOME": str(COPILOT_UNPACKED),
        # Trusts the working directory: Copilot loads .github/hooks only then.
        "COPILOT_ALLOW_ALL": "true",
    }


def opencode_config(api: Any) -> dict[str, object]:
    """The stand-in as an OpenAI-compatible provider (bundled with opencode), every
    tool allowed: nobody answers a permission prompt in ``opencode run``."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "standin": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "standin",
                "options": {"baseURL": api.url, "apiKey": "standin"},
                "models": {"standin": {"name": "standin", "tool_call": True}},
            }
        },
        "model": "standin/standin",
        "small_model": "standin/standin",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow", "external_directory": "allow"},
    }


def opencode(api: Any, agent: Agent, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``opencode run go`` (or ``opencode ARGS``: ``serve``) offline against the
    stand-in Chat Completions API; one turn, and ``run`` exits when the session idles."""
    config = agent.home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(opencode_config(api)))
    return [str(agent.entry), *(args or ("run", "go"))], {
        "OPENCODE_DISABLE_AUTOUPDATE": "true",
        "OPENCODE_DISABLE_MODELS_FETCH": "true",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "true",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
        # opencode installs its plugin SDK into config folders in the background:
        # offline, that fails at once instead of reaching the registry.
        "npm_config_offline": "true",
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
    seen_file = str(project / ".kodelet" / "seen.jsonl")
    return testing.write_hook(
        project / ".kodelet" / "hooks", name, text.replace("$KODELET_SEEN", seen_file)
    )


def seen(project: Path) -> list[dict[str, object]]:
    """The payloads the guard was given."""
    path = project / ".kodelet" / "seen.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


def assert_each_hook_runs_once(agent: Agent, turns: list[Any], command: str) -> None:
    """kodelet installed at user scope beside the project's entry: the model's shell
    call ``command`` (in ``turns``) ran, and the guard saw it once."""
    agent.kodelet(agent.name, "install", "--scope", "user")
    run = agent.run(turns)
    assert run.returncode == 0, run.stderr
    assert (agent.project / "once.txt").exists(), run.stderr
    calls = [p for p in seen(agent.project) if p.get("tool_name") == "bash"]
    assert [p["tool_input"]["command"] for p in calls] == [command]  # type: ignore[index]


def assert_the_redaction_holds(agent: Agent, turns: list[Any]) -> None:
    """docs/EVENTS.md's redaction as the project's only hook besides the guard: the
    call in ``turns`` reads ``keys.txt``, and the model is shown the key masked, never
    the key."""
    (agent.project / "keys.txt").write_text(f"AWS_ACCESS_KEY_ID={redaction.KEY}\n")
    write_hook(agent.project, "redact", redaction.HOOK)
    run = agent.run(turns)
    assert run.returncode == 0, run.stderr
    assert "AWS_ACCESS_KEY_ID=[redacted]" in run.tool_outputs()[0], run.tool_outputs()
    assert redaction.KEY not in run.seen_by_model()


MISSED_BY_THE_README_GUARD = "rm -r -f ~/victim"
"""A delete outside the project that the README's ``grep -q 'rm -rf'`` guard lets by."""


def assert_the_recommended_rules_block(agent: Agent, turns: list[Any]) -> None:
    """With ``kodelet rules enable recommended`` and no hook of the user's, the model's
    shell call :data:`MISSED_BY_THE_README_GUARD` (in ``turns``) is refused, the files
    stay, and the model is told which rule refused it."""
    (agent.project / ".kodelet" / "hooks" / "guard").unlink()
    victim = agent.home / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep\n")
    agent.kodelet("rules", "enable", "recommended")
    run = agent.run(turns)
    assert run.returncode == 0, run.stderr
    assert (victim / "keep.txt").exists(), run.tool_outputs()
    assert "kodelet rule " in run.seen_by_model(), run.tool_outputs()


def native_client(venv_bin: Path) -> Path:
    """This kodelet's native client; the test fails (never skips) without one: the e2e
    session's editable install builds it wherever a C compiler is, and every agent must
    be seen running it."""
    binary = venv_bin / "kodelet-hook"
    if hook_client(venv_bin) != str(binary):
        pytest.fail(
            f"{binary} is not the native client: setup.py built none (is cc on PATH?)",
            pytrace=False,
        )
    return binary


def start_warm(venv_bin: Path, project: Path, home: Path) -> None:
    """The project's warm kodelet, started with the environment the agents give their
    hook calls (its ``KODELET_*`` settings pick which warm kodelet a call finds), so
    that no call of the session is answered in-process while one starts."""
    subprocess.run(
        [str(venv_bin / "kodelet"), "daemon", "start"],
        cwd=project,
        env=agent_env(home, [str(venv_bin)]),
        check=True,
        capture_output=True,
    )


def answered_by_the_native_client(project: Path) -> int:
    """How many calls the project's warm kodelet answered, all of them sent by the native
    client (none by the Python client, which would mean its fallback ran)."""
    [info] = [i for i in control.running() if i.get("project") == str(project)]
    assert info["calls"] >= 1, info
    assert info["clients"] == {"native": info["calls"]}, info
    return int(info["calls"])


def assert_a_dangerous_call_is_blocked_by_the_native_client(agent: Agent, turns: list[Any]) -> None:
    """The guard blocks the model's dangerous shell call with its reason, every hook call
    of the session going through the native client to the project's warm kodelet
    (started first)."""
    native_client(agent.venv_bin)
    start_warm(agent.venv_bin, agent.project, agent.home)
    run = agent.run(turns)
    assert run.returncode == 0, run.stderr
    assert not (agent.project / "pwned").exists()
    assert "kodelet guard: no danger here" in run.tool_outputs()[0]
    assert seen(agent.project)[0]["tool_name"] == "bash"
    answered_by_the_native_client(agent.project)


MANAGED_RULE = """
[[rules]]
name = "no-pwned"
decision = "deny"
reason = "The administrator forbids pwned files."
program = ["touch"]
path = ["**/pwned"]
"""

PROJECT_LIFTING_IT = """
disable = ["no-pwned"]

[[rules]]
name = "touch-anything"
decision = "allow"
program = ["touch"]
"""


def assert_a_managed_rule_holds(agent: Agent, turns: list[Any]) -> None:
    """The machine's managed rules (``$KODELET_MANAGED_DIR``, which the agent's hook calls
    get from the test) refuse the call inside the agent, and a cloned project's rule file
    that disables and allows it changes nothing."""
    (agent.project / ".kodelet" / "hooks" / "guard").unlink()
    managed = Path(os.environ["KODELET_MANAGED_DIR"])
    managed.mkdir(parents=True, exist_ok=True)
    (managed / "rules.toml").write_text(MANAGED_RULE)
    (agent.project / ".kodelet" / "rules.toml").write_text(PROJECT_LIFTING_IT)
    run = agent.run(turns)
    assert run.returncode == 0, run.stderr
    assert not (agent.project / "pwned").exists(), run.tool_outputs()
    assert "kodelet rule no-pwned (managed)" in run.seen_by_model(), run.tool_outputs()


def hook_client(venv_bin: Path) -> str:
    """How the command ``install`` writes at user and local scope ends before its
    arguments: this kodelet's native client where setup.py built one (an ELF program),
    else its lean Python client."""
    binary = venv_bin / "kodelet-hook"
    native = binary.is_file() and binary.read_bytes()[:4] == b"\x7fELF"
    return str(binary) if native else "/kodelet/warm/hook.py"
