"""What ``kodelet hooks list`` and ``kodelet plugins list`` show, as plain data.

The CLI only formats these rows (as llm's ``get_plugins()`` does for ``llm
plugins``); hosts and tests can ask the same questions without a shell.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .adapters.cache import DiscoveryCache, cache_disabled
from .adapters.discovery import DISABLED_IN_CONFIG, NOT_EXECUTABLE, DiscoveredHook
from .adapters.executables import NAME as EXECUTABLES
from .assembly import CLAUDE_ADAPTER as CLAUDE
from .events import Event
from .kinds import Source, Status
from .loading import PluginInfo
from .places import DISABLE_SUFFIX
from .runtime import Runtime
from .seam import HookEntry


def implemented(runtime: Runtime, plugin: Any) -> list[Event]:
    """Events a plugin implements, found without registering it (it is disabled)."""
    found: set[str] = set()
    for attr in dir(plugin):
        opts = runtime.pm.parse_hookimpl_opts(plugin, attr)
        if opts is not None:
            found.add(opts.get("specname") or attr)
    return [e for e in Event if e.value in found]


HOOK_NAMES = ("configure", *(e.value for e in Event))


def near_misses(runtime: Runtime, plugin: Any) -> list[tuple[Event | None, str]]:
    """Functions of a plugin that look meant as hooks but are not: (the event it likely
    meant, why). A misspelt ``before_tool_cal`` is otherwise silently never called, and
    the guard it was stops guarding. As pytest does, a function marked ``@hookimpl``
    whose name is no hook is named too; an unmarked one only when its name is close to
    a hook's. Asked by the listings only: a runtime's start pays nothing for it."""
    if plugin is None:
        return []
    own = getattr(plugin, "__name__", None) if inspect.ismodule(plugin) else None
    found: list[tuple[Event | None, str]] = []
    for attr in dir(plugin):
        if attr.startswith("_") or attr in HOOK_NAMES:
            continue
        try:
            value = getattr(plugin, attr)
        except Exception:
            continue
        if not (inspect.isfunction(value) or inspect.ismethod(value)):
            continue
        if own is not None and getattr(value, "__module__", None) != own:
            continue  # imported into the module, not its own
        opts = runtime.pm.parse_hookimpl_opts(plugin, attr)
        name = (opts.get("specname") if opts else None) or attr
        if name in HOOK_NAMES:
            continue
        close = difflib.get_close_matches(name, HOOK_NAMES, n=1, cutoff=0.8)
        if opts is None and not close:
            continue
        meant = close[0] if close else None
        why = f"function {name}() is not a hook" + (
            " (marked @hookimpl, but no hook has that name)" if opts is not None else ""
        )
        if meant:
            why += f"; did you mean {meant}?"
        event = Event(meant) if meant and meant != "configure" else None
        found.append((event, why))
    return found


def error_lines(text: str) -> str:
    """A multi-line error (pluggy's) as one table cell: its lines joined by ``; ``."""
    return "; ".join(ln.strip() for ln in text.splitlines() if ln.strip())


def _row(
    event: Event | None,
    name: str,
    kind: str,
    path: Any,
    order: int | None,
    status: Status,
    reason: str | None,
    *,
    fix: str | None = None,
    on_failure: str | None = None,
) -> dict[str, Any]:
    """One listing row. ``fix``: what makes a hook that will not run run (``chmod +x
    PATH``); ``on_failure``: on a blocking event, what a failure of this hook does to
    the call, "block" or "allow" (it fails open)."""
    return {
        "event": None if event is None else event.value,
        "name": name,
        "kind": str(kind),
        "path": None if path is None else str(path),
        "order": order,
        "status": status.value,
        "reason": reason,
        "fix": fix,
        "on_failure": on_failure,
    }


def _file_row(event: Event | None, hook: DiscoveredHook) -> dict[str, Any]:
    """An executable hook file that will not run, under its own name."""
    return _row(event, _shown_name(hook), Source.EXECUTABLE, hook.path, None, hook.status,
                hook.reason, fix=hook.fix)  # fmt: skip


def on_failure(runtime: Runtime, event: Event, entry: HookEntry) -> str | None:
    """What a failure of ``entry`` does on ``event``: None off the blocking events
    (recorded only); "block" or "allow". A Claude Code hook keeps Claude Code's rule,
    its own ``onFailure`` (kodelet's ``fail_closed = true`` for it blocks too)."""
    if not event.blocking:
        return None
    if entry.fail_closed:
        return "block"
    claude = runtime.adapters.get(CLAUDE) if entry.source is Source.CLAUDE else None
    return "block" if claude is not None and entry.name in claude.blocks_on_failure else "allow"


def hook_rows(
    runtime: Runtime, only: Event | None = None, files: Sequence[DiscoveredHook] | None = None
) -> list[dict[str, Any]]:
    """Active hooks per event in call order, then the ones that will not run and why;
    what has no known event (could not be asked or loaded) comes last, under every filter.
    ``files`` (from :func:`~kodelet.adapters.discovery.inspect`) lists executables
    that were looked at but not run, for a runtime built without them."""
    adapter = runtime.adapters.get(EXECUTABLES)
    discovered = list(files or ()) if adapter is None else adapter.discovered
    claude = runtime.adapters.get(CLAUDE)
    claude_off = [] if claude is None else claude.discovered
    # A plugin whose configure() failed is still registered and runs: it is listed
    # once, as active, with the failure as its reason.
    natives_off = [
        (info, implemented(runtime, info.plugin) if info.plugin is not None else [])
        for info in runtime.plugins
        if info.disabled or (info.error and not _registered(runtime, info))
    ]
    errors = {i.name: i.error for i in runtime.plugins if i.error and _registered(runtime, i)}
    misses = [
        (info, event, why)
        for info in runtime.plugins
        if _registered(runtime, info)
        for event, why in near_misses(runtime, info.plugin)
    ]
    renamed = _renamed_events(runtime, discovered)
    rows: list[dict[str, Any]] = []
    for event in Event:
        if only is not None and event is not only:
            continue
        for i, entry in enumerate(runtime.hooks(event), start=1):
            rows.append(
                _row(
                    event,
                    entry.name,
                    entry.source,
                    entry.path,
                    i,
                    Status.ACTIVE,
                    entry.note or errors.get(entry.name),
                    on_failure=on_failure(runtime, event, entry),
                )
            )
        for hook in discovered:
            if (hook.event or renamed.get(hook.path)) is event and hook.status is not Status.ACTIVE:
                rows.append(_file_row(event, hook))
        for c in claude_off:
            if c.event is event:
                rows.append(_row(event, c.name, Source.CLAUDE, c.path, None, c.status, c.reason))
        for info, meant, why in misses:
            if meant is event:
                rows.append(_row(event, info.name, info.kind, info.path, None, Status.SKIPPED, why))
        for info, events in natives_off:
            if event in events and not info.error:
                rows.append(
                    _row(
                        event,
                        info.name,
                        info.kind,
                        info.path,
                        None,
                        Status.DISABLED,
                        DISABLED_IN_CONFIG,
                    )
                )
    for hook in discovered:
        if hook.event is None and hook.path not in renamed:
            rows.append(_file_row(None, hook))
    for c in claude_off:
        if c.event is None:
            rows.append(_row(None, c.name, Source.CLAUDE, c.path, None, c.status, c.reason))
    for info, meant, why in misses:
        if meant is None:
            rows.append(_row(None, info.name, info.kind, info.path, None, Status.SKIPPED, why))
    for info, events in natives_off:
        if info.error:
            reason = error_lines(info.error)
            rows.append(_row(None, info.name, info.kind, info.path, None, Status.SKIPPED, reason))
        elif not events:
            rows.append(
                _row(
                    None, info.name, info.kind, info.path, None, Status.DISABLED, DISABLED_IN_CONFIG
                )
            )
    return rows


def _registered(runtime: Runtime, info: PluginInfo) -> bool:
    return info.plugin is not None and runtime.pm.is_registered(info.plugin)


def _is_renamed(hook: DiscoveredHook) -> bool:
    return hook.status is Status.DISABLED and hook.path.name.endswith(DISABLE_SUFFIX)


def _shown_name(hook: DiscoveredHook) -> str:
    """A hook renamed ``NAME.disable`` is still hook ``NAME``: that is what enables it."""
    return hook.name.removesuffix(DISABLE_SUFFIX) if _is_renamed(hook) else hook.name


def _renamed_events(runtime: Runtime, discovered: list[DiscoveredHook]) -> dict[Path, Event]:
    """The events of hooks renamed ``NAME.disable``, as the discovery cache last knew them.

    A disabled file is never run, so asking it is not an option; the cache may remember."""
    off = [h.path for h in discovered if _is_renamed(h)]
    if not off or cache_disabled(runtime.env):
        return {}
    cache = DiscoveryCache.for_root(runtime.places.global_root, env=runtime.env)
    found = {}
    for path in off:
        event = cache.renamed_event(path, path.with_name(path.name.removesuffix(DISABLE_SUFFIX)))
        if event is not None:
            found[path] = event
    return found


def skipped_hooks(runtime: Runtime) -> list[dict[str, Any]]:
    """Hooks that were meant to run but cannot, each with why and how to fix it.

    What a dispatch cannot say itself: ``hooks run`` and ``replay`` print these
    once, so a guardrail missing ``chmod +x`` is not silently a no-op. Disabled
    hooks (asked for), shadowed ones (overridden on purpose) and non-executable
    files without a ``#!`` line (notes beside the hooks) are left out."""
    adapter = runtime.adapters.get(EXECUTABLES)
    found: list[dict[str, Any]] = []
    for hook in [] if adapter is None else adapter.discovered:
        if hook.status is not Status.SKIPPED or hook.shadowed_by is not None:
            continue
        if hook.reason == NOT_EXECUTABLE and not _is_script(hook.path):
            continue  # a README or notes kept beside the hooks, never meant to run
        found.append(
            {
                "name": hook.name,
                "path": str(hook.path),
                "reason": hook.reason,
                "fix": hook.fix,
                "native": False,
            }
        )
    for info in runtime.plugins:
        if info.error and not _registered(runtime, info) and not info.disabled:
            found.append(
                {
                    "name": info.name,
                    "path": info.path,
                    "reason": info.error,
                    "fix": None,
                    "native": True,
                }
            )
    return found


def _is_script(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"#!"
    except OSError:
        return False


def suggest(name: str, names: Iterable[str]) -> list[str]:
    """Names the user may have meant: ``org/repo/NAME`` for a bare ``NAME``, then near misses."""
    pool = sorted(set(names))
    exact = [n for n in pool if n.endswith("/" + name)]
    close = difflib.get_close_matches(name, pool, n=5, cutoff=0.6)
    return exact + [n for n in close if n not in exact]


def plugin_rows(runtime: Runtime) -> list[dict[str, Any]]:
    """Every native plugin the runtime knows of, loaded, disabled or broken."""
    from .recipes.loader import builtin_recipes  # only plugins list needs the recipes

    shipped = builtin_recipes()
    return [_plugin_row(runtime, info, shipped) for info in runtime.plugins]


def _plugin_row(
    runtime: Runtime, info: PluginInfo, shipped: dict[str, list[str]]
) -> dict[str, Any]:
    events = list(info.events)
    if info.disabled and info.plugin is not None:
        events = [e.value for e in implemented(runtime, info.plugin)]
    builtin = info.kind == Source.BUILTIN
    return {
        "name": info.name,
        "kind": str(info.kind),
        "location": str(info.location),
        "path": info.path,
        "version": info.version,
        "distribution": info.distribution,
        "hooks": events,
        "skills": [],
        "recipes": shipped.get(info.name, []) if builtin else [],
        "error": info.error,
        "disabled": info.disabled,
        "warnings": [why for _, why in near_misses(runtime, info.plugin)],
    }
