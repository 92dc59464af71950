"""The demo's own hooks: what bare ``kodelet replay`` runs the shipped session through.

Two hooks made for the demo session and used by nothing else: ``demo-guard``, a
native plugin (:mod:`.guard`), and ``demo-redact``, an executable hook
(:mod:`.redact`). Between them and the built-in compaction, every kind of
action shows on the first run: a refused message, a blocked call, a rewritten
input, a rewritten output, a follow-up and a compaction.

The demo runtime loads them and the built-ins and nothing of the user's (no
installed plugins, no ``.kodelet`` hooks, no config.toml), so the first run is
the same on every machine. ``kodelet replay --my-hooks`` replays the same
session through the user's own hooks instead.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ...assembly import load_runtime
from ...runtime import Runtime
from .guard import DemoGuard

__all__ = ["GUARD_NAME", "REDACT_NAME", "demo_runtime"]

GUARD_NAME = "demo-guard"
REDACT_NAME = "demo-redact"


def _install_redact(hooks: Path) -> None:
    """The executable, as a user would have it: a file in a hooks directory.

    It is written into a private temporary directory rather than run from the
    package, so it passes the trust check whatever the install's permissions,
    and it runs with this interpreter, where kodelet's hookkit is importable.
    """
    script = Path(__file__).with_name("redact.py")
    exe = hooks / REDACT_NAME
    exe.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(script))} "$@"\n',
        encoding="utf-8",
    )
    exe.chmod(0o700)


@contextlib.contextmanager
def demo_runtime(*, no_hooks: bool = False, timeout: float | None = None) -> Iterator[Runtime]:
    """A runtime with the demo hooks and the built-ins; ``no_hooks`` leaves the built-ins."""
    with tempfile.TemporaryDirectory(prefix="kodelet-demo-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        for directory in (home, home / "hooks", project):
            directory.mkdir(mode=0o700)
        _install_redact(home / "hooks")
        runtime = load_runtime(
            cwd=project, home=home, entry_points=False, no_hooks=no_hooks or None, timeout=timeout
        )
        try:
            if not runtime.no_hooks:
                runtime.register(DemoGuard(), name=GUARD_NAME)
            yield runtime
        finally:
            runtime.close()
