"""A fail-closed hook that could not be loaded still guards.

If a guardrail marked ``fail_closed = true`` loses its executable bit, becomes
untrusted, or stops answering ``hook``, skipping it would quietly remove the
guard. Instead a stand-in takes its place on the blocking events and fails
there, so the runtime blocks with ``hook <name> failed (fail-closed): ...``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..events import Event
from ..markers import hookimpl
from .discovery import DiscoveredHook
from .executable import HookFailure


class FailClosedStandIn:
    def __init__(self, hook: DiscoveredHook) -> None:
        self.name = hook.name
        self.__file__ = str(hook.path)
        self.reason = hook.reason
        events = [hook.event] if hook.event is not None else list(Event)
        for event in events:
            if event.blocking:
                setattr(self, event.value, self._make_impl(event))

    def _make_impl(self, event: Event) -> Callable[[], Any]:
        def impl() -> Any:
            raise HookFailure(f"not run: {self.reason}")

        impl.__name__ = event.value
        return hookimpl(impl)

    def __repr__(self) -> str:
        return f"<FailClosedStandIn {self.name}: {self.reason}>"


def needs_stand_in(hook: DiscoveredHook) -> bool:
    """Skipped for a reason other than a higher hook of the same name taking its place."""
    return hook.status == "skipped" and not hook.reason.startswith("shadowed")
