"""The five points of an agent's life that plugins can hook.

Kept as a ``str`` enum so values compare equal to the wire strings the seeds use.
"""

from __future__ import annotations

from enum import StrEnum


class Event(StrEnum):
    BEFORE_TOOL_CALL = "before_tool_call"
    AFTER_TOOL_CALL = "after_tool_call"
    USER_MESSAGE_SEND = "user_message_send"
    AFTER_TURN = "after_turn"
    AGENT_STOP = "agent_stop"

    @property
    def blocking(self) -> bool:
        """Blocking events are the ones where ``blocked`` is part of the answer."""
        return self in (Event.BEFORE_TOOL_CALL, Event.USER_MESSAGE_SEND)


# Kodelet itself shipped the after_turn hook type as ``turn_end``; executables
# that still answer that way are after_turn hooks.
EVENT_ALIASES: dict[str, Event] = {"turn_end": Event.AFTER_TURN}

# Every spelling parse_event accepts as it is: the wire names and the aliases.
_NAMES: dict[str, Event] = {**{e.value: e for e in Event}, **EVENT_ALIASES}


def parse_event(name: str) -> Event:
    """Resolve a wire name (or alias) to an Event; ``ValueError`` names the bad value.

    One dict lookup in the common case: discovery resolves every cached hook's event."""
    event = _NAMES.get(name) or _NAMES.get(name.strip())
    if event is None:
        known = ", ".join(e.value for e in Event)
        raise ValueError(f"unknown event {name.strip()!r} (expected one of: {known})")
    return event
