"""kodelet's own entries in Claude Code's settings files: how they look, how to spot them.

``kodelet claude install`` writes them; the settings adapter, ``hooks list`` and
``claude status`` must recognise them wherever they are read, so kodelet never
runs its own bridge as if it were a Claude Code hook (every hook twice). The test
is a token walk, not a regular expression: settings files come from checkouts,
and a pattern that backtracks on a long command would hang every start.
"""

from __future__ import annotations

import functools
import itertools
import os
import shlex
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

BRIDGE_ARGS = ("claude", "hook")
ENSURE_ARGS = ("claude", "ensure")
"""The SessionStart entry of the HTTP transport: makes sure the warm kodelet is up."""
HTTP_PATH = "/kodelet/claude/hook"
"""The URL path of kodelet's ``type: "http"`` entries (``kodelet.warm.http.PATH``)."""
SHELL_SYNTAX = frozenset(";&|<>`$()\n\r")
"""A command using any of these does more than call the bridge: it is not ours."""
BLOCKING_EVENTS = ("PreToolUse", "PreSkillShellCommand", "UserPromptSubmit")
"""Where a failure of kodelet must not let the call through (``onFailure: "block"``)."""
PROJECT_COMMAND = "kodelet-hook claude hook"
"""What a shared (project) settings file gets: found on each teammate's PATH (the
native client of the warm kodelet where it was built, else the Python one)."""
OLD_PROJECT_COMMAND = "kodelet claude hook"
"""What a shared file got before ``kodelet-hook``, and gets where this installation has
no ``kodelet-hook``: still kodelet's entry, upgraded by ``install``."""
PROGRAMS = ("kodelet", "kodelet-hook")
"""The programs of kodelet's entries, by whatever path."""
LEAN_CLIENTS = ("/kodelet/warm/hook.py", "/kodelet/warm/client.py")
"""The warm kodelet's lean client, which local and user settings files run directly."""


SETTINGS_FILES = {
    "project": ".claude/settings.json",
    "local": ".claude/settings.local.json",
    "user": "~/.claude/settings.json",
}
_GUARD_END = "; exit 2; }; "


def guarded(command: str) -> str:
    """``command`` behind a check that what it starts is there. Without kodelet on the
    PATH Claude Code starts hooks with (a teammate's machine), or with kodelet removed
    while its user entries stay, the call is blocked (``onFailure``) with the shell's
    ``kodelet: not found``, in every project, and nothing says what to do: the check
    blocks it (exit 2) with a reason naming both ways out, neither of which needs kodelet."""
    words = shlex.split(command)
    scope = next((b for a, b in itertools.pairwise(words) if a == "--scope"), "project")
    lean = len(words) > 3 and os.path.isabs(words[0]) and words[3].endswith(LEAN_CLIENTS)
    native = os.path.isabs(words[0]) and os.path.basename(words[0]) == "kodelet-hook"
    if lean:
        test = f"[ -x {shlex.quote(words[0])} ] && [ -f {shlex.quote(words[3])} ]"
        problem = f"kodelet is gone from {os.path.dirname(os.path.dirname(words[0]))}"
    elif native:
        test = f"[ -x {shlex.quote(words[0])} ]"
        problem = f"kodelet is gone from {os.path.dirname(os.path.dirname(words[0]))}"
    else:
        test = f"command -v {shlex.quote(words[0])} >/dev/null 2>&1"
        problem = f"the {words[0]} command is not on the PATH Claude Code starts hooks with"
    fix = (
        f"kodelet: {problem}, so its guards cannot run and the call is blocked. Install "
        "kodelet where this finds it (its README: Installing kodelet), or remove its "
        f"entries from {SETTINGS_FILES.get(scope, 'the settings file')}: every hook whose "
        "command names kodelet (its README: Removing kodelet)."
    )
    return f"{test} || {{ echo {shlex.quote(fix)} >&2{_GUARD_END}{command}"


def unguarded(command: str) -> str:
    """The command a :func:`guarded` entry runs; any other command as it is (a check
    kodelet did not write exactly so is no check of kodelet's)."""
    _, found, rest = command.partition(_GUARD_END)
    if not found or not rest:
        return command
    try:
        return rest if guarded(rest) == command else command
    except ValueError:
        return command


@functools.lru_cache(maxsize=512)
def is_own_command(command: str) -> bool:
    """``kodelet claude hook [--option [value]]...`` (or ``kodelet-hook claude hook``),
    whichever interpreter or path runs it,
    behind kodelet's own :func:`guarded` check or not. Kept for the commands seen (a
    few per settings file): every hook call and every runtime load asks again, and
    shlex is slow."""
    if len(command) > 8192:
        return False
    command = unguarded(command)
    if len(command) > 4096 or SHELL_SYNTAX.intersection(command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i, word in enumerate(words):
        program = os.path.basename(word)
        start = None
        if program in PROGRAMS or word.endswith(LEAN_CLIENTS):
            start = i + 1
        elif word == "-m" and i + 1 < len(words) and words[i + 1] == "kodelet":
            start = i + 2
        if start is not None and tuple(words[start : start + 2]) in (BRIDGE_ARGS, ENSURE_ARGS):
            return all(
                w.startswith("-") or words[j - 1].startswith("-")
                for j, w in enumerate(words[start + 2 :], start + 2)
            )
    return False


def is_own_url(url: str) -> bool:
    """``http://127.0.0.1:<port>/kodelet/claude/hook``: the warm kodelet over HTTP."""
    prefix = "http://127.0.0.1:"
    if not url.startswith(prefix) or not url.endswith(HTTP_PATH):
        return False
    port = url[len(prefix) : -len(HTTP_PATH)]
    return port.isdigit() and len(port) <= 5


def is_own(hook: Any) -> bool:
    """A hook entry of ``hooks[event][i].hooks`` that calls kodelet's bridge."""
    if not isinstance(hook, dict):
        return False
    kind = hook.get("type", "command")
    if kind == "http":
        return isinstance(hook.get("url"), str) and is_own_url(hook["url"])
    return (
        kind == "command"
        and isinstance(hook.get("command"), str)
        and is_own_command(hook["command"])
    )


class OwnEntry(NamedTuple):
    """One of kodelet's entries in a settings file, and where it is."""

    event: str
    group: int
    """Its group's index in ``hooks[event]``."""
    handler: int
    """Its index in the group's ``hooks``."""
    matcher: Any
    """The group's ``matcher``; None when it has none."""
    hook: dict[str, Any]


def own_entries(settings: Mapping[str, Any], event: str | None = None) -> Iterator[OwnEntry]:
    """Each of kodelet's entries in a settings file's ``hooks`` (those of ``event`` only,
    when given): the one walk of that table for the installers, ``status``, ``verify``,
    the agents' trust records and the two-scope stand-down."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return
    for name, groups in hooks.items() if event is None else [(event, hooks.get(event))]:
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            inner = group.get("hooks") if isinstance(group, dict) else None
            for h, hook in enumerate(inner if isinstance(inner, list) else ()):
                if is_own(hook):
                    yield OwnEntry(name, g, h, group.get("matcher"), hook)


def own_hooks(settings: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event, entry) for each of kodelet's entries in a settings file's ``hooks``."""
    for own in own_entries(settings):
        yield own.event, own.hook


def own_hook(
    event: str, command: str, *, on_failure: str = "block", http: tuple[str, str] | None = None
) -> dict[str, Any]:
    """The entry ``claude install`` writes for ``event``: the command, or with ``http``
    (url, authorization header) a ``type: "http"`` entry. ``onFailure: "block"`` makes
    Claude Code block the call when the command itself fails (not found, crashed) or
    the URL does not answer: Claude Code 2.1.332 otherwise treats that as "go ahead"."""
    hook: dict[str, Any] = {"type": "command", "command": command}
    if http is not None:
        hook = {"type": "http", "url": http[0], "headers": {"Authorization": http[1]}}
    if on_failure == "block" and event in BLOCKING_EVENTS:
        hook["onFailure"] = "block"
    return hook
