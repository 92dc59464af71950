"""The runtime: a plugin manager that orders hooks, dispatches events through the
merge policy and records a trace.

Constructing one does no I/O and loads nothing (like pluggy's ``PluginManager``);
:func:`kodelet.assembly.load_runtime` assembles a ready one. Nothing here is
global: two runtimes in one process never see each other's plugins. Every kind
of hook other than a native impl arrives through the seam (:mod:`kodelet.seam`).
"""

from __future__ import annotations

import contextlib
import logging
import operator
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from . import hookspecs
from .calls import Call, CoroutineRunner, caught, feed, run
from .config import Config
from .events import Event
from .kinds import Location, Source
from .loading import PluginInfo, configure_plugins
from .markers import PluginManager
from .payloads import BasePayload
from .places import Places
from .policy import Reducer, reducer_for
from .seam import ADAPTER_HOOKS, WHOLE_PAYLOAD, HookEntry, Rank
from .trace import Dispatch, LazyDispatch, RawRecord

log = logging.getLogger("kodelet.runtime")

SLOW_AFTER = 1.0


class AuditSink(Protocol):
    """Where a runtime reports each dispatch's decisions (:class:`kodelet.audit.Audit`)."""

    def dispatched(
        self, payload: BasePayload, records: list[RawRecord], agent: str | None = None
    ) -> None: ...

    def warm_up(self) -> None: ...

    def close(self) -> None: ...


class Runtime:
    """Loads nothing by itself: register plugins and add adapters, then dispatch.

    ``disabled`` names plugins that :meth:`add_plugin` records but never registers."""

    def __init__(
        self,
        *,
        config: Config | None = None,
        places: Places | None = None,
        env: Mapping[str, str] | None = None,
        disabled: Iterable[str] = (),
        slow_after: float = SLOW_AFTER,
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.places = places if places is not None else Places.resolve(None, None, self.env)
        self.config = config if config is not None else Config()
        self.no_hooks = self.config.no_hooks
        self.slow_after = slow_after
        self.pm = PluginManager()
        self.pm.add_hookspecs(hookspecs)
        self.plugins: list[PluginInfo] = []
        self.adapters: dict[str, Any] = {}
        self._disabled = set(disabled) | set(self.config.disabled_plugins)
        self._sources: dict[str, Source] = {}
        self._order: dict[Event, tuple[list[HookEntry], list[Call]]] = {}
        self._coroutines = CoroutineRunner()
        self.audit: AuditSink | None = None
        """Given by :func:`kodelet.assembly.load_runtime`: the decision log's sink."""
        self._closed = False
        self._configured = False

    def add_plugin(self, info: PluginInfo, *, always: bool = False) -> None:
        """Record a native plugin and register it unless it failed to load or is disabled
        (``always``: no configuration switches it off, for a guard a project's own
        config.toml must not be able to remove)."""
        self.plugins.append(info)
        if info.error is not None:
            return
        if not always and self.is_disabled(info.name):
            info.disabled = True
            return
        try:
            self.pm.register(info.plugin, name=info.name)
        except Exception as exc:
            info.error = f"register failed: {exc}"
            log.warning("plugin %s failed to register: %s", info.name, exc)
            return
        self._sources[info.name] = Source.BUILTIN if info.kind == Source.BUILTIN else Source.PYTHON
        callers = self.pm.get_hookcallers(info.plugin) or []
        info.events = sorted(c.name for c in callers if c.name in Event._value2member_map_)
        self._order.clear()
        if self._configured:
            self.configure(info.plugin)

    def is_disabled(self, name: str) -> bool:
        """Switched off by name (``disabled=``, ``[plugins] disabled``, ``[hooks]``)."""
        return name in self._disabled or not self.config.hook_enabled(name)

    def register(
        self, plugin: Any, name: str | None = None, *, builtin: bool = False, always: bool = False
    ) -> PluginInfo:
        """For plugins built in code rather than installed; one registered after
        :meth:`configure` ran gets its ``configure`` call at once. ``always``: as for
        :meth:`add_plugin`."""
        info = PluginInfo(
            name=name or getattr(plugin, "__name__", None) or type(plugin).__name__,
            kind=Source.BUILTIN if builtin else Source.PYTHON,
            location=Location.BUILTIN if builtin else Location.INSTALLED,
            path=getattr(plugin, "__file__", None),
            plugin=plugin,
        )
        self.add_plugin(info, always=always)
        return info

    def plugin_source(self, name: str) -> Source:
        return self._sources.get(name, Source.PYTHON)

    def add_adapter(self, adapter: Any, name: str) -> None:
        """Plug in an adapter (:class:`kodelet.seam.Adapter`): one registration, all its hooks."""
        self.pm.register(adapter.plugin, name=name)
        self.adapters[name] = adapter
        self._order.clear()

    def configure(self, only: Any = None) -> None:
        """Hand each plugin its own ``[plugin.<name>]`` table once."""
        self._configured = True
        configure_plugins(self.pm, self.config, self.plugins, only)

    def hooks(self, event: Event) -> list[HookEntry]:
        """The hooks for ``event`` in call order."""
        return self._ordered(event)[0]

    def _ordered(self, event: Event) -> tuple[list[HookEntry], list[Call]]:
        """The call order, and the same unpacked into the dispatch loop's locals."""
        held = self._order.get(event)
        if held is None:
            entries = call_order(self, event)
            steps = [(e, e.call, e.acall, e.get, e.nargs, e.timeout) for e in entries]
            held = self._order[event] = (entries, steps)
        return held

    def dispatch(self, payload: BasePayload, *, agent: str | None = None) -> Dispatch:
        """Run every hook for ``payload``'s event; never raises for a plugin's fault.
        ``agent`` names the agent the call came from in the decision log (None: the one
        the runtime was assembled for)."""
        hooks, red = self._start(payload)
        for _ in run(red, hooks, self._coroutines):
            pass  # the sync loop never yields: it runs a coroutine where the async one awaits
        if self.audit is not None:
            self.audit.dispatched(payload, red.records, agent)
        return LazyDispatch.of(payload.EVENT, red.merged(), red.records)

    async def adispatch(self, payload: BasePayload, *, agent: str | None = None) -> Dispatch:
        """The async twin of :meth:`dispatch`: the same loop, asyncio subprocesses."""
        hooks, red = self._start(payload)
        steps = run(red, hooks, None)
        done, value = feed(steps, True, None)
        while not done:
            done, value = feed(steps, *await caught(value))
        if self.audit is not None:
            self.audit.dispatched(payload, red.records, agent)
        return LazyDispatch.of(payload.EVENT, red.merged(), red.records)

    def _start(self, payload: BasePayload) -> tuple[list[Call], Reducer]:
        """The event's hooks in call order, and the reducer their answers go to
        (:func:`~kodelet.policy.reducer_for` refuses a payload over the bounds)."""
        if self._closed:
            raise RuntimeError("runtime is closed")
        hooks = self._ordered(payload.EVENT)[1]
        return hooks, reducer_for(payload, self.slow_after)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for adapter in self.adapters.values():
            with contextlib.suppress(Exception):
                adapter.close()
        if self.audit is not None:
            with contextlib.suppress(Exception):
                self.audit.close()
        self._coroutines.close()

    def kill_all(self) -> None:
        """Kill every hook process still running, from a signal handler (see
        :func:`kodelet.assembly.hooks_die_with_host`)."""
        for adapter in list(self.adapters.values()):
            adapter.kill_all()

    def warm_up(self, cwd: str) -> None:
        """Start every hook server now, for calls made in ``cwd``, and make every event's
        call order (the warm kodelet's start, so its first calls are as quick as the later
        ones: the order asks each hook for its note, and the rules' note reads their set;
        the decision log's code is imported)."""
        for adapter in list(self.adapters.values()):
            adapter.warm_up(cwd)
        for info in list(self.plugins):
            # A built-in may build what its first call would (builtin:rules, its engine).
            warm = getattr(info.plugin, "warm_up", None) if info.kind is Source.BUILTIN else None
            if callable(warm):
                warm()
        for event in Event:
            self._ordered(event)
        if self.audit is not None:
            self.audit.warm_up()

    def hold(self, signum: int) -> bool:
        """Whether a signal must wait for a hook being started (then it comes again)."""
        return any(adapter.hold(signum) for adapter in list(self.adapters.values()))

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cwd(self) -> Path:
        return self.places.cwd


def call_order(runtime: Runtime, event: Event) -> list[HookEntry]:
    """Each hook of ``event`` as the dispatch loop will call it, with its own settings:
    native impls in pluggy's order and every adapter's hooks, sorted stably by
    :class:`~kodelet.seam.Rank` (DESIGN.md, Call order)."""
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
        # A built-in may say what it holds (``builtin:rules``: the tiers in force).
        note = getattr(impl.plugin, "listing_note", None) if source is Source.BUILTIN else None
        out.append(_entry(runtime, impl.plugin_name, source, rank, fn, fn, len(names), get, path,
                          note=note))  # fmt: skip
    out.sort(key=operator.attrgetter("rank"))  # stable: each rank keeps its own order
    return out


def _entry(runtime: Runtime, name: str, source: Source, rank: Rank, call: Any, acall: Any,
           nargs: int, get: Any = None, path: str | None = None,
           note: str | None = None) -> HookEntry:  # fmt: skip
    config = runtime.config
    # A Claude Code settings hook keeps Claude Code's own rule (its ``onFailure``, which
    # the Claude runner applies); only its own ``fail_closed = true`` adds kodelet's.
    closed = config.fails_closed(name, by_default=source is not Source.CLAUDE)
    return HookEntry(name=name, source=source, rank=rank, call=call, acall=acall, get=get,
                     nargs=nargs, timeout=config.timeout_for(name), fail_closed=closed,
                     path=path, note=note)  # fmt: skip
