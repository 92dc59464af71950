"""The one seam through which every kind of hook reaches the runtime.

A native plugin is a pluggy plugin and the runtime calls its impls directly.
Every other kind (executables, Claude Code command hooks, ...) comes through an
*adapter*: one pluggy plugin that wraps all hooks of its kind and hands the
runtime, per event, a list of :class:`AdapterHook` entries that carry their own
sync and async calls. The runtime orders, calls, merges and traces them exactly
as it does native impls and never asks what kind of hook it is calling; a new
kind of hook is a new adapter, not a change to the runtime.

An adapter is registered once, so N executables cost one pluggy registration.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from enum import IntEnum
from types import SimpleNamespace
from typing import Any

import attrs

from .events import Event
from .kinds import Source
from .markers import hookimpl
from .payloads import BasePayload

# The attribute by which the runtime recognises an adapter among pluggy's plugins.
ADAPTER_HOOKS = "kodelet_hooks"


class Rank(IntEnum):
    """Where a group of hooks runs in an event's call order (DESIGN.md, Call order).

    The runtime sorts stably by rank, so within a rank pluggy's order (natives)
    or the adapter's own order (its hooks) holds."""

    FIRST = 0  # native impls marked tryfirst
    EXTERNAL = 1  # executable hooks, in the seeds' precedence order
    NATIVE = 2  # native plugins, in pluggy order
    CLAUDE = 3  # Claude Code hooks: after kodelet's own, before built-ins
    BUILTIN = 4  # built-ins last, so a user's own hook wins


# HookEntry.nargs of a hook called as ``call(payload, timeout)``.
WHOLE_PAYLOAD = -1

Run = Callable[[BasePayload, float], Any]
ARun = Callable[[BasePayload, float], Awaitable[Any]]


@attrs.frozen(kw_only=True)
class AdapterHook:
    """One hook an adapter contributes to an event: its name, and how to call it.

    ``run(payload, timeout)`` returns the hook's raw answer (``None``, a result
    object or a wire dict) or raises; ``arun`` is its asyncio twin. ``note`` is
    shown beside the hook in ``kodelet hooks list``."""

    name: str
    source: Source
    rank: Rank
    run: Run
    arun: ARun
    path: str | None = None
    note: str | None = None


@attrs.frozen(kw_only=True)
class HookEntry:
    """One hook in an event's call order, unpacked into what the dispatch loop needs.

    A native impl is called with the payload fields it names (``get`` fetches them);
    an adapter's hook (``nargs == WHOLE_PAYLOAD``) with the payload and its timeout."""

    name: str
    source: Source
    rank: Rank
    call: Callable[..., Any]
    acall: Callable[..., Any]
    get: Callable[[Any], Any] | None
    nargs: int
    timeout: float
    fail_closed: bool
    path: str | None = None
    note: str | None = None

    @property
    def native(self) -> bool:
        """A native impl, timed by the runtime; an adapter's hook keeps its own time limit."""
        return self.nargs != WHOLE_PAYLOAD


class _Plugin(SimpleNamespace):
    """pluggy looks at every name ``dir()`` gives when it registers a plugin; here
    that is only the hookimpls and the seam's attribute, not object's dunders."""

    def __dir__(self) -> list[str]:
        return list(vars(self))


@hookimpl
def _in_dispatch_only() -> None:
    """An adapter's impl of every event, by which the runtime finds it among pluggy's
    impls; a raw ``pm.hook.<event>(...)`` call gets nothing from it: its hooks run
    only through the runtime's dispatch, in call order and under the merge policy."""
    return None


class Adapter:
    """Base of adapter plugins: one registration, many hooks.

    Subclasses implement :meth:`kodelet_hooks` and, if they hold processes,
    :meth:`close`."""

    def __init__(self) -> None:
        # What pluggy registers: a namespace with only the hookimpls and the seam's
        # attribute, because pluggy inspects every attribute of a plugin it registers.
        self.plugin = _Plugin(
            **dict.fromkeys((e.value for e in Event), _in_dispatch_only),
            **{ADAPTER_HOOKS: self.kodelet_hooks},
        )

    def kodelet_hooks(self, event: Event) -> Sequence[AdapterHook]:
        raise NotImplementedError

    def close(self) -> None:
        """Adapters holding nothing need not override this."""

    def kill_all(self) -> None:
        """Kill at once every process this adapter's hooks have running. Called from a
        signal handler (SIGTERM, SIGHUP to the host): no locks, no waiting."""

    def hold(self, signum: int) -> bool:
        """Whether a signal to the host must wait for a hook process being started
        (:meth:`kodelet.process.ProcessGroups.hold`); from the same signal handler."""
        return False

    def warm_up(self, cwd: str) -> None:
        """Start now what the first call would start (hook servers, for a call made in
        ``cwd``), so a warm kodelet's first calls do not pay for it."""
