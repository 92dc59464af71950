"""Codex (``@openai/codex``): Claude Code's hook wire under Codex's own rules.

Codex reads command hooks from ``.codex/hooks.json`` (or ``[hooks]`` in
``config.toml``), project and user layers alike, sends Claude-shaped input and acts on
Claude-shaped answers, checked against a schema that refuses what it does not support
(the whole answer is then dropped and the call goes ahead). Its shell tool
(``exec_command``) reaches hooks as ``Bash`` already; ``exec_command`` and ``shell`` are
listed for inputs that still carry them. ``apply_patch`` is its file-editing tool and
has no Claude counterpart, so a guard sees it under that name. A hook command that
crashes, is missing or times out lets the call through: Codex offers no setting to fail
closed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from ..claude.installed import OwnEntry
from .base import Answer, Dialect

EMPTY = "(kodelet hooks replaced this tool's output with nothing)"


class CodexDialect(Dialect):
    """Codex 0.169.0 refuses, as an invalid answer, ``updatedInput`` without
    ``permissionDecision: "allow"``, a PreToolUse ``ask``, and any replaced tool
    output: each is said the way Codex takes it (a replaced output as a blocking
    PostToolUse answer, whose reason Codex puts in the output's place)."""

    def say(self, answer: Answer, data: Mapping[str, Any]) -> dict[str, Any]:
        if answer.output is not None or answer.withheld:
            # Codex refuses updatedToolOutput, but a blocking PostToolUse answer's reason
            # is what the model gets in place of the tool's output (Codex 0.169.0).
            new = answer.output.text() if answer.output is not None else answer.withheld
            out = super().say(attrs.evolve(answer, output=None, withheld=""), data)
            out.update(decision="block", reason=new or EMPTY)
            return out
        return super().say(answer, data)

    def unguardable(self, data: Mapping[str, Any]) -> str | None:
        """A shell call that opens an interactive shell or REPL: Codex 0.169.0 sends no
        hook for ``write_stdin``, and its ``exec_command`` input carries the command alone
        (not ``tty``), so what the model types into it is never checked
        (:mod:`.interactive`)."""
        if data.get("hook_event_name") != "PreToolUse":
            return None
        if self.claude_tool(data.get("tool_name")) != "Bash":
            return None
        tool_input = data.get("tool_input")
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if not isinstance(command, str | list):
            return None
        from .interactive import opens_interactive

        program = opens_interactive(command)
        return None if program is None else INTERACTIVE.format(program=program)

    def unguardable_allowed(self, config: Any) -> bool:
        return bool(config.codex_interactive_shells == "allow")

    def read(self, doc: Mapping[str, Any]) -> tuple[str, str]:
        outcome, reason = super().read(doc)
        if outcome == "asks":
            return "allowed", "the hook asks, which Codex refuses as an invalid answer"
        return outcome, reason

    def trust(self, path: Path, data: Mapping[str, Any]) -> dict[str, str]:
        """Codex 0.169.0 runs a hook of a ``hooks.json`` only when the user's
        ``config.toml`` holds ``[hooks.state."<file>:<event>:<group>:<handler>"]`` with
        ``trusted_hash`` = sha256 of the hook's identity as compact, key-sorted JSON:
        its event (snake case), its group's matcher if any, and the handler with
        Codex's defaults filled in (``async: false``, ``timeout: 600``)."""
        from ..claude.installed import own_entries

        out: dict[str, str] = {}
        for own in own_entries(data):
            hook = own.hook
            if "command" not in hook:
                continue
            handler = {
                "async": bool(hook.get("async", False)),
                "command": hook["command"],
                "timeout": hook.get("timeout", 600),
                "type": "command",
            }
            identity: dict[str, Any] = {"event_name": _snake(own.event), "hooks": [handler]}
            if own.matcher is not None:
                identity["matcher"] = own.matcher
            text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            out[self.trust_key(path, own)] = f"sha256:{digest}"
        return out

    def trust_key(self, path: Path, own: OwnEntry) -> str:
        """``<file>:<event>:<group>:<handler>``, the event in snake case."""
        return f"{path}:{_snake(own.event)}:{own.group}:{own.handler}"

    def untrusted(
        self, path: Path, data: Mapping[str, Any], env: Mapping[str, str]
    ) -> set[str] | None:
        """Codex runs an entry only while the user's ``config.toml`` holds its review
        (:meth:`trust`) and does not switch it off (``enabled = false``)."""
        config = _toml(self.user_path(self.trust_config, env))
        if config is None:
            return None
        have = recorded(config)
        return {
            key
            for key, digest in self.trust(path, data).items()
            if (record := have.get(key)) is None
            or record.get("trusted_hash") != digest
            or record.get("enabled", True) is False
        }

    def reads_project(
        self,
        folder: Path,
        env: Mapping[str, str],
        argv: Sequence[str] | None,
        data: Mapping[str, Any],
    ) -> bool:
        """Codex 0.169.0 reads the ``.codex/`` of its project root ``folder`` (the nearest
        folder holding ``.git``, else the folder it starts in) only once the user's
        ``config.toml`` says ``[projects."<folder>"] trust_level = "trusted"``. Its own
        command line, found above the hook, must not change what it loads (a profile,
        ``-c`` of ``projects``, ``project_root_markers``, ``hooks`` or ``features``,
        ``--disable``, ``--ignore-user-config``, ``--worktree``, ``--remote``), nor may
        the system's files (``/etc/codex``) say where projects are or that they are
        trusted."""
        if argv is None or any(_moves_project(word, nxt) for word, nxt in _pairs(argv)):
            return False
        if any(os.path.lexists(p) for p in _SYSTEM_CONFIG):
            return False
        config = _toml(self.user_path(self.trust_config, env))
        if config is None or "project_root_markers" in config:
            return False
        projects = config.get("projects")
        where = os.path.realpath(folder)
        return isinstance(projects, dict) and any(
            os.path.realpath(key) == where
            and isinstance(value, dict)
            and value.get("trust_level") == "trusted"
            for key, value in projects.items()
        )


INTERACTIVE = (
    "kodelet refuses this command: it opens an interactive shell or REPL ({program}), and"
    " what is typed into one with write_stdin reaches no hook, so no guard could check it."
    " Run each command as its own exec_command call, and give a REPL its code instead"
    " (python3 -c '...', python3 - <<'EOF' ... EOF, or a script file)."
)
"""The reason the model gets for a refused interactive shell: what to do instead."""
_SYSTEM_CONFIG = ("/etc/codex/config.toml", "/etc/codex/managed_config.toml")
"""Codex's system and managed layers: either may move or distrust a project."""
_DROPS = ("-p", "--profile", "--disable", "--ignore-user-config", "--worktree", "--remote")
"""Flags of Codex's command line after which kodelet cannot tell which project files
it reads."""
_MOVED = ("projects", "project_root_markers", "hooks", "features")
"""Keys of ``-c key=value`` that change which project hook files Codex runs."""


def _pairs(argv: Sequence[str]) -> list[tuple[str, str | None]]:
    words = list(argv)
    if "--" in words:
        words = words[: words.index("--")]
    return [(w, words[i + 1] if i + 1 < len(words) else None) for i, w in enumerate(words)]


def _moves_project(word: str, following: str | None) -> bool:
    if word in _DROPS or any(word.startswith(f"{flag}=") for flag in _DROPS if flag[1] == "-"):
        return True
    if word in ("-c", "--config"):
        value = following or ""
    elif word.startswith("--config="):
        value = word[len("--config=") :]
    elif word.startswith("-c") and len(word) > 2 and not word.startswith("--"):
        value = word[2:]
    else:
        return False
    key = value.split("=", 1)[0].strip().split(".", 1)[0].strip("\"' ")
    return key in _MOVED or not key


def recorded(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """key -> record of every ``[hooks.state."<key>"]`` in a parsed ``config.toml``."""
    hooks = config.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    items = state.items() if isinstance(state, dict) else ()
    return {k: v for k, v in items if isinstance(v, dict)}


def _toml(path: Path) -> Mapping[str, Any] | None:
    """The TOML file at ``path`` (empty when absent); None when it cannot be read. Read
    on every hook call, parsed only when its bytes changed: read-only to callers."""
    from .. import jsonio

    try:
        return _parsed(jsonio.read_file(path, "Codex config"))
    except FileNotFoundError:
        return {}
    except (jsonio.FileError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


@functools.lru_cache(maxsize=4)
def _parsed(raw: bytes) -> Mapping[str, Any]:
    return tomllib.loads(raw.decode("utf-8"))


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


CODEX = CodexDialect(
    name="codex",
    title="Codex",
    asks=False,
    binary="codex",
    package="@openai/codex",
    verified="0.169.0",
    config={"project": ".codex/hooks.json", "user": "~/.codex/hooks.json"},
    events={
        "SessionStart": "SessionStart",
        "SessionEnd": "SessionEnd",
        "UserPromptSubmit": "UserPromptSubmit",
        "PreToolUse": "PreToolUse",
        "PermissionRequest": "PermissionRequest",
        "PostToolUse": "PostToolUse",
        "PreCompact": "PreCompact",
        "PostCompact": None,
        "SubagentStart": "SubagentStart",
        "SubagentStop": "SubagentStop",
        "Stop": "Stop",
        "Interrupt": None,
    },
    tools={"exec_command": "Bash", "shell": "Bash", "local_shell": "Bash"},
    fails_open=True,
    rewrite_allows=True,
    home_env="CODEX_HOME",
    project_from_cwd="root",
    sure_when=(
        "Codex trusts the project root (the git repository's, else the folder it starts"
        ' in: [projects."<root>"] trust_level = "trusted" in config.toml), kodelet\'s'
        " entries there are reviewed (`kodelet codex install`), `kodelet` is on its PATH,"
        " and no -c, --profile or --disable changes what Codex loads"
    ),
    trust_config="~/.codex/config.toml",
    status_notes=(
        "Codex sends no hook for write_stdin: kodelet refuses an exec_command that opens an"
        " interactive shell or REPL (bash, python3, ...), whose typed-in commands no guard"
        ' would see; [codex] interactive_shells = "allow" in .kodelet/config.toml lets one'
        " through, unguarded.",
    ),
    # Its shell tool reaches hooks as Bash; apply_patch edits, and no tool writes a file.
    write_tool=None,
)
