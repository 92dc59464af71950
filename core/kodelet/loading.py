"""Loading native plugins from the ``kodelet.plugins`` entry-point group.

One broken plugin must never stop the others from loading: its error is kept
and shown by ``kodelet plugins list`` instead.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import attrs
import importlib_metadata

from .markers import ENTRY_POINT_GROUP, PROJECT

log = logging.getLogger("kodelet.loading")


@attrs.define(kw_only=True)
class PluginInfo:
    """What ``kodelet plugins list`` shows of a native plugin."""

    name: str
    kind: str  # "builtin" | "python"
    location: str  # "builtin" | "installed"
    path: str | None = None
    version: str | None = None
    events: list[str] = attrs.field(factory=list)
    error: str | None = None
    disabled: bool = False
    plugin: Any = attrs.field(default=None, repr=False, eq=False)


def _is_own(dist: Any) -> bool:
    name = (dist.metadata["Name"] or "") if dist is not None else ""
    return name.lower().replace("_", "-") == PROJECT


def entry_points() -> list[tuple[bool, Any]]:
    """(is_builtin, entry point), built-ins first, each group sorted by name."""
    eps = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
    seen: set[str] = set()
    found: list[tuple[bool, Any]] = []
    for ep in sorted(eps, key=lambda e: (not _is_own(e.dist), e.name)):
        if ep.name in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(ep.name)
        found.append((_is_own(ep.dist), ep))
    return found


def load(ep: Any, builtin: bool) -> PluginInfo:
    dist = ep.dist
    info = PluginInfo(
        name=ep.name,
        kind="builtin" if builtin else "python",
        location="builtin" if builtin else "installed",
        version=None if dist is None else dist.version,
    )
    try:
        info.plugin = ep.load()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        info.error = f"import failed: {type(exc).__name__}: {exc}"
        log.warning("plugin %s failed to load: %s", ep.name, info.error)
    info.path = _path_of(info.plugin, dist)
    return info


def _path_of(obj: Any, dist: Any) -> str | None:
    module_file = getattr(obj, "__file__", None)
    if module_file:
        return str(
            Path(module_file).parent if Path(module_file).name == "__init__.py" else module_file
        )
    if dist is not None:
        try:
            return str(dist.locate_file(""))
        except Exception:
            return None
    return None
