"""An agent's hook dialect: the tables that turn its hook calls into Claude Code's.

Codex, Qwen Code and the other agents kodelet runs inside all speak a dialect of
Claude Code's command hooks: their own event names, tool names and input keys, and
their own answer form. A :class:`Dialect` is that difference as data, plus the two
small translators built on it, so the Claude bridge (:mod:`kodelet.agents.bridge`)
serves every agent through its one translator to kodelet and back: the agent's input
becomes a Claude hook input (:meth:`Dialect.to_claude`), and Claude's answer becomes
the agent's (:meth:`Dialect.from_claude`). An agent whose wire differs in more than
names subclasses :class:`Dialect` and overrides :meth:`~Dialect.to_claude` or
:meth:`~Dialect.reply` (the answer document ``from_claude`` prints); nothing else in
kodelet changes for a new agent.

The tables map onto Claude Code's names, never onto kodelet's: the Claude tables in
:mod:`kodelet.claude.mapping` take it from there (``Bash`` -> ``bash``), so a guard
on ``bash`` fires for every agent's shell tool. Anything a table does not know (an
MCP tool, a new input key, an event kodelet has no point for) passes under its own
name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

Renames = tuple[tuple[str, str], ...]
"""(agent key, Claude key) pairs."""


def printed(out: Mapping[str, Any], code: int) -> tuple[str, int]:
    """(stdout, exit code) of an answer document: nothing printed when it is empty."""
    return (json.dumps(out, ensure_ascii=False) + "\n" if out else ""), code


def replaced_output(specific: Mapping[str, Any]) -> str | None:
    """The tool result a PostToolUse answer's ``hookSpecificOutput`` puts in place of the
    real one, as text for an agent that cannot replace it; None when it replaces none."""
    for key in ("updatedToolOutput", "updatedMCPToolOutput"):
        if key in specific:
            new = specific[key]
            return new if isinstance(new, str) else json.dumps(new, ensure_ascii=False)
    return None


@attrs.frozen(eq=False)
class Dialect:
    """One agent's hooks as data. ``config`` paths start with ``~/`` (the user's home)
    or are relative to the project."""

    name: str
    """``--agent NAME`` and ``kodelet NAME install``."""
    title: str
    """What the agent calls itself in prose: "Codex", "Qwen Code"."""
    binary: str
    """The command on PATH."""
    package: str
    """The npm package that installs it."""
    verified: str
    """The version the end-to-end tests run (tests/e2e/)."""
    config: Mapping[str, str]
    """Scope (``project``, ``user``) -> the file kodelet's entries go into."""
    events: Mapping[str, str | None]
    """Every hook event the agent delivers -> the Claude ``HookEvent`` name it is; None:
    an event with no Claude counterpart (answered with nothing)."""
    tools: Mapping[str, str] = attrs.field(factory=dict)
    """Agent tool name -> Claude tool name; tools not listed keep their names."""
    keys: Mapping[str, Renames] = attrs.field(factory=dict)
    """Agent tool name -> its input keys that Claude's tool names differently."""
    fails_open: bool = True
    """The agent lets a call through when the hook command itself cannot run (not
    found, crashed, timed out): nothing kodelet writes can change that."""
    rewrites: bool = True
    """The agent applies ``updatedInput`` from a PreToolUse answer. When it does not, a
    rewrite is a block that names the rewritten call: the call as asked must not run."""
    rewrite_allows: bool = False
    """The agent applies ``updatedInput`` only beside ``permissionDecision: "allow"``
    (Claude Code takes it alone, and still asks its own permission rules)."""
    home_env: str = ""
    """The environment variable that moves the agent's user directory (the ``~/.codex``
    of ``config["user"]``), if it has one."""
    settings_keys: tuple[str, ...] = ()
    """Members of the config file's ``hooks`` that are settings, not events."""
    notes: tuple[str, ...] = ()
    """What ``kodelet NAME status`` tells the user about this agent's hooks."""
    trust_config: str = ""
    """The TOML file where the agent records which hooks the user trusts (``~/`` as in
    ``config``); empty: the agent runs every hook in its files."""
    claude_transcript: bool = True
    """The agent's ``transcript_path`` is a Claude Code transcript (kodelet reads the last
    assistant message of a stop from it); False: its own format, never read."""
    exit_1_blocks: bool = False
    """The agent blocks on any non-zero exit of the hook command: kodelet's non-blocking
    error (Claude's exit 1, the ``on_failure = "allow"`` opt-out) exits 0 instead."""
    empty_prompt_typed: bool = False
    """An empty prompt is one the user sent (Claude Code); False: the agent fires its
    prompt event with an empty prompt on its own turns (Qwen Code's after a tool round),
    which is no user message."""

    def trust(self, path: Path, data: Mapping[str, Any]) -> dict[str, str]:
        """The trust records (key -> hash) the agent needs before it runs kodelet's entries
        in the hooks file ``path`` holding ``data``; empty when it needs none."""
        return {}

    def config_path(self, scope: str, project: Path, env: Mapping[str, str]) -> Path:
        """The file kodelet's entries go into for ``scope`` (``project`` or ``user``)."""
        where = self.config[scope]
        return self.user_path(where, env) if where.startswith("~/") else project / where

    def user_path(self, where: str, env: Mapping[str, str]) -> Path:
        """``where`` (``~/.agent/...``) in the user's home, or under ``home_env`` when it is
        set: that variable stands for the agent's folder (``~/.codex``)."""
        if self.home_env and env.get(self.home_env):
            inside = Path(where[2:]).parts[1:]
            return Path(env[self.home_env]).resolve().joinpath(*inside)
        return Path(env.get("HOME") or Path.home()) / where[2:]

    # --- names, both ways ---------------------------------------------------

    def claude_event(self, event: Any) -> Any:
        """The Claude event name for the agent's ``event``; unknown names unchanged."""
        if isinstance(event, str) and event in self.events:
            return self.events[event] or event
        return event

    def agent_event(self, claude: str) -> str:
        return next((a for a, c in self.events.items() if c == claude), claude)

    def hook_events(self) -> list[str]:
        """The agent's events kodelet answers: those that run as a kodelet event."""
        from ..claude.mapping import EVENT_MAP

        answered = {m.claude.value for m in EVENT_MAP}
        return [a for a, c in self.events.items() if c in answered]

    def claude_tool(self, tool: Any) -> Any:
        return self.tools.get(tool, tool) if isinstance(tool, str) else tool

    def _input(self, tool: Any, data: Any, *, to_claude: bool) -> Any:
        pairs = self.keys.get(tool, ()) if isinstance(tool, str) else ()
        if not pairs or not isinstance(data, dict):
            return data
        out = dict(data)
        for agent_key, claude_key in pairs:
            old, new = (agent_key, claude_key) if to_claude else (claude_key, agent_key)
            if old in data:
                out.pop(old)
                out[new] = data[old]
        return out

    # --- the two translators ------------------------------------------------

    def to_claude(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The Claude Code hook input for the agent's hook input ``data``."""
        out = dict(data)
        if not self.claude_transcript:
            out["transcript_path"] = ""
        if "hook_event_name" in out:
            out["hook_event_name"] = self.claude_event(out["hook_event_name"])
        empty = out.get("prompt") == "" and not self.empty_prompt_typed
        if out.get("hook_event_name") == "UserPromptSubmit" and empty:
            # No one typed it (Qwen Code's turn after a tool round): not a user message.
            out["hook_event_name"] = "UserPromptSubmit (empty)"
        tool = out.get("tool_name")
        if "tool_input" in out:
            out["tool_input"] = self._input(tool, out["tool_input"], to_claude=True)
        if tool is not None:
            out["tool_name"] = self.claude_tool(tool)
        return out

    def from_claude(
        self, answer: Mapping[str, Any] | None, code: int, data: Mapping[str, Any]
    ) -> tuple[str, int]:
        """(stdout, exit code) for the agent: Claude Code's ``answer`` (and exit code) to
        the agent's hook input ``data``, in the agent's form (:meth:`reply`)."""
        if answer is None:
            return "", 0 if code == 1 and self.exit_1_blocks else code
        return printed(self.reply(answer, data), code)

    def reply(self, answer: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
        """The agent's answer document for Claude Code's ``answer``. This default is for
        agents that read Claude's answer: names go back to the agent's."""
        out = dict(answer)
        specific = out.get("hookSpecificOutput")
        if isinstance(specific, dict):
            specific = dict(specific)
            if isinstance(specific.get("hookEventName"), str):
                event = data.get("hook_event_name")
                specific["hookEventName"] = (
                    event if isinstance(event, str) else self.agent_event(specific["hookEventName"])
                )
            if "updatedInput" in specific:
                tool = data.get("tool_name")
                specific["updatedInput"] = self._input(
                    tool, specific["updatedInput"], to_claude=False
                )
                if not self.rewrites and specific.get("permissionDecision") != "deny":
                    rewritten = json.dumps(specific.pop("updatedInput"), ensure_ascii=False)
                    specific["permissionDecision"] = "deny"
                    specific["permissionDecisionReason"] = (
                        f"kodelet hooks rewrote this call to {rewritten}; {self.title} cannot"
                        " run a rewritten call, so this one is blocked: make the rewritten"
                        " call instead"
                    )
                elif self.rewrite_allows and "permissionDecision" not in specific:
                    specific["permissionDecision"] = "allow"
            out["hookSpecificOutput"] = specific
        return out
