"""Claude Code's hook settings as files on disk: where they are, and what each entry says.

Claude Code reads ``hooks`` from ``~/.claude/settings.json`` (user),
``<project>/.claude/settings.json`` (project), ``<project>/.claude/settings.local.json``
(local) and the ``hooks/hooks.json`` of each plugin. Every one of these files can be
written by someone else (a cloned repository brings its ``.claude/``), so a file or
entry that cannot be read is reported and skipped on its own: it never takes the
other files' hooks down with it.

Each file is trusted as an executable in ``.kodelet/hooks`` is (docs/SECURITY.md):
a file, or a directory between it and its root, that another user owns or could
write makes every hook of that file a skipped one (``untrusted: ...``), and so does
a script inside the project or plugin that a command names. The roots: ``~/.claude``
for the user's file, ``<project>/.claude`` for the project's, the kodelet root a
plugin is installed under for its ``hooks.json``, and the project directory (the
plugin's directory) for the scripts.
"""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from .. import jsonio
from ..claude.events import HookEvent
from ..claude.installed import is_own
from ..claude.matchers import Matcher, MatcherError
from ..config import check_timeout
from ..errors import KodeletError
from ..places import Places, installed_plugins
from .discovery import untrusted

log = logging.getLogger("kodelet.claude")

PLUGIN_ROOT = "${CLAUDE_PLUGIN_ROOT}"
PROMPT_HOOKS = "prompt hooks need a model (not configured)"


@attrs.frozen(kw_only=True)
class SettingsFile:
    """One place Claude Code reads hooks from; ``plugin_root`` for a plugin's file.

    ``trust_root``: the top of the directories judged with the file; ``project``: the
    directory whose scripts a command may name (None: none judged)."""

    scope: str
    path: Path
    plugin_root: Path | None = None
    trust_root: Path | None = None
    project: Path | None = None
    shadowed_by: Path | None = None


@attrs.frozen(kw_only=True)
class ClaudeHookSpec:
    """One command of one matcher of one settings file, or the reason it cannot run.

    ``name`` is ``claude:<scope>:<Event>:<matcher index>:<hook index>``; an entry
    that is broken above the hook level has the shorter prefix naming what broke."""

    name: str
    scope: str
    path: Path
    event: HookEvent | None = None
    matcher: str | None = None
    command: str | None = None
    timeout: float | None = None
    async_: bool = False
    plugin_root: str | None = None
    on_failure: str | None = None
    """Claude Code's ``onFailure``: ``"block"`` makes a failed run block."""
    warnings: tuple[str, ...] = ()
    """What kodelet runs differently from Claude Code for this entry (said at load)."""
    problem: str | None = None


def settings_files(places: Places, env: Mapping[str, str]) -> list[SettingsFile]:
    """The files in Claude Code's order: user, project, local, then plugin repositories
    (repo-local root first; a repository installed in both roots is read once)."""
    files: list[SettingsFile] = []
    home = env.get("HOME")
    if home:
        user = Path(home) / ".claude"
        files.append(
            SettingsFile(
                scope="user", path=user / "settings.json", trust_root=user, project=places.cwd
            )
        )
    project = places.cwd / ".claude"
    for scope, name in (("project", "settings.json"), ("local", "settings.local.json")):
        files.append(
            SettingsFile(scope=scope, path=project / name, trust_root=project, project=places.cwd)
        )
    seen: dict[str, Path] = {}
    for _, root in places.roots():
        for name, pdir in installed_plugins(root):
            # A plugin higher up takes the place of one of the same name lower down, as
            # for executables; the lower one's hooks are listed as shadowed, not dropped
            # from sight (an empty hooks.json in a checkout must not silently remove a
            # user's guard).
            above = seen.setdefault(name, pdir)
            path = pdir / "hooks" / "hooks.json"
            if path.is_file():
                files.append(
                    SettingsFile(
                        scope=f"plugin:{name}",
                        path=path,
                        plugin_root=pdir,
                        trust_root=root,
                        shadowed_by=None if above == pdir else above,
                    )
                )
    return files


def _problem(spec: SettingsFile, name: str, why: str, event: HookEvent | None = None) -> Any:
    log.warning("%s: %s", spec.path, why)
    return ClaudeHookSpec(name=name, scope=spec.scope, path=spec.path, event=event, problem=why)


class SettingsFileError(KodeletError, ValueError):
    """A settings file that cannot be read as a JSON object; the message says why."""


def read_settings_file(
    path: str | os.PathLike[str],
    what: str = "Claude settings",
    *,
    empty_ok: bool = True,
    comments: bool = False,
) -> tuple[str | None, dict[str, Any]]:
    """The one reader of Claude-style settings files, for running their hooks and for
    editing them (every agent's installer): the text (None when there is no file) and
    its JSON object. A cloned repository writes ``.claude/``, so it is read as strictly
    as kodelet's own files: a regular file of bounded size, no duplicate keys.
    ``comments``: whole-line ``//`` comments are allowed (as Copilot CLI writes them)."""
    try:
        text = jsonio.read_file(path, what).decode("utf-8")
    except FileNotFoundError:
        return None, {}
    except (jsonio.FileError, UnicodeDecodeError) as exc:
        raise SettingsFileError(f"cannot read: {exc}") from None
    read = text
    if comments:
        read = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//"))
    if empty_ok and not read.strip():
        return text, {}
    try:
        data = jsonio.loads(read, str(path))
    except ValueError as exc:
        raise SettingsFileError(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsFileError(f"expected a JSON object, got {type(data).__name__}")
    return text, data


def _read(spec: SettingsFile) -> tuple[dict[str, Any] | None, str | None]:
    """The file's ``hooks`` table, or why it cannot be had; (None, None) when there is none."""
    try:
        text, data = read_settings_file(spec.path, empty_ok=False)
    except SettingsFileError as exc:
        return None, str(exc)
    if text is None:
        return None, None
    hooks = data.get("hooks")
    if hooks is None:
        return None, None
    if not isinstance(hooks, dict):
        return None, f"key 'hooks': expected an object, got {type(hooks).__name__}"
    return hooks, None


_PROJECT_DIR = ("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR")


def quote_plugin_root(command: str) -> str:
    """``command`` with each ``${CLAUDE_PLUGIN_ROOT}`` a double-quoted expansion of the
    environment variable the command hook gets, never the path pasted into the text:
    a space in the path must not split a word (exit 127, a guard failing open), and
    ``$(...)`` in a directory name must not run. Inside double quotes it is left as
    it is; inside single quotes the quote is closed around it."""
    out: list[str] = []
    quote = ""
    i, n = 0, len(command)
    while i < n:
        if command.startswith(PLUGIN_ROOT, i):
            quoted = f'"{PLUGIN_ROOT}"'
            out.append({"": quoted, '"': PLUGIN_ROOT, "'": f"'{quoted}'"}[quote])
            i += len(PLUGIN_ROOT)
            continue
        c = command[i]
        if c == "\\" and quote != "'":
            out.append(command[i : i + 2])
            i += 2
            continue
        if c in "'\"" and quote in ("", c):
            quote = "" if quote else c
        out.append(c)
        i += 1
    return "".join(out)


def untrusted_script(spec: SettingsFile, command: str) -> str | None:
    """Why a script inside the project (or the plugin) that ``command`` names must not
    run, or None. Every word that is a path to a file there is judged, so
    ``python3 .claude/hooks/guard.py`` is as checked as ``./guard.sh``."""
    base = spec.plugin_root or spec.project
    if base is None:
        return None
    roots = [r for r in (spec.plugin_root, spec.project) if r is not None]
    subs = [(var, str(spec.project)) for var in _PROJECT_DIR] if spec.project else []
    if spec.plugin_root is not None:
        subs.append((PLUGIN_ROOT, str(spec.plugin_root)))
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for word in words:
        for var, value in subs:
            word = word.replace(var, value)
        if "/" not in word:
            continue
        path = Path(os.path.normpath(base / word))  # an absolute word stays itself
        root = next((r for r in roots if path.is_relative_to(r) and path != r), None)
        if root is not None and path.is_file():
            why = untrusted(path, root)
            if why:
                return why
    return None


def _timeout(value: Any) -> float | None:
    return None if value is None else check_timeout(value, "'timeout'")


IF_NOT_EVALUATED = (
    "'if' is not evaluated by kodelet: the hook runs on every call its matcher matches"
)
REWAKE_AS_ASYNC = "'asyncRewake' runs as 'async': a late exit 2 does not wake the model"


def _on_failure(raw: dict[str, Any], where: str, warnings: list[str]) -> str | None:
    """``onFailure`` as Claude Code reads it; an unknown value counts as ``"block"``
    (a guard whose author wanted something else than "continue" fails closed)."""
    value = raw.get("onFailure")
    if value is None or value in ("block", "continue"):
        return value
    warnings.append(f'{where}.onFailure {value!r} is not "block" or "continue": read as "block"')
    return "block"


def _command(spec: SettingsFile, name: str, event: HookEvent, where: str, raw: Any, m: Any) -> Any:
    if not isinstance(raw, dict):
        return _problem(spec, name, f"{where}: expected an object", event)
    kind = raw.get("type", "command")
    if kind == "prompt":
        return ClaudeHookSpec(
            name=name, scope=spec.scope, path=spec.path, event=event, problem=PROMPT_HOOKS
        )
    if kind != "command":
        return _problem(spec, name, f"{where}.type: unknown hook type {kind!r}", event)
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        return _problem(spec, name, f"{where}.command: expected a non-empty string", event)
    try:
        timeout = _timeout(raw.get("timeout"))
    except ValueError as exc:
        return _problem(spec, name, f"{where}: {exc}", event)
    why = untrusted_script(spec, command)
    if why:
        return _problem(spec, name, f"{where}.command {command!r}: untrusted: {why}", event)
    root = None if spec.plugin_root is None else str(spec.plugin_root)
    if root is not None:
        command = quote_plugin_root(command)
    warnings: list[str] = []
    on_failure = _on_failure(raw, where, warnings)
    if raw.get("if") is not None:
        warnings.append(f"{where}: {IF_NOT_EVALUATED} ({raw['if']!r})")
    rewake = raw.get("asyncRewake") is True
    if rewake:
        warnings.append(f"{where}: {REWAKE_AS_ASYNC}")
    for warning in warnings:
        log.warning("%s: %s", spec.path, warning)
    return ClaudeHookSpec(
        name=name,
        scope=spec.scope,
        path=spec.path,
        event=event,
        matcher=m,
        command=command,
        timeout=timeout,
        async_=raw.get("async") is True or rewake,
        plugin_root=root,
        on_failure=on_failure,
        warnings=tuple(warnings),
    )


def read_hooks(spec: SettingsFile) -> Iterator[ClaudeHookSpec]:
    """Every hook of one file, in file order, each runnable or carrying its problem."""
    if spec.shadowed_by is not None:
        shadowed = f"shadowed by {spec.shadowed_by} (same plugin name, higher up)"
        unshadowed = attrs.evolve(spec, shadowed_by=None)
        for hook in read_hooks(unshadowed):
            yield hook if hook.problem else attrs.evolve(hook, problem=shadowed)
        return
    base = f"claude:{spec.scope}"
    hooks, why = _read(spec)
    if why is not None:
        yield _problem(spec, base, why)
    if not hooks:
        return
    why = None if spec.trust_root is None else untrusted(spec.path, spec.trust_root)
    if why:
        yield _problem(spec, base, f"untrusted: {why}")
        return
    for key, matchers in hooks.items():
        try:
            event = HookEvent(key)
        except ValueError:
            yield _problem(spec, f"{base}:{key}", f"hooks.{key}: unknown Claude Code event")
            continue
        if not isinstance(matchers, list):
            yield _problem(spec, f"{base}:{key}", f"hooks.{key}: expected a list", event)
            continue
        for i, entry in enumerate(matchers):
            where = f"hooks.{key}[{i}]"
            prefix = f"{base}:{key}:{i}"
            if not isinstance(entry, dict) or not isinstance(entry.get("hooks"), list):
                yield _problem(spec, prefix, f"{where}: expected an object with a 'hooks' list")
                continue
            matcher = entry.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                yield _problem(spec, prefix, f"{where}.matcher: expected a string", event)
                continue
            try:
                Matcher(matcher)
            except (MatcherError, ValueError) as exc:
                yield _problem(spec, prefix, f"{where}.matcher: {exc}", event)
                continue
            for j, raw in enumerate(entry["hooks"]):
                if is_own(raw):  # kodelet's own bridge: Claude Code runs it, never kodelet
                    continue
                yield _command(spec, f"{prefix}:{j}", event, f"{where}.hooks[{j}]", raw, matcher)


def load_hooks(places: Places, env: Mapping[str, str]) -> list[ClaudeHookSpec]:
    """The hooks of every settings file and plugin repository, in the order they run."""
    return [h for f in settings_files(places, env) for h in read_hooks(f)]
