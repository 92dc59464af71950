"""The pluggy markers every kodelet plugin uses: ``from kodelet import hookimpl``."""

from __future__ import annotations

import pluggy

PROJECT = "kodelet"
ENTRY_POINT_GROUP = "kodelet.plugins"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
