"""The guard itself: which tools write which paths, and the hookimpl that blocks them."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..markers import hookimpl
from ..results import BeforeToolCallResult
from .commands import Checker
from .places import Own, Protected
from .words import from_text, place, real

NAME = "builtin:protect-kodelet"

SHELL_TOOLS = frozenset(
    {"bash", "Bash", "shell", "exec_command", "local_shell", "run_shell_command"}
)
"""kodelet's ``bash`` and the names an agent's shell tool may still carry."""
FILE_TOOLS = frozenset({
    "file_write", "file_edit", "file_multi_edit", "NotebookEdit", "Write", "Edit", "MultiEdit",
    "write_file", "replace", "edit", "create", "write", "notebook_edit", "str_replace_editor",
})  # fmt: skip
"""Tools that write the file their input names (kodelet's names first, then agents')."""
PATCH_TOOLS = frozenset({"apply_patch", "patch"})
READ_TOOLS = frozenset({
    "file_read", "glob_tool", "grep_tool", "web_fetch", "web_search", "todo_write",
    "subagent", "Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch",
    "TodoWrite", "Task", "Agent", "read_file", "read_many_files", "list_directory", "glob",
    "grep_search", "grep", "view", "read", "ls", "list", "webfetch", "todowrite", "todoread",
    "google_web_search", "write_todos", "save_memory", "ExitPlanMode", "BashOutput",
    "KillShell", "KillBash", "exit_plan_mode", "task", "invoke_agent", "Skill",
    "SlashCommand", "AskUserQuestion",
})  # fmt: skip
"""Tools that change no file: any path may be given to them."""
PATH_KEYS = ("file_path", "filePath", "notebook_path", "path", "absolute_path", "target_file")
COMMAND_KEYS = ("command", "cmd", "script")
CWD_KEYS = ("workdir", "cwd", "directory", "dir_path", "working_directory")
MAX_STRINGS = 4096
"""An unknown tool's input is searched for paths up to this many strings (then blocked)."""


def check_call(
    tool_name: str,
    tool_input: Mapping[str, Any],
    cwd: str,
    *,
    project: str,
    global_root: str,
    env: Mapping[str, str],
) -> str | None:
    """Why this tool call may not run (it would change kodelet's own files), or None."""
    return check(Own(project, global_root, env), tool_name, tool_input, cwd or project)


def check(own: Own, tool_name: str, tool_input: Mapping[str, Any], cwd: str) -> str | None:
    """:func:`check_call` for a runtime whose own files ``own`` holds."""
    if tool_name in READ_TOOLS:
        return None
    base = _call_cwd(tool_input, cwd)
    protected = own.at(base)
    if tool_name in SHELL_TOOLS:
        return _shell(tool_input.get("command"), protected, base)
    if tool_name in FILE_TOOLS:
        for key in PATH_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str):
                why = _path(value, protected, base, f"`{tool_name}` would write")
                if why:
                    return why
        return None
    if tool_name in PATCH_TOOLS:
        return _patch(tool_input, protected, base)
    return _unknown(tool_name, tool_input, protected, base)


def _call_cwd(tool_input: Mapping[str, Any], cwd: str) -> str:
    """The folder the call runs in: the tool's own ``workdir`` (Codex), else the call's."""
    for key in CWD_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value and "\0" not in value:
            joined = os.path.join(cwd, os.path.expanduser(value))
            return os.path.normpath(joined)
    return os.path.normpath(cwd)


def _shell(command: Any, protected: Protected, cwd: str) -> str | None:
    if isinstance(command, list):  # an argv (Codex's shell tool): one simple command
        if not all(isinstance(a, str) for a in command):
            return None
        command = " ".join(_quote(a) for a in command)
    if not isinstance(command, str):
        return None
    return Checker(protected, cwd).check(command)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def _path(text: str, protected: Protected, cwd: str, verb: str) -> str | None:
    for path in from_text(text, place(cwd), protected.home):
        what = protected.reached(path.comps, absolute=path.absolute, recursive=False)
        if what is None:
            resolved = real(path)
            if resolved is not None:
                what = protected.reached(resolved.comps, absolute=True, recursive=False)
        if what is not None:
            shown = text if len(text) <= 200 else text[:200] + "..."
            return f"{verb} {shown!r} ({what})"
    return None


def _patch(tool_input: Mapping[str, Any], protected: Protected, cwd: str) -> str | None:
    """Codex's ``apply_patch``: the files its envelope adds, updates, deletes or moves to."""
    for text in _strings(tool_input):
        for line in text.splitlines():
            for head in ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:",
                         "+++ ", "--- "):  # fmt: skip
                if line.startswith(head):
                    target = line[len(head) :].strip()
                    if head in ("+++ ", "--- ") and target[:2] in ("a/", "b/"):
                        target = target[2:]
                    why = _path(target, protected, cwd, "the patch would change")
                    if why:
                        return why
    return _unknown("apply_patch", tool_input, protected, cwd)


def _unknown(
    tool_name: str, tool_input: Mapping[str, Any], protected: Protected, cwd: str
) -> str | None:
    """A tool the guard does not know (an MCP server's, a new agent's): every string in
    its input that names a protected path as a path blocks it, and a command is read."""
    for n, (key, value) in enumerate(_items(tool_input)):
        if n >= MAX_STRINGS:
            return f"`{tool_name}`'s input is too large to check"
        if key in COMMAND_KEYS:
            why = Checker(protected, cwd).check(value)
            if why:
                return why
        if len(value) <= 4096:
            why = _path(value, protected, cwd, f"`{tool_name}` is given")
            if why:
                return why
    return None


def _items(data: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > 32:
        raise ValueError("tool input nested too deep")
    if isinstance(data, str):
        yield key, data
    elif isinstance(data, Mapping):
        for k, v in data.items():
            yield from _items(v, str(k), depth + 1)
    elif isinstance(data, list | tuple):
        for v in data:
            yield from _items(v, key, depth + 1)


def _strings(data: Any) -> Iterator[str]:
    for _, value in _items(data):
        yield value


class SelfGuard:
    """The built-in as a plugin object: bound to the runtime's project and global root,
    it resolves each call's paths against the call's own folder."""

    def __init__(self, project: Path, global_root: Path, env: Mapping[str, str]) -> None:
        self.project = str(project)
        self.own = Own(self.project, str(global_root), env)

    @hookimpl(trylast=True)
    def before_tool_call(
        self, tool_name: str, tool_input: dict[str, Any], cwd: str
    ) -> BeforeToolCallResult | None:
        try:
            where = cwd if os.path.isabs(cwd or "") else os.path.join(self.project, cwd or "")
            why = check(self.own, tool_name, tool_input, where)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a guard that cannot decide says no
            why = f"the guard failed while checking this call ({type(exc).__name__}: {exc})"
        if why is None:
            return None
        return BeforeToolCallResult(blocked=True, reason=reason(why))


def reason(why: str) -> str:
    return (
        f"{NAME}: {why}. The agent may read kodelet's own files (.kodelet/, the global root, "
        "the agent settings holding kodelet's hooks) but not change them: make the change "
        f'yourself, or opt out with [hooks."{NAME}"] enabled = false in config.toml'
    )
