"""``kodelet verify``: run an installed hook entry the way its agent runs it, and read the
answer the way that agent reads it.

A guard is only as good as the entry that calls it: the agent must find the entry, start
its command in the environment it gives hooks, send its own input shape, and act on the
answer in its own way (Claude Code blocks on exit 2 and on ``permissionDecision: deny``,
Gemini CLI on a top-level ``decision``, Copilot CLI on any non-zero exit, opencode's
plugin on ``block``; a crash or a timeout lets the call through in some agents and not in
others: each dialect's :meth:`~kodelet.agents.base.Dialect.outcome`, beside the
:meth:`~kodelet.agents.base.Dialect.say` it reads). This module does each of those steps
as the agent does, for a tool call that is never run: only the hook is. The probes are
shell commands in the agent's shell tool and one file write in its file tool.

It knows agents by their names in :data:`kodelet.agents.DIALECTS`;
finding the entries is the CLI's job (:mod:`kodelet.cli.verify_cmd`), since the agents'
settings files are read there.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from . import DIALECTS
from .base import OUTCOMES, Ran

__all__ = [
    "BLOCK",
    "Entry",
    "Probe",
    "Verdict",
    "builtin_probes",
    "hook_env",
    "payload",
    "run_entry",
    "user_probes",
    "verify",
    "without_start_vars",
]

SESSION = "kodelet-verify"
"""The session id of every probe: a guard's own log shows where a call came from."""


BLOCK = "block"
ALLOW = "allow"


@attrs.frozen
class Probe:
    """One tool call to put to the hook (never run)."""

    label: str
    """What ``verify`` prints: the shell command, or ``Write <path>``."""
    tool: str
    """Claude Code's tool name (``Bash``, ``Write``); each agent's own is its dialect's
    ``shell_tool`` and ``write_tool``."""
    input: Mapping[str, Any]
    """The tool input under Claude Code's keys."""
    expect: str | None = None
    """:data:`BLOCK`, :data:`ALLOW`, or None: reported only."""
    builtin: bool = False


def builtin_probes(project: Path) -> list[Probe]:
    """The dangerous calls ``verify`` always puts: reported, never expected (no guard
    of kodelet's own stops ``rm -rf``; the user says what theirs must stop)."""
    config = project / ".kodelet" / "config.toml"
    text = "[hooks]\nfail_closed = false\n"
    return [
        Probe("rm -rf /", "Bash", {"command": "rm -rf /"}, builtin=True),
        Probe("rm -rf ~", "Bash", {"command": "rm -rf ~"}, builtin=True),
        Probe(
            "echo '[hooks]' > .kodelet/config.toml",
            "Bash",
            {"command": "echo '[hooks]' > .kodelet/config.toml"},
            builtin=True,
        ),
        Probe(
            f"Write {config}",
            "Write",
            {"file_path": str(config), "content": text},
            builtin=True,
        ),
    ]


def user_probes(block: Iterable[str], allow: Iterable[str]) -> list[Probe]:
    """``--expect-block`` and ``--expect-allow`` shell commands, in that order."""
    return [Probe(c, "Bash", {"command": c}, expect=BLOCK) for c in block] + [
        Probe(c, "Bash", {"command": c}, expect=ALLOW) for c in allow
    ]


@attrs.frozen
class Entry:
    """One hook entry an agent runs before a tool call: a command or (Claude Code) a URL."""

    agent: str
    scope: str
    path: Path
    """The settings (or plugin) file it is in."""
    command: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    timeout: float | None = None
    """Seconds, as the entry says; None: the agent's default."""
    blocks_on_failure: bool = False
    """Claude Code's ``onFailure: "block"``: a failing command blocks instead of warning."""
    matcher: str | None = None
    """The group's tool-name pattern; None or ``*``: every tool."""
    runs: bool = True
    """False when the agent will not run it (Codex: not trusted); :attr:`why_not` says why."""
    why_not: str = ""

    def matches(self, tool: str) -> bool:
        """The entry runs for ``tool``, as Claude Code reads a matcher (a list of names,
        else a regular expression searched in the name: :mod:`kodelet.claude.matchers`)."""
        from ..claude.matchers import Matcher, MatcherError

        try:
            return Matcher(self.matcher)(tool)
        except MatcherError:
            return self.matcher == tool


@attrs.frozen
class Verdict:
    """What the agent does with one probe."""

    probe: Probe
    outcome: str
    """One of :data:`~kodelet.agents.base.OUTCOMES`."""
    reason: str

    @property
    def held(self) -> bool | None:
        """Whether the expectation holds; None when there is none. An ask or a rewrite
        stops the call as asked from running unattended: it holds a block."""
        if self.probe.expect is None:
            return None
        if self.probe.expect == BLOCK:
            return self.outcome != "allowed"
        return self.outcome == "allowed"

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.probe.label,
            "tool": self.probe.tool,
            "builtin": self.probe.builtin,
            "expect": self.probe.expect,
            "outcome": self.outcome,
            "reason": self.reason,
            "held": self.held,
        }


def agent_tool(agent: str, tool: str) -> str | None:
    """The tool name ``agent``'s entries see for Claude's ``Bash`` or ``Write``; None when
    the agent has no such tool (Codex writes no file)."""
    dialect = DIALECTS[agent]
    return dialect.shell_tool if tool == "Bash" else dialect.write_tool


def pre_tool_event(agent: str) -> str:
    return DIALECTS[agent].agent_event("PreToolUse")


def payload(agent: str, probe: Probe, cwd: Path) -> dict[str, Any]:
    """The hook input ``agent`` sends before running ``probe`` in ``cwd``."""
    dialect = DIALECTS[agent]
    tool = agent_tool(agent, probe.tool)
    if tool is None:
        raise LookupError(f"{agent} has no {probe.tool} tool")
    return {
        "session_id": SESSION,
        "cwd": str(cwd),
        "hook_event_name": pre_tool_event(agent),
        "tool_name": tool,
        "tool_input": dialect._input(tool, dict(probe.input), to_claude=False),
        "tool_use_id": "kodelet-verify-1",
        **dialect.hook_input,
    }


def hook_env(agent: str, cwd: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The environment ``agent``, started in ``cwd`` from a shell with ``env``, gives
    its hooks: that environment (agents pass theirs on), with the agent's own project
    variables set to ``cwd`` and every other agent's taken out (a ``verify`` run inside
    another agent's session must not lend the hook that session's project)."""
    out = without_start_vars(env)
    for name in DIALECTS[agent].start_vars:
        out[name] = str(cwd)
    out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return out


def without_start_vars(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without any agent's :attr:`~kodelet.agents.base.Dialect.start_vars`: a run
    from inside another agent's session must not lend a hook that session's folder."""
    names = {n for d in DIALECTS.values() for n in d.start_vars}
    return {k: v for k, v in env.items() if k not in names}


def run_entry(
    agent: str, entry: Entry, data: Mapping[str, Any], cwd: Path, env: Mapping[str, str]
) -> Ran:
    """Run ``entry`` on the hook input ``data`` as ``agent`` does: a command through
    ``/bin/sh -c`` in ``cwd`` with ``env`` on stdin-JSON, or a POST of it to the URL."""
    timeout = entry.timeout or DIALECTS[agent].hook_timeout
    raw = json.dumps(data, ensure_ascii=False).encode()
    if entry.url is not None:
        return _post(entry.url, dict(entry.headers), raw, timeout)
    assert entry.command is not None
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", entry.command],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return Ran(None, failure=f"cannot start /bin/sh: {exc.strerror or exc}")
    try:
        out, err = proc.communicate(raw, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        return Ran(None, failure=f"timed out after {timeout:g} s")
    text, errors = out.decode(errors="replace"), err.decode(errors="replace")
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        return Ran(None, text, errors, failure=f"killed by {name}")
    return Ran(proc.returncode, text, errors)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _post(url: str, headers: dict[str, str], raw: bytes, timeout: float) -> Ran:
    request = urllib.request.Request(
        url, data=raw, headers={"Content-Type": "application/json", **headers}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return Ran(0, response.read().decode(errors="replace"))  # as a command's exit 0
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        return Ran(exc.code, stderr=body, failure=f"{url} answered HTTP {exc.code}")
    except (urllib.error.URLError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        return Ran(None, failure=f"{url} does not answer: {why}")


def verify(
    agent: str, entries: Sequence[Entry], probes: Sequence[Probe], cwd: Path, env: Mapping[str, str]
) -> list[Verdict]:
    """What ``agent``, started in ``cwd`` from a shell with ``env``, does with each probe:
    every entry that matches the tool runs (as the agent runs them all), and the most
    restrictive answer wins."""
    dialect = DIALECTS[agent]
    shell_env = hook_env(agent, cwd, env)
    out = []
    for probe in probes:
        if agent_tool(agent, probe.tool) is None:
            continue  # Codex has no file-write tool: nothing to put
        data = payload(agent, probe, cwd)
        tool = str(data["tool_name"])
        found: list[tuple[str, str]] = []
        for entry in entries:
            if not entry.matches(tool):
                continue
            if not entry.runs:
                found.append(("allowed", f"{entry.path}: {entry.why_not}"))
                continue
            ran = run_entry(agent, entry, data, cwd, shell_env)
            found.append(dialect.outcome(ran, entry.blocks_on_failure))
        if not found:
            found.append(("allowed", f"no kodelet entry runs for {tool}"))
        outcome, reason = min(found, key=lambda f: OUTCOMES.index(f[0]))
        out.append(Verdict(probe, outcome, reason))
    return out
