"""Which of kodelet's entries in an agent's hook files does the work for an event.

kodelet installed at two scopes of one agent (a project's shared file and the user's
own file) is two entries for every event, and the agent runs both: every hook would
run twice, and Gemini CLI would show a rewrite's note twice. The entries kodelet
writes outside the project file name their scope (``--scope user``). Such an entry
stands down, answering nothing, when an entry earlier in :data:`ORDER` holds the same
event and is sure to run. That is decided from the files on disk and the agent's own
command line, never from timing: the first entry in that order that will run does the
work. An entry that names no scope (the shared project file, or one a user wrote)
never stands down, so at least one entry always runs; where kodelet cannot be sure
(an agent that does not say where its project is, an HTTP entry, a file it cannot
read, a project left out by the agent's ``--setting-sources``), both run as before.

A checkout writes its own ``.claude/``, so an entry counts as doing the work only when it
runs this very kodelet: the project file's exactly as install writes it (``kodelet claude
hook``, found on the agent's PATH outside the project), a local file's this
interpreter's lean client by absolute path. A planted ``./kodelet`` never stands the
user's entry down.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .base import Dialect

ORDER = ("project", "local", "user")
"""Who does the work first: the project's shared entry, then this machine's entry for
the project, then the user's own."""
BLOCKING = ("PreToolUse", "UserPromptSubmit")


def declared_scope(command: str) -> str | None:
    """The scope a hook command names (``... claude hook --scope user``), or None."""
    words = _split(_unguarded(command)) or ()
    for i, word in enumerate(words[:-1]):
        if word == "--scope":
            return words[i + 1]
    return None


def lean_command(*args: str) -> str:
    """This installation's client of the warm kodelet, by absolute path, with ``args``:
    its native client (``kodelet-hook``) where it has one, else this interpreter's lean
    client (no site, no kodelet import per call: docs/HOSTS.md); no venv to activate."""
    return " ".join(shlex.quote(w) for w in lean_words(*args))


def lean_words(*args: str) -> list[str]:
    """:func:`lean_command` as words (what an entry's command splits into)."""
    from ..warm.native_client import native_path

    native = native_path()
    return [native, *args] if native else python_words(*args)


def python_words(*args: str) -> list[str]:
    """This interpreter's lean client, by absolute path: what local and user entries ran
    before the native client, and run where there is none."""
    return [sys.executable, "-I", "-S", str(_LEAN), *args]


_LEAN = Path(__file__).resolve().parent.parent / "warm" / "hook.py"


def _unguarded(command: str) -> str:
    from ..claude.installed import unguarded

    return unguarded(command)


@functools.lru_cache(maxsize=256)
def _split(command: str) -> tuple[str, ...] | None:
    """``command``'s words (None: it does not split): the same few commands are met on
    every call, and shlex is slow."""
    try:
        return tuple(shlex.split(command))
    except ValueError:
        return None


def runs_this_kodelet(
    dialect: Dialect, scope: str, command: str, env: Mapping[str, str], project: Path
) -> bool:
    """``command`` is the entry install writes for ``scope`` and starts this kodelet
    with the agent's ``env``: the shared file's ``kodelet claude hook``, found on PATH
    outside ``project``; any other file's this interpreter's lean client."""
    from ..claude.installed import OLD_PROJECT_COMMAND, PROJECT_COMMAND
    from . import DEFAULT

    agent = () if dialect is DEFAULT else ("--agent", dialect.name)
    words = _split(_unguarded(command))
    if words is None:
        return False
    if scope != "project":
        args = ("claude", "hook", *agent, "--scope", scope)
        return words in ((*lean_words(*args),), (*python_words(*args),))
    if words not in ((*PROJECT_COMMAND.split(), *agent), (*OLD_PROJECT_COMMAND.split(), *agent)):
        return False
    found = shutil.which(words[0], path=env.get("PATH", os.defpath))
    if found is None:
        return False
    real = Path(os.path.realpath(found))
    return not real.is_relative_to(os.path.realpath(project))


def runs(
    dialect: Dialect, scope: str, path: Path, event: str, env: Mapping[str, str], project: Path
) -> bool:
    """The agent's file ``path`` (of ``scope``) holds a kodelet entry for ``event`` that
    will run this kodelet for every call of it, and blocks the call should it fail
    (:meth:`~kodelet.agents.base.Dialect.sure_commands`)."""
    return any(
        runs_this_kodelet(dialect, scope, command, env, project)
        for command in dialect.sure_commands(path, event, env)
    )


CommandLines = Callable[[], Sequence[Sequence[str]]]
"""The command lines of the processes above a hook call, read when first needed."""


def worker(
    dialect: Dialect,
    data: Mapping[str, Any],
    env: Mapping[str, str],
    lines: CommandLines | None,
    scopes: Sequence[str] = ORDER,
) -> str | None:
    """The scope whose kodelet entry does the work for the agent's hook input ``data``:
    the first of ``scopes`` (in :data:`ORDER`) sure to run; None when none is. The
    project files are those of the folders the agent read (:meth:`Dialect.project_dirs`;
    none known: only the user's file counts); ``lines`` are the command lines above the
    hook (None: not known)."""
    event = data.get("hook_event_name")
    if not isinstance(event, str):
        return None
    projects = dialect.project_dirs(env, data)
    for scope in scopes:
        if scope not in dialect.config:
            continue
        for where in [Path("/")] if scope == "user" else projects:
            path = dialect.config_path(scope, where, env)
            # A kodelet the checkout holds is no kodelet of the user's: the outermost
            # folder bounds the checkout.
            inside = projects[-1] if projects else where
            if runs(dialect, scope, path, event, env, inside) and loads(
                dialect, scope, where, env, lines, data
            ):
                return scope
    return None


def loads(
    dialect: Dialect,
    scope: str,
    folder: Path,
    env: Mapping[str, str],
    lines: CommandLines | None,
    data: Mapping[str, Any],
) -> bool:
    """The agent that started the hook (whose command lines above it are ``lines``; None:
    not known) surely reads its hook file of ``scope`` (a project's in ``folder``): a
    project's only when trusted and not left out by a setting or flag of the agent's
    (:meth:`Dialect.reads_project`), any scope only when the agent's ``sources_flag``
    does not leave it out."""
    if scope != "user":
        if dialect.project_trust_env and env.get(dialect.project_trust_env) != "true":
            return False
        argv = None if lines is None else agent_argv(dialect, lines())
        if not dialect.reads_project(folder, env, argv, data):
            return False
    if not dialect.sources_flag:
        return True
    if lines is None:
        return False
    for args in lines():
        value = flag_value(list(args), dialect.sources_flag)
        if value is not None:
            return scope in value.split(",")
    return True


def agent_argv(dialect: Dialect, lines: Sequence[Sequence[str]]) -> list[str] | None:
    """The words after the agent's own name on the nearest command line above the hook
    that holds it (``codex exec -c ...``); None when none does."""
    names = dialect.process_names
    for args in lines:
        for i, word in enumerate(args):
            # kodelet's own command line names the agent too: ``--agent codex``.
            if os.path.basename(word) in names and (i == 0 or args[i - 1] != "--agent"):
                return list(args[i + 1 :])
    return None


def stands_down(
    dialect: Dialect,
    scope: str,
    data: Mapping[str, Any],
    env: Mapping[str, str],
    caller: int | None,
) -> str | None:
    """The scope that does the work instead of this entry of ``scope`` (the one the
    command names) for the agent's hook input ``data``, or None when this entry is to
    run."""
    if scope not in ORDER:
        return None
    # Only an earlier scope can take the work: this entry's own file, and the agent's
    # process tree it would be checked against, are not read on this hot path.
    earlier = ORDER[: ORDER.index(scope)]
    lines = None if caller is None else functools.cache(lambda: list(ancestors_args(caller)))
    return worker(dialect, data, env, lines, earlier)


def ancestors_args(pid: int, depth: int = 12) -> Iterator[list[str]]:
    """The command lines of ``pid`` and the processes above it (Linux ``/proc``, else
    ``ps``); stops where they cannot be read."""
    for _ in range(depth):
        if pid <= 1:
            return
        args, parent = _process(pid)
        if args is None:
            return
        yield args
        pid = parent


def _process(pid: int) -> tuple[list[str] | None, int]:
    proc = Path("/proc") / str(pid)
    try:
        raw = (proc / "cmdline").read_bytes()
        stat = (proc / "stat").read_text()
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        return [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0") if a], parent
    except (OSError, ValueError, IndexError):
        pass
    try:
        out = subprocess.run(
            ["ps", "-o", "ppid=", "-o", "args=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.split(None, 1)
        return (out[1].split() if len(out) > 1 else []), int(out[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None, 0


def flag_value(args: list[str], flag: str) -> str | None:
    """The value of ``flag`` in a command line (``--flag v`` or ``--flag=v``), or None."""
    for i, arg in enumerate(args):
        if arg == flag:
            return args[i + 1] if i + 1 < len(args) else ""
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1 :]
    return None
