"""What a user does about a hook that failed: the words a fail-closed block and the
listings end with, so a guard that stops the agent also says how to get going again."""

from __future__ import annotations

import json
import shlex

from .errors import HookFailure


def hook_key(name: str, key: str) -> str:
    """``[hooks."NAME"] key`` as config.toml spells it."""
    return f"[hooks.{json.dumps(name, ensure_ascii=False)}] {key}"


def opt_out(name: str) -> str:
    """How to let calls through when this hook fails (an audit logger, not a guard)."""
    return f"to let calls through when it fails: {hook_key(name, 'fail_closed')} = false"


def failure_fix(name: str, why: str, fix: str | None = None) -> str:
    """The fix for one failed call of hook ``name``: ``fix`` when the failure knows
    its own, else the advice for its kind of failure; then the opt-out."""
    if fix is None:
        if why.startswith("timed out"):
            fix = (
                f"make it answer sooner or raise its time limit ({hook_key(name, 'timeout')}"
                " = SECONDS in config.toml)"
            )
        else:
            fix = f"fix the hook, or switch it off (kodelet hooks disable {shlex.quote(name)})"
    return f"fix: {fix}; {opt_out(name)}"


def fix_of(exc: BaseException) -> str | None:
    """The fix a failure carries (a stand-in's, for a hook that cannot start), if any."""
    fix = getattr(exc, "fix", None) if isinstance(exc, HookFailure) else None
    return fix if isinstance(fix, str) else None
