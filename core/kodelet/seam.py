"""The one seam through which every kind of hook reaches the runtime.

A native plugin is a pluggy plugin and the runtime calls its impls directly.
Every other kind (executables, Claude Code command hooks, ...) comes through an
*adapter*: one pluggy plugin that wraps all hooks of its kind and hands the
runtime, per event, a list of :class:`AdapterHook` entries that carry their own
sync and async calls. The runtime orders, calls, merges and traces them exactly
as it does native impls and never asks what kind of hook it is calling; a new
kind of hook is a new adapter, not a change to the runtime.

An adapter is registered once, so N executables cost one pluggy registration.
It still answers raw ``pm.hook.<event>(...)`` calls (see :class:`Adapter`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from enum import IntEnum
from types import SimpleNamespace
from typing import Any

import attrs

from .config import DEFAULT_TIMEOUT
from .events import Event
from .kinds import Source
from .markers import hookimpl
from .payloads import PAYLOAD_TYPES, BasePayload, field_names

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


class Adapter:
    """Base of adapter plugins: one registration, many hooks.

    Subclasses implement :meth:`kodelet_hooks` and, if they hold processes,
    :meth:`close`. The hookimpls made here let a raw ``pm.hook.<event>(...)``
    call run the adapter's hooks for that event too, one after another; the
    first answer that is not ``None`` is the adapter's answer there (the merge
    policy applies only to dispatches through the runtime)."""

    def __init__(self) -> None:
        # What pluggy registers: a namespace with only the hookimpls and the seam's
        # attribute, because pluggy inspects every attribute of a plugin it registers.
        self.plugin = _Plugin(
            **{e.value: _raw_impl(self, e) for e in Event},
            **{ADAPTER_HOOKS: self.kodelet_hooks},
        )

    def kodelet_hooks(self, event: Event) -> Sequence[AdapterHook]:
        raise NotImplementedError

    def close(self) -> None:
        """Adapters holding nothing need not override this."""

    def kill_all(self) -> None:
        """Kill at once every process this adapter's hooks have running. Called from a
        signal handler (SIGTERM, SIGHUP to the host): no locks, no waiting."""

    def _raw_call(self, event: Event, fields: dict[str, Any]) -> Any:
        payload = PAYLOAD_TYPES[event](**fields)
        for hook in self.kodelet_hooks(event):
            answer = hook.run(payload, DEFAULT_TIMEOUT)
            if answer is not None:
                return answer
        return None


def _raw_impl(adapter: Adapter, event: Event) -> Callable[..., Any]:
    return hookimpl(_raw_impl_factory(event)(adapter._raw_call, event))


@functools.cache
def _raw_impl_factory(event: Event) -> Callable[..., Callable[..., Any]]:
    """Makes hookimpls taking the whole payload as real parameters.

    pluggy reads argument names from the function's code object, so the function
    is compiled with the event's field names (from the payload model) as
    parameters: once per event, not once per adapter, as compiling is most of
    what building an adapter costs."""
    names = field_names(event)
    fields = ", ".join(f"{n!r}: {n}" for n in names if n != "event")
    source = (
        "def make(call, EVENT):\n"
        f"    def {event.value}({', '.join(names)}):\n"
        f"        return call(EVENT, {{{fields}}})\n"
        f"    return {event.value}\n"
    )
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # names come from our own payload models
    make: Callable[..., Callable[..., Any]] = namespace["make"]
    return make
