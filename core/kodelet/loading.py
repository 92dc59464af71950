"""Loading native plugins from the ``kodelet.plugins`` entry-point group.

One broken plugin must never stop the others from loading: its error is kept
and shown by ``kodelet plugins list`` instead.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import importlib_metadata

from .errors import describe
from .markers import ENTRY_POINT_GROUP, PROJECT
from .version import VERSION

log = logging.getLogger("kodelet.loading")


@attrs.define(kw_only=True)
class PluginInfo:
    """What ``kodelet plugins list`` shows of a native plugin."""

    name: str
    kind: str  # "builtin" | "python"
    location: str  # "builtin" | "installed"
    path: str | None = None
    version: str | None = None
    # What ``pip uninstall`` takes: one distribution may hold several plugins.
    distribution: str | None = None
    events: list[str] = attrs.field(factory=list)
    error: str | None = None
    disabled: bool = False
    plugin: Any = attrs.field(default=None, repr=False, eq=False)


_OWN = {"Name": PROJECT, "Version": VERSION}


def _is_own(dist: Any) -> bool:
    name = (dist.metadata["Name"] or "") if dist is not None else ""
    return name.lower().replace("_", "-") == PROJECT


def entry_points(*, builtins_only: bool = False) -> list[tuple[bool, Any]]:
    """(is_builtin, entry point), built-ins first, each group sorted by name.

    ``builtins_only`` reads kodelet's own distribution instead of scanning every
    installed one, which is most of the cost of a runtime with only built-ins."""
    if builtins_only:
        try:
            own = importlib_metadata.distribution(PROJECT).entry_points
        except importlib_metadata.PackageNotFoundError:
            return []
        return [(True, ep) for ep in sorted(own.select(group=ENTRY_POINT_GROUP), key=_name)]
    eps = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
    seen: set[str] = set()
    found: list[tuple[bool, Any]] = []
    for ep in sorted(eps, key=lambda e: (not _is_own(e.dist), e.name)):
        if ep.name in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(ep.name)
        found.append((_is_own(ep.dist), ep))
    return found


def _name(ep: Any) -> str:
    return str(ep.name)


def load(ep: Any, builtin: bool, *, disabled: bool = False) -> PluginInfo:
    """The plugin an entry point names; ``disabled`` records it without importing it,
    so a plugin switched off in config.toml runs no code at all."""
    dist = ep.dist
    # Metadata is parsed anew on each access, so it is read once, and not at all for
    # a built-in: that one ships in kodelet's own distribution.
    meta: Any = None if dist is None else _OWN if builtin else dist.metadata
    info = PluginInfo(
        name=ep.name,
        kind="builtin" if builtin else "python",
        location="builtin" if builtin else "installed",
        version=None if meta is None else meta["Version"],
        distribution=None if meta is None else meta["Name"],
    )
    if disabled:
        info.disabled = True
        info.path = _path_of(None, ep, dist)
        return info
    try:
        target = ep.load()
        # An entry point naming a class gets one instance per runtime, so a
        # plugin's settings from ``configure`` never leak between runtimes.
        info.plugin = target() if inspect.isclass(target) else target
    except BaseException as exc:
        # SystemExit at import is the plugin's failure, not a request to stop the host.
        if isinstance(exc, KeyboardInterrupt):
            raise
        info.error = f"import failed: {type(exc).__name__}: {exc}"
        log.warning("plugin %s failed to load: %s", ep.name, info.error)
    info.path = _path_of(info.plugin, ep, dist)
    return info


def _path_of(obj: Any, ep: Any, dist: Any) -> str | None:
    """Where the plugin's code lives, so ``plugins list`` points at something to open.

    A module's own file; for a plugin object, the file of the module it is
    defined in (the one the entry point names); a package is shown as its
    directory. The distribution's root, which is site-packages even for an
    editable install, is the last resort.
    """
    module = obj if isinstance(obj, ModuleType) else None
    if module is None and obj is not None:
        for name in (getattr(ep, "module", None), getattr(obj, "__module__", None)):
            module = sys.modules.get(name) if isinstance(name, str) else None
            if getattr(module, "__file__", None):
                break
    module_file = getattr(module, "__file__", None)
    if module_file is None and obj is None:
        module_file = _spec_origin(getattr(ep, "module", None))
    if module_file:
        path = Path(module_file)
        return str(path.parent if path.name == "__init__.py" else path)
    if dist is not None:
        try:
            return str(dist.locate_file(""))
        except Exception:
            return None
    return None


def _spec_origin(module: str | None) -> str | None:
    if not module:
        return None
    try:
        spec = importlib.util.find_spec(module)
    except Exception:  # a parent package that fails to import, a bad name
        return None
    if spec is None or not spec.has_location:
        return None
    return spec.origin


def configure_plugins(pm: Any, config: Any, plugins: list[PluginInfo], only: Any = None) -> None:
    """Call every ``configure`` impl (or ``only``'s) with its plugin's own table; a
    failure is that plugin's, logged and kept for ``plugins list``, never the host's."""
    for impl in reversed(pm.hook.configure.get_hookimpls()):
        if only is not None and impl.plugin is not only:
            continue
        own = config.plugin_config(impl.plugin_name)
        try:
            impl.function(*[{"config": own}[a] for a in impl.argnames])
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            # Its own logger: a listing mutes the loading warnings it shows as rows, but
            # shows this one, as the plugin still runs.
            logging.getLogger("kodelet.configure").warning(
                "plugin %s: configure failed: %s", impl.plugin_name, describe(exc)
            )
            for info in plugins:
                if info.name == impl.plugin_name:
                    info.error = f"configure failed: {describe(exc)}"
