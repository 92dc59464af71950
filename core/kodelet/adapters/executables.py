"""The executable adapter: one plugin wrapping every discovered executable hook.

Discovery (:mod:`.discovery`, through the cache) finds the files and asks each its
event; this adapter turns the active ones into seam entries, in the seeds'
precedence order, with a per-call or persistent runner each, and puts a blocking
stand-in (:mod:`.standin`) in place of a hook that cannot run (unless it fails open).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..config import Config
from ..events import Event
from ..kinds import Source, Status
from ..payloads import BasePayload
from ..places import Places
from ..process import ProcessGroups
from ..seam import Adapter, AdapterHook, Rank
from ..wire import payload_to_wire
from .cache import DiscoveryCache, cache_disabled
from .discovery import (
    DiscoveredHook,
    UserDatabase,
    discover,
    hook_names,
    unknown_hooks,
    unknown_names,
)
from .executable import ExecutableHook
from .persistent import PROTOCOL as PERSISTENT_PROTOCOL
from .persistent import PersistentHook
from .standin import needs_stand_in, stand_in

NAME = "kodelet:executables"


class ExecutableAdapter(Adapter):
    """Executable hooks as seam entries; ``discovered`` lists every file looked at."""

    def __init__(
        self,
        discovered: Sequence[DiscoveredHook],
        config: Config,
        *,
        default_cwd: str,
        env: Mapping[str, str],
        persistent: bool = True,
    ) -> None:
        super().__init__()
        self.groups = ProcessGroups()
        self.discovered = list(discovered)
        # One user database for every runner's trust check (kept answers, see UserDatabase).
        self._runner_args = {
            "default_cwd": default_cwd,
            "env": env,
            "groups": self.groups,
            "users": UserDatabase(),
        }
        self._persistent = persistent
        self._runners: dict[str, ExecutableHook] = {}
        self._lock = threading.Lock()
        self._closed = False
        # Per event, in order: the active hooks (made into runners and entries when the
        # event is first asked for, so a start pays only for the events it dispatches)
        # and stand-ins.
        self._order: dict[Event, list[DiscoveredHook | AdapterHook]] = {e: [] for e in Event}
        self._entries: dict[Event, list[AdapterHook]] = {}
        # The payload most recently turned into JSON: consecutive hooks of one event
        # usually see the same payload, so it is encoded once.
        self._wired: tuple[BasePayload | None, dict[str, Any]] = (None, {})
        self._active: list[DiscoveredHook] = []  # what gets a runner, in order
        active = {h.name for h in self.discovered if h.status is Status.ACTIVE}
        # In precedence order, so a stand-in blocks where its hook would have run.
        for hook in sorted(self.discovered, key=lambda h: h.candidate.seq):
            if hook.status is Status.ACTIVE and hook.event is not None:
                self._active.append(hook)
                self._order[hook.event].append(hook)
            elif needs_stand_in(hook, config) and hook.name not in active:
                for event in Event:
                    guard = stand_in(hook, event)
                    if guard is not None:
                        self._order[event].append(guard)

    @classmethod
    def load(
        cls,
        places: Places,
        config: Config,
        env: Mapping[str, str],
        *,
        persistent: bool = True,
        natives: Callable[[], set[str]] | None = None,
    ) -> ExecutableAdapter:
        """Discover the hooks of both roots; answers to ``hook`` come from the discovery
        cache unless ``KODELET_NO_CACHE`` is set. ``persistent=False`` runs every hook
        per call, even one that offers ``serve`` (for comparisons). ``natives`` gives
        the native plugins' names, asked only when config.toml names a hook no file
        has: what no one has gets a warning, and a stand-in if its table says
        ``fail_closed = true``."""
        if cache_disabled(env):
            found = discover(places, config, env=env)
        else:
            cache = DiscoveryCache.for_root(places.global_root, env=env)
            found = discover(places, config, env=env, query=cache)
            cache.save()
        if natives is not None and config.named_hooks():
            known = hook_names(found)
            if unknown_names(config, known):
                found = [*found, *unknown_hooks(places, config, known | natives())]
        return cls(found, config, default_cwd=str(places.cwd), env=env, persistent=persistent)

    def _wire(self, payload: BasePayload) -> dict[str, Any]:
        seen, wire = self._wired
        if seen is not payload:
            wire = payload_to_wire(payload)
            self._wired = (payload, wire)
        return wire

    def _entry(self, runner: ExecutableHook) -> AdapterHook:
        # Trust is re-checked before every call (and so before a server starts): the
        # file or its directory may have been opened to other users since discovery.
        def run(payload: BasePayload, timeout: float) -> Any:
            runner.check_trust()
            return runner.run(self._wire(payload), timeout=timeout)

        async def arun(payload: BasePayload, timeout: float) -> Any:
            runner.check_trust()
            return await runner.arun(self._wire(payload), timeout=timeout)

        return AdapterHook(
            name=runner.name,
            source=Source.EXECUTABLE,
            rank=Rank.EXTERNAL,
            run=run,
            arun=arun,
            path=runner.file,
        )

    def _runner(self, hook: DiscoveredHook) -> ExecutableHook:
        """The hook's one runner, whichever thread asks first; one made after
        :meth:`close` is closed at once, so no server starts from it."""
        with self._lock:
            runner = self._runners.get(hook.name)
            if runner is None:
                keep = self._persistent and PERSISTENT_PROTOCOL in hook.protocols
                cls = PersistentHook if keep else ExecutableHook
                runner = self._runners[hook.name] = cls.from_discovered(hook, **self._runner_args)
                if self._closed:
                    runner.close()
        return runner

    def kodelet_hooks(self, event: Event) -> Sequence[AdapterHook]:
        entries = self._entries.get(event)
        if entries is None:
            entries = self._entries[event] = [
                self._entry(self._runner(x)) if isinstance(x, DiscoveredHook) else x
                for x in self._order[event]
            ]
        return entries

    def executables(self) -> list[ExecutableHook]:
        return [self._runner(h) for h in self._active]

    def kill_all(self) -> None:
        self.groups.kill_all()

    def warm_up(self, cwd: str) -> None:
        for runner in self.executables():
            if isinstance(runner, PersistentHook):
                runner.prestart(cwd)

    def hold(self, signum: int) -> bool:
        return self.groups.hold(signum)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            runners = list(self._runners.values())
        for runner in runners:
            if isinstance(runner, PersistentHook):  # per-call hooks hold nothing
                with contextlib.suppress(Exception):
                    runner.close()
