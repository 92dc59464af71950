"""``builtin:protect-kodelet``: the agent may read kodelet's own files, never change them.

A guard the model can switch off is no guard: one ``Write`` of ``.kodelet/config.toml``
(or of ``.claude/settings.json``) would end every other hook. This built-in blocks tool
calls that write, edit, move, delete or change the mode of kodelet's own files, by file
tools and by shell commands, in every agent. It lives in the core and is registered by
:func:`kodelet.assembly.load_runtime` itself, not through an entry point, so no broken
distribution metadata or failing import can leave it out (docs/DECISIONS.md). A user
opts out knowingly with ``[hooks."builtin:protect-kodelet"] enabled = false``, a file
this guard protects.
"""

from __future__ import annotations

from .guard import NAME, SelfGuard, check_call

__all__ = ["NAME", "SelfGuard", "check_call"]
