"""The runtime: one object that owns the plugin manager, loads every plugin,
orders hooks, dispatches events through the merge policy and records a trace.

Nothing here is global: two runtimes in one process (a host and its
sub-agent, or two tests) never see each other's plugins.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import time
from collections.abc import Coroutine, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import pluggy

from . import hookspecs
from .adapters.cache import DiscoveryCache, cache_disabled
from .adapters.discovery import DiscoveredHook, discover
from .adapters.executable import ExecutableHook, HookFailure
from .adapters.persistent import PROTOCOL as PERSISTENT_PROTOCOL
from .adapters.persistent import PersistentHook
from .config import Config, load_config
from .events import Event
from .loading import PluginInfo, entry_points, load
from .markers import PROJECT
from .payloads import BasePayload
from .places import Places
from .policy import Reducer, coerce_result, reducer_for
from .trace import Dispatch, Outcome, Source, TraceRecord
from .wire import payload_from_wire, payload_to_wire

log = logging.getLogger("kodelet.runtime")

SLOW_AFTER = 1.0


@attrs.frozen(kw_only=True)
class HookEntry:
    """One hook in an event's call order."""

    name: str
    source: Source
    impl: pluggy.HookImpl
    executable: ExecutableHook | None
    timeout: float
    fail_closed: bool

    @property
    def path(self) -> str | None:
        if self.executable is not None:
            return str(self.executable.path)
        return getattr(self.impl.plugin, "__file__", None)


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # a plugin's exception must not break the report of its failure
        text = "<unprintable>"
    name = type(exc).__name__
    if name in ("HookFailure", "WireError"):
        return text
    return f"{name}: {text}" if text else name


class Runtime:
    """Loads plugins and dispatches the five events.

    ``entry_points=False`` and ``executables=False`` give an isolated runtime
    with only the ``plugins`` passed in (what plugin authors' tests want).
    ``no_hooks`` (or ``KODELET_NO_HOOKS=1``) keeps only the built-ins.
    """

    def __init__(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        config: Config | None = None,
        no_hooks: bool | None = None,
        entry_points: bool = True,
        builtins: bool = True,
        executables: bool = True,
        plugins: Iterable[Any] = (),
        disabled: Iterable[str] = (),
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        slow_after: float = SLOW_AFTER,
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.places = Places.resolve(cwd, home, self.env)
        self.config = config or load_config(self.places, self.env, timeout=timeout, no_hooks=no_hooks)
        self.no_hooks = self.config.no_hooks or bool(no_hooks)
        self.slow_after = slow_after
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: list[PluginInfo] = []
        self.discovered: list[DiscoveredHook] = []
        self._sources: dict[str, Source] = {}
        self._order: dict[Event, list[HookEntry]] = {}
        self._disabled = set(disabled) | set(self.config.disabled_plugins)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._configured = False

        if entry_points or builtins:
            for builtin, ep in _entry_points():
                if builtin and builtins or not builtin and entry_points and not self.no_hooks:
                    self._add_info(load(ep, builtin))
        for plugin in plugins:
            name, obj = plugin if isinstance(plugin, tuple) else (None, plugin)
            self.register(obj, name=name)
        if executables and not self.no_hooks:
            self._load_executables()
        self._configure()
        self._configured = True

    # -- loading -------------------------------------------------------------

    def _add_info(self, info: PluginInfo) -> None:
        self.plugins.append(info)
        if info.error is not None:
            return
        if info.name in self._disabled or not self.config.hook_enabled(info.name):
            info.disabled = True
            return
        try:
            self.pm.register(info.plugin, name=info.name)
        except Exception as exc:
            info.error = f"register failed: {exc}"
            log.warning("plugin %s failed to register: %s", info.name, exc)
            return
        self._sources[info.name] = Source.BUILTIN if info.kind == "builtin" else Source.PYTHON
        info.events = self._events_of(info.plugin)
        self._order.clear()

    def _events_of(self, plugin: Any) -> list[str]:
        callers = self.pm.get_hookcallers(plugin) or []
        return sorted(c.name for c in callers if c.name in Event._value2member_map_)

    def register(self, plugin: Any, name: str | None = None, *, builtin: bool = False) -> PluginInfo:
        """Register a native plugin object or module programmatically."""
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        info = PluginInfo(
            name=name,
            kind="builtin" if builtin else "python",
            location="builtin" if builtin else "installed",
            path=getattr(plugin, "__file__", None),
            plugin=plugin,
        )
        self._add_info(info)
        if self._configured and info.plugin is not None and not info.disabled and not info.error:
            self._configure(info.plugin)
        return info

    def _load_executables(self) -> None:
        options = self._discover_options()
        self.discovered = discover(self.places, self.config, env=self.env, **options)
        if isinstance(options.get("query"), DiscoveryCache):
            options["query"].save()
        active = [h for h in self.discovered if h.status == "active"]
        # Registered lowest precedence first: pluggy calls later registrations first.
        for hook in reversed(active):
            exe = self._make_executable(hook)
            try:
                self.pm.register(exe, name=hook.name)
            except ValueError as exc:
                idx = self.discovered.index(hook)
                self.discovered[idx] = attrs.evolve(hook, status="skipped", reason=str(exc))
                continue
            self._sources[hook.name] = Source.EXECUTABLE
        self._order.clear()

    def _discover_options(self) -> dict[str, Any]:
        """Answers to ``hook`` come from the discovery cache unless ``KODELET_NO_CACHE`` is set."""
        if cache_disabled(self.env):
            return {}
        return {"query": DiscoveryCache.for_root(self.places.global_root, env=self.env)}

    def _make_executable(self, hook: DiscoveredHook) -> ExecutableHook:
        """A hook that answered ``<event> jsonl`` is kept running; others are spawned per call."""
        cls = PersistentHook if PERSISTENT_PROTOCOL in hook.protocols else ExecutableHook
        return cls.from_discovered(hook, default_cwd=str(self.places.cwd), env=self.env)

    def _configure(self, only: Any = None) -> None:
        """Hand each plugin its own table once; a plugin registered later gets it then."""
        for impl in reversed(self.pm.hook.configure.get_hookimpls()):
            if only is not None and impl.plugin is not only:
                continue
            own = self.config.plugin_config(impl.plugin_name)
            try:
                impl.function(*[{"config": own}[a] for a in impl.argnames])
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                log.warning("plugin %s: configure failed: %s", impl.plugin_name, _describe(exc))
                for info in self.plugins:
                    if info.name == impl.plugin_name:
                        info.error = f"configure failed: {_describe(exc)}"

    # -- ordering ------------------------------------------------------------

    def hooks(self, event: Event) -> list[HookEntry]:
        """The hooks for ``event`` in call order."""
        entries = self._order.get(event)
        if entries is None:
            entries = self._order[event] = self._build_order(event)
        return entries

    def _build_order(self, event: Event) -> list[HookEntry]:
        caller = getattr(self.pm.hook, event.value)
        out: list[HookEntry] = []
        for impl in reversed(caller.get_hookimpls()):
            if impl.hookwrapper or impl.wrapper:
                log.warning("plugin %s: hook wrappers are not supported; ignored", impl.plugin_name)
                continue
            name = impl.plugin_name
            exe = impl.plugin if isinstance(impl.plugin, ExecutableHook) else None
            settings = self.config.hook(name)
            out.append(
                HookEntry(
                    name=name,
                    source=self._sources.get(name, Source.PYTHON),
                    impl=impl,
                    executable=exe,
                    timeout=self.config.timeout_for(name),
                    fail_closed=settings.fail_closed,
                )
            )
        # Built-ins last even against a user's trylast impl, so a user's own hook wins.
        out.sort(key=lambda e: e.source is Source.BUILTIN)
        return out

    # -- dispatch ------------------------------------------------------------

    def _start(self, payload: BasePayload) -> tuple[Reducer, list[HookEntry]]:
        if self._closed:
            raise RuntimeError("runtime is closed")
        return reducer_for(payload), self.hooks(payload.EVENT)

    def _settle(self, red: Reducer, entry: HookEntry, raw: Any, started: float) -> TraceRecord:
        duration = time.perf_counter() - started
        event = red.payload.EVENT
        try:
            result = coerce_result(event, raw)
        except ValueError as exc:
            return self._fail(red, entry, exc, started)
        outcome, detail = red.add(entry.name, result)
        if duration > self.slow_after and entry.executable is None:
            log.warning("hook %s is slow: %.2fs on %s", entry.name, duration, event.value)
            detail = f"slow: {duration:.2f}s" + (f"; {detail}" if detail else "")
        return TraceRecord(event=event, name=entry.name, source=entry.source, outcome=outcome,
                           duration=duration, detail=detail)

    def _fail(self, red: Reducer, entry: HookEntry, exc: BaseException, started: float) -> TraceRecord:
        duration = time.perf_counter() - started
        event = red.payload.EVENT
        why = _describe(exc)
        log.warning("hook %s failed on %s: %s", entry.name, event.value, why)
        detail = None
        if entry.fail_closed and event.blocking:
            red.fail_closed(entry.name, why)
            detail = "fail-closed: blocked"
        return TraceRecord(event=event, name=entry.name, source=entry.source, outcome=Outcome.ERROR,
                           duration=duration, error=why, detail=detail)

    # The caches hold the payload itself: an id() alone could be reused by a later
    # rewritten payload once the earlier one is freed, handing a hook stale input.
    @staticmethod
    def _native_args(entry: HookEntry, payload: BasePayload, cache: dict[str, Any]) -> list[Any]:
        held = cache.get("args")
        if held is None or held[0] is not payload:
            held = cache["args"] = (
                payload,
                {"event": payload.EVENT, **attrs.asdict(payload, recurse=False)},
            )
        kwargs = held[1]
        return [kwargs[a] for a in entry.impl.argnames]

    @staticmethod
    def _wire(payload: BasePayload, cache: dict[str, Any]) -> dict[str, Any]:
        held = cache.get("wire")
        if held is None or held[0] is not payload:
            held = cache["wire"] = (payload, payload_to_wire(payload))
        wire: dict[str, Any] = held[1]
        return wire

    def dispatch(self, payload: BasePayload) -> Dispatch:
        """Run every hook for ``payload``'s event; never raises for a plugin's fault."""
        red, entries = self._start(payload)
        records: list[TraceRecord] = []
        args_cache: dict[str, Any] = {}
        wire_cache: dict[str, Any] = {}
        for entry in entries:
            started = time.perf_counter()
            try:
                if entry.executable is not None:
                    raw = entry.executable.run(self._wire(red.payload, wire_cache), timeout=entry.timeout)
                else:
                    raw = entry.impl.function(*self._native_args(entry, red.payload, args_cache))
                    if inspect.iscoroutine(raw):
                        raw = self._run_coroutine(_bounded(raw, entry.timeout))
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                records.append(self._fail(red, entry, exc, started))
            else:
                records.append(self._settle(red, entry, raw, started))
            if red.stopped:
                break
        return Dispatch(payload.EVENT, red.merged(), tuple(records))

    async def adispatch(self, payload: BasePayload) -> Dispatch:
        """The async twin of :meth:`dispatch`: same policy, asyncio subprocesses."""
        red, entries = self._start(payload)
        records: list[TraceRecord] = []
        args_cache: dict[str, Any] = {}
        wire_cache: dict[str, Any] = {}
        for entry in entries:
            started = time.perf_counter()
            try:
                if entry.executable is not None:
                    raw = await entry.executable.arun(
                        self._wire(red.payload, wire_cache), timeout=entry.timeout
                    )
                else:
                    raw = entry.impl.function(*self._native_args(entry, red.payload, args_cache))
                    if inspect.iscoroutine(raw):
                        raw = await _bounded(raw, entry.timeout)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError) and _being_cancelled():
                    raise
                records.append(self._fail(red, entry, exc, started))
            else:
                records.append(self._settle(red, entry, raw, started))
            if red.stopped:
                break
        return Dispatch(payload.EVENT, red.merged(), tuple(records))

    def dispatch_wire(self, event: Event, data: Mapping[str, Any]) -> Dispatch:
        """Dispatch a payload given as wire JSON; ``ValueError`` names a bad field."""
        return self.dispatch(payload_from_wire(event, data))

    def _run_coroutine(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run an ``async def`` hookimpl to completion from the sync API."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(coro)
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coro).result()

    # -- lifecycle -----------------------------------------------------------

    def executables(self) -> list[ExecutableHook]:
        # Not pm.get_plugins(): it builds a set, and a plugin object may be unhashable.
        return [p for _, p in self.pm.list_name_plugin() if isinstance(p, ExecutableHook)]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for exe in self.executables():
            with contextlib.suppress(Exception):
                exe.close()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cwd(self) -> Path:
        return self.places.cwd


async def _bounded(coro: Coroutine[Any, Any, Any], timeout: float) -> Any:
    """An ``async def`` impl gets the same time limit as an executable.

    ``asyncio.timeout`` rather than ``wait_for``: no extra task, so a Ctrl-C inside a
    hook propagates cleanly (through ``wait_for``'s inner task CPython 3.11 can
    corrupt its recursion bookkeeping)."""
    limit = asyncio.timeout(timeout)
    try:
        async with limit:
            return await coro
    except TimeoutError:
        if limit.expired():
            raise HookFailure(f"timed out after {timeout:g}s") from None
        raise


def _being_cancelled() -> bool:
    """True when the dispatching task itself was cancelled, not just a hook raising
    ``CancelledError`` of its own accord (which is that hook's failure)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _entry_points() -> list[tuple[bool, Any]]:
    return entry_points()

