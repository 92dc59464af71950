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
import operator
import os
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
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
from .adapters.standin import FailClosedStandIn, needs_stand_in
from .config import Config, load_config
from .events import Event
from .loading import PluginInfo, load
from .loading import entry_points as _entry_points  # the name is also a parameter below
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
        self.config = config or load_config(
            self.places, self.env, timeout=timeout, no_hooks=no_hooks
        )
        self.no_hooks = self.config.no_hooks or bool(no_hooks)
        self.slow_after = slow_after
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: list[PluginInfo] = []
        self.discovered: list[DiscoveredHook] = []
        self._sources: dict[str, Source] = {}
        self._order: dict[Event, list[HookEntry]] = {}
        self._plans: dict[Event, tuple[list[HookEntry], list[_Step]]] = {}
        self._disabled = set(disabled) | set(self.config.disabled_plugins)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._configured = False

        if entry_points or builtins:
            for builtin, ep in _entry_points():
                if (builtin and builtins) or (not builtin and entry_points and not self.no_hooks):
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

    def register(
        self, plugin: Any, name: str | None = None, *, builtin: bool = False
    ) -> PluginInfo:
        """For plugins built in code rather than installed: one registered after the
        runtime is built still gets its ``configure`` call, at once."""
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
        active = [h for h in self.discovered if h.status == "active" or self._guards(h)]
        # Registered lowest precedence first: pluggy calls later registrations first.
        for hook in reversed(active):
            exe: Any = (
                self._make_executable(hook) if hook.status == "active" else FailClosedStandIn(hook)
            )
            try:
                self.pm.register(exe, name=hook.name)
            except ValueError as exc:
                idx = self.discovered.index(hook)
                self.discovered[idx] = attrs.evolve(hook, status="skipped", reason=str(exc))
                continue
            self._sources[hook.name] = Source.EXECUTABLE
        self._order.clear()

    def _guards(self, hook: DiscoveredHook) -> bool:
        """A fail-closed hook that cannot run gets a stand-in that blocks in its place."""
        return (
            needs_stand_in(hook)
            and self.config.hook(hook.name).fail_closed
            and self.config.hook_enabled(hook.name)
            and not any(h.name == hook.name and h.status == "active" for h in self.discovered)
        )

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

    def _plan(self, event: Event) -> list[_Step]:
        """The event's call order, unpacked once into what the dispatch loop needs per hook."""
        entries = self.hooks(event)
        held = self._plans.get(event)
        if held is None or held[0] is not entries:
            steps: list[_Step] = []
            for e in entries:
                names = tuple(e.impl.argnames)
                get = operator.attrgetter(*names) if names else None
                steps.append((e, e.name, e.source, e.impl.function, get, len(names), e.executable))
            held = self._plans[event] = (entries, steps)
        return held[1]

    def _settled(self, red: Reducer, entry: HookEntry, raw: Any, duration: float) -> _Raw:
        event = red.payload.EVENT
        try:
            result = coerce_result(event, raw)
        except ValueError as exc:
            return self._failed(red, entry, exc, duration)
        outcome, detail = red.add(entry.name, result)
        if duration > self.slow_after and entry.executable is None:
            log.warning("hook %s is slow: %.2fs on %s", entry.name, duration, event.value)
            detail = f"slow: {duration:.2f}s" + (f"; {detail}" if detail else "")
        return (entry.name, entry.source, outcome, duration, None, detail)

    def _failed(self, red: Reducer, entry: HookEntry, exc: BaseException, duration: float) -> _Raw:
        event = red.payload.EVENT
        why = _describe(exc)
        log.warning("hook %s failed on %s: %s", entry.name, event.value, why)
        detail = None
        if entry.fail_closed and event.blocking:
            red.fail_closed(entry.name, why)
            detail = "fail-closed: blocked"
        return (entry.name, entry.source, Outcome.ERROR, duration, why, detail)

    # The hot path. Per hook it does what pluggy's own loop does (gather the
    # arguments, call) plus one clock read and one tuple for the trace; the
    # TraceRecord objects are built only when someone reads ``Dispatch.trace``.
    # A hook answering None is "no action" for every event's reducer, so that
    # common case skips conversion and merging. Each hook's duration runs from
    # the end of the previous hook to the end of its own call.
    def dispatch(self, payload: BasePayload) -> Dispatch:
        """Run every hook for ``payload``'s event; never raises for a plugin's fault."""
        if self._closed:
            raise RuntimeError("runtime is closed")
        red = reducer_for(payload)
        records: list[_Raw] = []
        append = records.append
        current = payload
        wire: dict[str, Any] = {}
        wire_of: BasePayload | None = None
        slow_after = self.slow_after
        clock = time.perf_counter
        started = clock()
        for entry, name, source, function, get, nargs, exe in self._plan(payload.EVENT):
            try:
                if exe is None:
                    if nargs == 1:
                        raw = function(get(current))  # type: ignore[misc]
                    elif nargs:
                        raw = function(*get(current))  # type: ignore[misc]
                    else:
                        raw = function()
                    if raw is not None and inspect.iscoroutine(raw):
                        raw = self._run_coroutine(_bounded(raw, entry.timeout))
                else:
                    if wire_of is not current:
                        wire, wire_of = payload_to_wire(current), current
                    raw = exe.run(wire, timeout=entry.timeout)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                now = clock()
                append(self._failed(red, entry, exc, now - started))
            else:
                now = clock()
                if raw is None and (exe is not None or now - started <= slow_after):
                    append((name, source, _NO_ACTION, now - started, None, None))
                    started = now
                    continue
                append(self._settled(red, entry, raw, now - started))
            started = now
            current = red.payload
            if red.stopped:
                break
        return _Dispatched(payload.EVENT, red.merged(), records)

    async def adispatch(self, payload: BasePayload) -> Dispatch:
        """The async twin of :meth:`dispatch`: same policy, asyncio subprocesses."""
        if self._closed:
            raise RuntimeError("runtime is closed")
        red = reducer_for(payload)
        records: list[_Raw] = []
        current = payload
        wire: dict[str, Any] = {}
        wire_of: BasePayload | None = None
        clock = time.perf_counter
        started = clock()
        for entry, _name, _source, function, get, nargs, exe in self._plan(payload.EVENT):
            try:
                if exe is None:
                    if nargs == 1:
                        raw = function(get(current))  # type: ignore[misc]
                    elif nargs:
                        raw = function(*get(current))  # type: ignore[misc]
                    else:
                        raw = function()
                    if raw is not None and inspect.iscoroutine(raw):
                        raw = await _bounded(raw, entry.timeout)
                else:
                    if wire_of is not current:
                        wire, wire_of = payload_to_wire(current), current
                    raw = await exe.arun(wire, timeout=entry.timeout)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError) and _being_cancelled():
                    raise
                now = clock()
                records.append(self._failed(red, entry, exc, now - started))
            else:
                now = clock()
                records.append(self._settled(red, entry, raw, now - started))
            started = now
            current = red.payload
            if red.stopped:
                break
        return _Dispatched(payload.EVENT, red.merged(), records)

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


_NO_ACTION = Outcome.NO_ACTION
# (name, source, outcome, duration, error, detail): a TraceRecord not yet built.
_Raw = tuple[str, Source, Outcome, float, str | None, str | None]
_Step = tuple[
    HookEntry,
    str,
    Source,
    Callable[..., Any],
    Callable[[Any], Any] | None,
    int,
    ExecutableHook | None,
]


def _record(event: Event, raw: _Raw) -> TraceRecord:
    name, source, outcome, duration, error, detail = raw
    return TraceRecord(
        event=event,
        name=name,
        source=source,
        outcome=outcome,
        duration=duration,
        error=error,
        detail=detail,
    )


class _Dispatched(Dispatch):
    """A :class:`Dispatch` whose TraceRecords are built when ``trace`` is first read.

    Every hook is recorded as it runs (a plain tuple); turning those into
    TraceRecord objects costs more than calling a small native hook, so a host
    that never looks at the trace does not pay for it. Compares, hashes,
    pickles and prints like the plain Dispatch it stands for.
    """

    __slots__ = ("_built", "_raw")
    _built: tuple[TraceRecord, ...] | None
    _raw: list[_Raw] | None

    def __init__(
        self,
        event: Event,
        result: Any,
        raw: list[_Raw] | None = None,
        trace: tuple[TraceRecord, ...] = (),
    ) -> None:
        object.__setattr__(self, "event", event)
        object.__setattr__(self, "result", result)
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "_built", None if raw is not None else tuple(trace))

    @property
    def trace(self) -> tuple[TraceRecord, ...]:
        built: tuple[TraceRecord, ...] | None = self._built
        if built is None:
            event = self.event
            built = tuple(_record(event, r) for r in self._raw or ())
            object.__setattr__(self, "_built", built)
            object.__setattr__(self, "_raw", None)
        return built

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dispatch):
            return NotImplemented
        return (self.event, self.result, self.trace) == (other.event, other.result, other.trace)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self.event, self.result, self.trace))

    def __repr__(self) -> str:
        return f"Dispatch(event={self.event!r}, result={self.result!r}, trace={self.trace!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Dispatch, (self.event, self.result, self.trace))


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
