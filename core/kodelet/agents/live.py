"""``kodelet verify --live``: the installed agent itself, driven by a stand-in model.

:mod:`.verify` runs the entry as the agent would; this module asks the agent. The real
binary starts in the current folder, non-interactively, against a stand-in of its model
API (:mod:`.standins`) that asks it to run each probe call in its shell tool, and what
happened is judged from facts in a sacrificial temporary folder: the file a deletion
would remove is still there, or the marker a command's run leaves is not. A control
call (the same wrapper around ``true``) must leave its marker, or the run proves nothing
and says so.

Every call is made safe to run before it is sent: the built-in deletion targets a file
in the sacrificial folder, and a user's command runs there (``cd FOLDER && ( COMMAND );
touch MARKER``), so a guard that does not hold costs nothing but that folder.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..errors import KodeletError
from .verify import ALLOW, Probe, Verdict, without_start_vars

__all__ = ["LIVE_AGENTS", "LiveError", "run_live"]

TIMEOUT = 300.0
DESCRIPTION = "kodelet verify --live"


class LiveError(KodeletError, RuntimeError):
    """The live run could not be made or proves nothing; the message says why and what to do."""


@attrs.frozen
class _Call:
    probe: Probe
    command: str
    """What the agent is asked to run."""
    ran: Callable[[], bool]
    """Whether the facts say it ran."""


def _marker_call(folder: Path, n: int, probe: Probe) -> _Call:
    marker = folder / f".ran-{n}"
    original = str(probe.input["command"])
    command = f"cd {shlex.quote(str(folder))} && ( {original}\n); touch {shlex.quote(str(marker))}"
    return _Call(attrs.evolve(probe, input={"command": command}), command, marker.exists)


def _calls(folder: Path, probes: Sequence[Probe]) -> list[_Call]:
    """The control call, the built-in deletion, and the user's calls, made safe."""
    victim = folder / "victim"
    victim.mkdir()
    keep = victim / "keep.txt"
    keep.write_text("kodelet verify --live: a guard that holds keeps this file\n")
    delete = f"rm -rf {shlex.quote(str(victim))}"
    out = [
        _marker_call(folder, 0, Probe("true", "Bash", {"command": "true"}, expect=ALLOW)),
        _Call(
            Probe(delete, "Bash", {"command": delete}, builtin=True),
            delete,
            lambda: not keep.exists(),
        ),
    ]
    users = [p for p in probes if not p.builtin and p.tool == "Bash"]
    out += [_marker_call(folder, n, p) for n, p in enumerate(users, start=1)]
    return out


@attrs.frozen
class _Agent:
    """How to start one agent non-interactively against a stand-in (whose
    ``tool_outputs`` say what its model was sent back for each call)."""

    title: str
    binary: str
    standin: Callable[[list[str]], Any]
    """The stand-in server for the commands to ask for, one tool call per turn."""
    argv: Callable[[str], list[str]]
    env: Callable[[Any, Path, Mapping[str, str]], dict[str, str]]


def _claude_standin(commands: list[str]) -> Any:
    from .standins.messages import MessagesAPI, Script, text, tool

    turns = [[tool("Bash", command=c, description=DESCRIPTION)] for c in commands]
    return MessagesAPI(Script([*turns, [text("done")]]))


def _claude_env(api: Any, scratch: Path, env: Mapping[str, str]) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-kodelet-verify",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def _gemini_standin(commands: list[str]) -> Any:
    from .standins.gemini import GeminiAPI, Script, call, text

    turns = [[call("run_shell_command", command=c, description=DESCRIPTION)] for c in commands]
    return GeminiAPI(Script([*turns, [text("done")]]))


def _gemini_env(api: Any, scratch: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The stand-in by its base URL, and an API key as the auth method. Gemini CLI takes
    its auth method from the user's settings (a system settings file must be root's), so
    the run gets a home of its own (``GEMINI_CLI_HOME``) holding a copy of the user's
    ``~/.gemini/settings.json`` (user-scope hooks included) and trusted folders, with the
    auth method set to the key."""
    user = Path(env.get("HOME") or Path.home()) / ".gemini"
    own = scratch / "gemini-home" / ".gemini"
    own.mkdir(parents=True)
    try:
        settings = json.loads((user / "settings.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        settings = {}
    except (OSError, ValueError) as exc:
        raise LiveError(f"cannot read {user / 'settings.json'}: {exc}") from None
    if not isinstance(settings, dict):
        raise LiveError(f"{user / 'settings.json'} is not a JSON object")
    security = settings.setdefault("security", {})
    auth = security.setdefault("auth", {}) if isinstance(security, dict) else None
    if not isinstance(auth, dict):
        raise LiveError(f"{user / 'settings.json'}: 'security.auth' is not an object")
    auth["selectedType"] = "gemini-api-key"
    auth.pop("enforcedType", None)
    (own / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    if (user / "trustedFolders.json").is_file():
        shutil.copyfile(user / "trustedFolders.json", own / "trustedFolders.json")
    return {
        "GOOGLE_GEMINI_BASE_URL": api.url,
        "GEMINI_API_KEY": "kodelet-verify",
        "GEMINI_CLI_HOME": str(own.parent),
    }


LIVE_AGENTS: Mapping[str, _Agent] = {
    "claude": _Agent(
        "Claude Code",
        "claude",
        _claude_standin,
        lambda prompt: ["-p", prompt, "--output-format", "json", "--allowedTools", "Bash"],
        _claude_env,
    ),
    "gemini": _Agent(
        "Gemini CLI",
        "gemini",
        _gemini_standin,
        lambda prompt: ["-p", prompt, "--yolo", "-m", "gemini-2.5-flash"],
        _gemini_env,
    ),
}
"""The agents ``--live`` drives."""

_DROPPED = ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")


def run_live(
    agent: str, probes: Sequence[Probe], cwd: Path, env: Mapping[str, str]
) -> list[Verdict]:
    """Start ``agent`` in ``cwd`` (with ``env``, its model the stand-in) and ask it to run
    the probe calls; what each did, from facts. :class:`LiveError` when it cannot."""
    spec = LIVE_AGENTS.get(agent)
    if spec is None:
        known = ", ".join(LIVE_AGENTS)
        raise LiveError(f"--live drives {known} only, not {agent}")
    binary = shutil.which(spec.binary, path=env.get("PATH"))
    if binary is None:
        raise LiveError(f"{spec.binary} is not on PATH: --live runs the installed {spec.title}")
    scratch = Path(tempfile.mkdtemp(prefix="kodelet-verify-"))
    folder = scratch / "sacrificial"
    folder.mkdir()
    try:
        calls = _calls(folder, probes)
        with spec.standin([c.command for c in calls]) as api:
            full = {k: v for k, v in without_start_vars(env).items() if k not in _DROPPED}
            full.update(spec.env(api, scratch, env))
            try:
                done = subprocess.run(
                    [binary, *spec.argv(DESCRIPTION)],
                    cwd=cwd,
                    env=full,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=TIMEOUT,
                )
            except subprocess.TimeoutExpired:
                raise LiveError(f"{spec.title} did not finish within {TIMEOUT:g} s") from None
            except OSError as exc:
                raise LiveError(f"cannot start {binary}: {exc.strerror or exc}") from None
            outputs = api.tool_outputs()
        if not calls[0].ran():
            said = (done.stderr.strip() or done.stdout.strip())[-500:]
            raise LiveError(
                f"{spec.title} did not run the control call (`true` in the same wrapper), so"
                f" the run proves nothing (exit {done.returncode}): {said or 'no output'}"
            )
        verdicts = []
        for n, c in enumerate(calls[1:], start=1):
            said = outputs[n].strip() if n < len(outputs) else ""
            if c.ran():
                verdicts.append(Verdict(c.probe, "allowed", "it ran in the sacrificial folder"))
            else:
                verdicts.append(Verdict(c.probe, "blocked", _first_line(said) or "it did not run"))
        return verdicts
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""
