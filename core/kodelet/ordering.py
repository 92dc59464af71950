"""The call order of one event: native impls in pluggy's order and every adapter's hooks,
sorted stably by :class:`~kodelet.seam.Rank` (DESIGN.md, Call order)."""

from __future__ import annotations

import logging
import operator
from typing import TYPE_CHECKING, Any

from .events import Event
from .kinds import Source
from .seam import ADAPTER_HOOKS, WHOLE_PAYLOAD, HookEntry, Rank

if TYPE_CHECKING:
    from .runtime import Runtime

log = logging.getLogger("kodelet.runtime")


def call_order(runtime: Runtime, event: Event) -> list[HookEntry]:
    """Each hook of ``event`` as the dispatch loop will call it, with its own settings."""
    out: list[HookEntry] = []
    for impl in reversed(getattr(runtime.pm.hook, event.value).get_hookimpls()):
        if impl.hookwrapper or impl.wrapper:
            log.warning("plugin %s: hook wrappers are not supported; ignored", impl.plugin_name)
            continue
        expand = getattr(impl.plugin, ADAPTER_HOOKS, None)
        if callable(expand):
            for h in expand(event):
                out.append(_entry(runtime, h.name, h.source, h.rank, h.run, h.arun, WHOLE_PAYLOAD,
                                  path=h.path, note=h.note))  # fmt: skip
            continue
        source = runtime.plugin_source(impl.plugin_name)
        rank = Rank.BUILTIN if source is Source.BUILTIN else Rank.NATIVE
        rank = Rank.FIRST if impl.tryfirst and rank is Rank.NATIVE else rank
        names, fn = tuple(impl.argnames), impl.function
        get = operator.attrgetter(*names) if names else None
        path = next((i.path for i in runtime.plugins if i.name == impl.plugin_name and i.path),
                    getattr(impl.plugin, "__file__", None))  # fmt: skip
        out.append(_entry(runtime, impl.plugin_name, source, rank, fn, fn, len(names), get, path))
    out.sort(key=operator.attrgetter("rank"))  # stable: each rank keeps its own order
    return out


def _entry(runtime: Runtime, name: str, source: Source, rank: Rank, call: Any, acall: Any,
           nargs: int, get: Any = None, path: str | None = None,
           note: str | None = None) -> HookEntry:  # fmt: skip
    config = runtime.config
    return HookEntry(name=name, source=source, rank=rank, call=call, acall=acall, get=get,
                     nargs=nargs, timeout=config.timeout_for(name),
                     fail_closed=config.hook(name).fail_closed, path=path, note=note)  # fmt: skip
