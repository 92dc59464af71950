"""What ``kodelet hooks list`` and ``kodelet plugins list`` show, as plain data.

The CLI only formats these rows (as llm's ``get_plugins()`` does for ``llm
plugins``); hosts and tests can ask the same questions without a shell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .adapters.claude_code import NAME as CLAUDE
from .adapters.discovery import DISABLED_IN_CONFIG, DiscoveredHook
from .adapters.executables import NAME as EXECUTABLES
from .events import Event
from .kinds import Source, Status
from .loading import PluginInfo
from .recipes.loader import builtin_recipes
from .runtime import Runtime

__all__ = ["DISABLED_IN_CONFIG", "hook_rows", "implemented", "plugin_rows"]


def implemented(runtime: Runtime, plugin: Any) -> list[Event]:
    """Events a plugin implements, found without registering it (it is disabled)."""
    found: set[str] = set()
    for attr in dir(plugin):
        opts = runtime.pm.parse_hookimpl_opts(plugin, attr)
        if opts is not None:
            found.add(opts.get("specname") or attr)
    return [e for e in Event if e.value in found]


def _row(
    event: Event | None,
    name: str,
    kind: str,
    path: Any,
    order: int | None,
    status: Status,
    reason: str | None,
) -> dict[str, Any]:
    return {
        "event": None if event is None else event.value,
        "name": name,
        "kind": str(kind),
        "path": None if path is None else str(path),
        "order": order,
        "status": status.value,
        "reason": reason,
    }


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
    natives_off = [
        (info, implemented(runtime, info.plugin) if info.plugin is not None else [])
        for info in runtime.plugins
        if info.disabled or info.error
    ]
    rows: list[dict[str, Any]] = []
    for event in Event:
        if only is not None and event is not only:
            continue
        for i, entry in enumerate(runtime.hooks(event), start=1):
            rows.append(
                _row(event, entry.name, entry.source, entry.path, i, Status.ACTIVE, entry.note)
            )
        for hook in discovered:
            if hook.event is event and hook.status is not Status.ACTIVE:
                rows.append(
                    _row(
                        event,
                        hook.name,
                        Source.EXECUTABLE,
                        hook.path,
                        None,
                        hook.status,
                        hook.reason,
                    )
                )
        for c in claude_off:
            if c.event is event:
                rows.append(_row(event, c.name, Source.CLAUDE, c.path, None, c.status, c.reason))
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
        if hook.event is None:
            rows.append(
                _row(None, hook.name, Source.EXECUTABLE, hook.path, None, hook.status, hook.reason)
            )
    for c in claude_off:
        if c.event is None:
            rows.append(_row(None, c.name, Source.CLAUDE, c.path, None, c.status, c.reason))
    for info, events in natives_off:
        if info.error:
            rows.append(
                _row(None, info.name, info.kind, info.path, None, Status.SKIPPED, info.error)
            )
        elif not events:
            rows.append(
                _row(
                    None, info.name, info.kind, info.path, None, Status.DISABLED, DISABLED_IN_CONFIG
                )
            )
    return rows


def plugin_rows(runtime: Runtime) -> list[dict[str, Any]]:
    """Every native plugin the runtime knows of, loaded, disabled or broken."""
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
        "hooks": events,
        "skills": [],
        "recipes": shipped.get(info.name, []) if builtin else [],
        "error": info.error,
        "disabled": info.disabled,
    }
