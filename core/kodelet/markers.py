"""The pluggy markers every kodelet plugin uses: ``from kodelet import hookimpl``,
and the plugin manager that looks for them."""

from __future__ import annotations

from types import FunctionType, MethodType, ModuleType
from typing import Any

import pluggy

PROJECT = "kodelet"
ENTRY_POINT_GROUP = "kodelet.plugins"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# What pluggy takes for a hook when it finds it on a module.
_HOOKABLE = (FunctionType, MethodType, staticmethod, classmethod)


def _cannot_be_hook(namespace: Any, name: str) -> bool:
    """True for a module attribute pluggy would reject anyway: only a function or
    method can carry a marker. pluggy judges each name with ``inspect.getattr_static``,
    which costs tens of microseconds on a module; a plugin or hookspec module's
    imports and dunders are most of its names, so they are turned away first."""
    return isinstance(namespace, ModuleType) and not isinstance(
        vars(namespace).get(name), _HOOKABLE
    )


class PluginManager(pluggy.PluginManager):
    """pluggy's manager for the ``kodelet`` markers. It finds exactly the hooks pluggy
    finds, faster for module plugins (pytest's manager narrows the names it looks at
    the same way)."""

    def __init__(self) -> None:
        super().__init__(PROJECT)

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        if _cannot_be_hook(plugin, name):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> pluggy.HookspecOpts | None:
        if _cannot_be_hook(module_or_class, name):
            return None
        return super().parse_hookspec_opts(module_or_class, name)
