"""The native plugins' own modules, as a warm kodelet keeps them between reloads.

A process imports a module once; a warm kodelet that reloads its runtime after a
plugin was edited would get the old module back from ``sys.modules`` and keep
answering with code no longer on disk. So it notes which top-level packages are the
plugins' own (every one their distributions install, and the package of each plugin
object), watches the files of their modules in ``sys.modules`` (looked for at every
check: a plugin may import a module at its first call, not when it is loaded), and
forgets them before it loads a runtime anew: the next import reads them from disk, as
in a new process. Compiled extension modules cannot be imported twice into one
process and are kept.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Collection, Iterable
from types import ModuleType
from typing import Any

import importlib_metadata

from ..kinds import Source

__all__ = ["forget", "loaded", "own_tops"]

KEPT = frozenset({"kodelet", "importlib_metadata", *sys.stdlib_module_names})
"""Top-level packages never forgotten: kodelet itself and what it loads plugins with."""


def _tops(info: Any) -> set[str]:
    """The top-level import names of one plugin: its object's package and what its
    distribution installs (``top_level.txt``, else the files it records)."""
    tops: set[str] = set()
    obj = info.plugin
    name = obj.__name__ if isinstance(obj, ModuleType) else getattr(obj, "__module__", None)
    if isinstance(name, str) and name:
        tops.add(name.partition(".")[0])
    if info.distribution:
        try:
            dist = importlib_metadata.distribution(info.distribution)
        except importlib_metadata.PackageNotFoundError:
            return tops
        declared = (dist.read_text("top_level.txt") or "").split()
        tops.update(declared)
        if not declared:
            for path in dist.files or ():
                first = path.parts[0] if path.parts else ""
                if len(path.parts) == 1 and first.endswith(".py"):
                    tops.add(first[:-3])
                elif len(path.parts) > 1 and first.isidentifier():
                    tops.add(first)
    return {t for t in tops if t.isidentifier() and not t.startswith("__")}


def _source(module: ModuleType | None) -> bool:
    """A module that can be imported again: Python source, byte code or a namespace."""
    file = getattr(module, "__file__", None)
    return file is None or str(file).endswith((".py", ".pyc"))


def own_tops(plugins: Iterable[Any]) -> set[str]:
    """The top-level import names of the native plugins among ``plugins``
    (:class:`~kodelet.loading.PluginInfo`; built-ins are kodelet's)."""
    tops: set[str] = set()
    for info in plugins:
        if info.plugin is not None and info.kind != Source.BUILTIN:
            tops |= _tops(info)
    return tops - KEPT


def loaded(tops: Collection[str]) -> dict[str, str | None]:
    """{module name: its file} of the modules of the packages ``tops`` now in
    ``sys.modules`` that can be imported again."""
    if not tops:
        return {}
    return {
        name: getattr(module, "__file__", None)
        for name, module in list(sys.modules.items())
        if name.partition(".")[0] in tops and _source(module)
    }


def forget(names: Iterable[str]) -> None:
    """Drop ``names`` from ``sys.modules``, so their next import reads them from disk."""
    for name in names:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()
