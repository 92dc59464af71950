"""``kodelet verify``: run an installed hook entry the way its agent runs it, and read the
answer the way that agent reads it.

A guard is only as good as the entry that calls it: the agent must find the entry, start
its command in the environment it gives hooks, send its own input shape, and act on the
answer in its own way (Claude Code blocks on exit 2 and on ``permissionDecision: deny``,
Gemini CLI on a top-level ``decision``, Copilot CLI on any non-zero exit, opencode's
plugin on ``block``; a crash or a timeout lets the call through in some agents and not in
others). This module does each of those steps as the agent does, for a tool call that is
never run: only the hook is. The probes are shell commands in the agent's shell tool
and one file write in its file tool.

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

__all__ = [
    "BLOCK",
    "HOLDS_FROM_START_ONLY",
    "Answer",
    "Entry",
    "Probe",
    "Verdict",
    "builtin_probes",
    "decide",
    "hook_env",
    "payload",
    "run_entry",
    "user_probes",
    "verify",
]

SESSION = "kodelet-verify"
"""The session id of every probe: a guard's own log shows where a call came from."""

TOOLS: Mapping[str, tuple[str, str | None]] = {
    "claude": ("Bash", "Write"),
    "codex": ("Bash", None),
    "qwen": ("run_shell_command", "write_file"),
    "gemini": ("run_shell_command", "write_file"),
    "copilot": ("Bash", "Write"),
    "opencode": ("bash", "write"),
}
"""Agent -> (the tool name its hooks see for its shell tool, for its file-write tool).
Codex sends its shell tool as ``Bash`` and has no file-write tool (``apply_patch``
edits); Copilot CLI's PascalCase entries see Claude's tool names with its own keys."""

PROJECT_VARIABLES: Mapping[str, tuple[str, ...]] = {
    "claude": ("CLAUDE_PROJECT_DIR",),
    "gemini": ("GEMINI_PROJECT_DIR", "GEMINI_CWD", "CLAUDE_PROJECT_DIR"),
    "qwen": ("QWEN_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
}
"""Agent -> the variables it sets to the folder it started in, for each hook (as the
pinned CLIs do); the others set none."""

HOLDS_FROM_START_ONLY: frozenset[str] = frozenset({"claude", "gemini"})
"""Agents that read a project's settings file only in the folder they start in (Claude
Code's ``.claude/settings.json``, Gemini CLI's ``.gemini/settings.json``): started in a
subfolder, they never call a project-scope entry."""


def gemini_trusts(folder: Path, env: Mapping[str, str]) -> bool:
    """Whether Gemini CLI 0.61.0, started in ``folder``, trusts it and so reads the
    project's ``.gemini/settings.json``, hooks included: as its ``checkPathTrust`` decides
    from the environment, the user's ``security.folderTrust.enabled`` and the longest
    matching rule of ``trustedFolders.json`` (no rule: not trusted)."""
    if env.get("GEMINI_RESTRICTED_MODE") == "true":
        return False
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") in ("true", "false"):
        return env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"
    settings = _json_file(home / "settings.json")
    security = settings.get("security") if isinstance(settings.get("security"), dict) else {}
    trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(trust, dict) and trust.get("enabled") is False:
        return True
    rules_file = env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or home / "trustedFolders.json"
    where = os.path.realpath(folder)
    best, level = -1, None
    for rule, value in _json_file(Path(rules_file)).items():
        root = os.path.dirname(rule) if value == "TRUST_PARENT" else rule
        root = os.path.realpath(root)
        inside = where == root or where.startswith(root.rstrip(os.sep) + os.sep)
        if inside and len(rule) > best:
            best, level = len(rule), value
    return level in ("TRUST_FOLDER", "TRUST_PARENT")


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


DEFAULT_TIMEOUT: Mapping[str, float] = {"opencode": 120.0}
"""Agent -> seconds it waits for a hook when the entry names none (60 elsewhere)."""

BLOCK = "block"
ALLOW = "allow"
OUTCOMES = ("blocked", "asks", "rewritten", "allowed")
"""What the agent does with the call: refuses it, asks the user, runs another call in
its place, or runs it."""


@attrs.frozen
class Probe:
    """One tool call to put to the hook (never run)."""

    label: str
    """What ``verify`` prints: the shell command, or ``Write <path>``."""
    tool: str
    """Claude Code's tool name (``Bash``, ``Write``); each agent's own is in :data:`TOOLS`."""
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
        import re

        if self.matcher in (None, "", "*"):
            return True
        try:
            return re.fullmatch(str(self.matcher), tool) is not None
        except re.error:
            return self.matcher == tool


@attrs.frozen
class Answer:
    """What running one entry gave: the process's (or HTTP response's) facts."""

    code: int | None
    """Exit code (HTTP: the status); None when it did not exit (timeout, cannot start)."""
    stdout: str = ""
    stderr: str = ""
    failure: str = ""
    """Why it gave no answer: "timed out after 60 s", "killed by SIGSEGV", ..."""


@attrs.frozen
class Verdict:
    """What the agent does with one probe."""

    probe: Probe
    outcome: str
    """One of :data:`OUTCOMES`."""
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


def _agent_input(agent: str, tool: str, data: Mapping[str, Any]) -> tuple[str, Any]:
    """(the agent's tool name, its input under the agent's keys) for Claude's ``tool``."""
    shell, write = TOOLS[agent]
    name = shell if tool == "Bash" else write
    if name is None:
        raise LookupError(f"{agent} has no {tool} tool")
    return name, DIALECTS[agent]._input(name, dict(data), to_claude=False)


def has_tool(agent: str, tool: str) -> bool:
    shell, write = TOOLS[agent]
    return (shell if tool == "Bash" else write) is not None


def pre_tool_event(agent: str) -> str:
    return DIALECTS[agent].agent_event("PreToolUse")


def payload(agent: str, probe: Probe, cwd: Path) -> dict[str, Any]:
    """The hook input ``agent`` sends before running ``probe`` in ``cwd``."""
    tool, tool_input = _agent_input(agent, probe.tool, probe.input)
    data: dict[str, Any] = {
        "session_id": SESSION,
        "cwd": str(cwd),
        "hook_event_name": pre_tool_event(agent),
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "kodelet-verify-1",
    }
    if agent != "opencode":
        data["transcript_path"] = ""
    if agent in ("claude", "codex", "qwen"):
        data["permission_mode"] = "default"
    return data


def hook_env(agent: str, cwd: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The environment ``agent``, started in ``cwd`` from a shell with ``env``, gives
    its hooks: that environment (agents pass theirs on), with the agent's own project
    variables set to ``cwd`` and every other agent's taken out (a ``verify`` run inside
    another agent's session must not lend the hook that session's project)."""
    out = dict(env)
    for names in PROJECT_VARIABLES.values():
        for name in names:
            out.pop(name, None)
    for name in PROJECT_VARIABLES.get(agent, ()):
        out[name] = str(cwd)
    out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return out


def run_entry(
    agent: str, entry: Entry, data: Mapping[str, Any], cwd: Path, env: Mapping[str, str]
) -> Answer:
    """Run ``entry`` on the hook input ``data`` as ``agent`` does: a command through
    ``/bin/sh -c`` in ``cwd`` with ``env`` on stdin-JSON, or a POST of it to the URL."""
    timeout = entry.timeout or DEFAULT_TIMEOUT.get(agent, 60.0)
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
        return Answer(None, failure=f"cannot start /bin/sh: {exc.strerror or exc}")
    try:
        out, err = proc.communicate(raw, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        return Answer(None, failure=f"timed out after {timeout:g} s")
    text, errors = out.decode(errors="replace"), err.decode(errors="replace")
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        return Answer(None, text, errors, failure=f"killed by {name}")
    return Answer(proc.returncode, text, errors)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _post(url: str, headers: dict[str, str], raw: bytes, timeout: float) -> Answer:
    request = urllib.request.Request(
        url, data=raw, headers={"Content-Type": "application/json", **headers}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return Answer(response.status, response.read().decode(errors="replace"))
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        return Answer(exc.code, stderr=body, failure=f"{url} answered HTTP {exc.code}")
    except (urllib.error.URLError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        return Answer(None, failure=f"{url} does not answer: {why}")


# --- how each agent reads an answer --------------------------------------------------


def _json(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _claude_like(doc: Mapping[str, Any], agent: str) -> tuple[str, str]:
    """A Claude-shaped pre-tool answer, as Claude Code, Codex, Qwen Code and Copilot CLI
    read it (each one's differences named)."""
    specific = doc.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision = specific.get("permissionDecision")
    reason = str(specific.get("permissionDecisionReason") or "")
    if agent == "copilot" and decision is None:
        decision = doc.get("permissionDecision")
        reason = str(doc.get("permissionDecisionReason") or reason)
    if doc.get("continue") is False:
        return "blocked", str(doc.get("stopReason") or "the hook stopped the agent")
    if decision == "deny":
        return "blocked", reason or "denied (no reason given)"
    if doc.get("decision") == "block":
        return "blocked", str(doc.get("reason") or "blocked (no reason given)")
    if decision == "ask":
        if agent == "codex":
            return "allowed", "the hook asks, which Codex refuses as an invalid answer"
        return "asks", reason or "asks the user"
    rewrite = specific.get("updatedInput")
    if isinstance(rewrite, dict):
        if agent == "qwen":
            return "allowed", "the hook rewrote the call, which Qwen Code never applies"
        if agent == "codex" and decision != "allow":
            return "allowed", "Codex refuses a rewrite without permissionDecision allow"
        return "rewritten", f"runs {json.dumps(rewrite, ensure_ascii=False)} instead"
    return "allowed", reason or "no hook objected"


def _gemini(doc: Mapping[str, Any]) -> tuple[str, str]:
    if doc.get("continue") is False:
        return "blocked", str(doc.get("stopReason") or "the hook stopped the agent")
    decision = doc.get("decision")
    reason = str(doc.get("reason") or "")
    if decision in ("deny", "block"):
        return "blocked", reason or "denied (no reason given)"
    if decision == "ask":
        return "asks", reason or "asks the user"
    specific = doc.get("hookSpecificOutput")
    rewrite = specific.get("tool_input") if isinstance(specific, dict) else None
    if isinstance(rewrite, dict):
        return "rewritten", f"runs with {json.dumps(rewrite, ensure_ascii=False)} merged in"
    return "allowed", reason or "no hook objected"


def _opencode(doc: Mapping[str, Any]) -> tuple[str, str]:
    if isinstance(doc.get("block"), str):
        return "blocked", str(doc["block"])
    if isinstance(doc.get("args"), dict):
        return "rewritten", f"runs with {json.dumps(doc['args'], ensure_ascii=False)}"
    return "allowed", "no hook objected"


def decide(agent: str, entry: Entry, answer: Answer) -> tuple[str, str]:
    """(outcome, reason): what ``agent`` does with the call, given the entry's answer."""
    failed = answer.failure or (
        f"exited with {answer.code}" + (f": {_last_line(answer.stderr)}" if answer.stderr else "")
    )
    if agent == "claude":
        ok = answer.code == 0 or (entry.url is not None and answer.code is not None)
        if entry.url is None and answer.code == 2:
            return "blocked", _last_line(answer.stderr) or "blocked (exit 2)"
        if not ok or answer.failure:
            if entry.blocks_on_failure:
                return "blocked", f"the hook failed ({failed}); the entry blocks on failure"
            return "allowed", f"the hook failed ({failed}); Claude Code goes ahead"
        doc = _json(answer.stdout)
        return _claude_like(doc, agent) if doc is not None else ("allowed", "no hook objected")
    if agent in ("codex", "qwen"):
        title = DIALECTS[agent].title
        if answer.code == 2:
            return "blocked", _last_line(answer.stderr) or "blocked (exit 2)"
        if answer.code != 0:
            return "allowed", f"the hook failed ({failed}); {title} goes ahead"
        doc = _json(answer.stdout)
        return _claude_like(doc, agent) if doc is not None else ("allowed", "no hook objected")
    if agent == "gemini":
        if answer.code is None:
            return "allowed", f"the hook failed ({failed}); Gemini CLI goes ahead"
        if answer.code == 1:
            return "allowed", f"the hook warned ({failed}); Gemini CLI goes ahead"
        if answer.code != 0:
            return "blocked", _last_line(answer.stderr) or f"blocked (exit {answer.code})"
        doc = _json(answer.stdout)
        return _gemini(doc) if doc is not None else ("allowed", "no hook objected")
    if agent == "copilot":
        if answer.failure.startswith("timed out"):
            return "allowed", f"the hook {answer.failure}; Copilot CLI goes ahead"
        if answer.code != 0:
            return "blocked", f"the hook failed ({failed}); Copilot CLI denies the call"
        doc = _json(answer.stdout)
        return _claude_like(doc, agent) if doc is not None else ("allowed", "no hook objected")
    if agent == "opencode":
        if answer.code != 0:
            return "blocked", f"kodelet could not check this tool call ({failed}); refused"
        if not answer.stdout.strip():
            return "allowed", "no hook objected"
        doc = _json(answer.stdout)
        if doc is None:
            return "blocked", f"the hook answered {answer.stdout.strip()[:200]!r}; refused"
        return _opencode(doc)
    raise LookupError(f"unknown agent {agent!r}")


_RANK = {"blocked": 0, "asks": 1, "rewritten": 2, "allowed": 3}


def verify(
    agent: str, entries: Sequence[Entry], probes: Sequence[Probe], cwd: Path, env: Mapping[str, str]
) -> list[Verdict]:
    """What ``agent``, started in ``cwd`` from a shell with ``env``, does with each probe:
    every entry that matches the tool runs (as the agent runs them all), and the most
    restrictive answer wins."""
    shell_env = hook_env(agent, cwd, env)
    out = []
    for probe in probes:
        if not has_tool(agent, probe.tool):
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
            found.append(decide(agent, entry, run_entry(agent, entry, data, cwd, shell_env)))
        if not found:
            found.append(("allowed", f"no kodelet entry runs for {tool}"))
        outcome, reason = min(found, key=lambda f: _RANK[f[0]])
        out.append(Verdict(probe, outcome, reason))
    return out
