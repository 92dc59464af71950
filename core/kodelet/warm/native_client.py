"""Which ``kodelet-hook`` this installation has: the native client of the warm kodelet
(``warm/native/kodelet_hook.c``, compiled by setup.py where a C compiler was), or the
lean Python client under that name. The installers write the native client's path into
this machine's files (local and user scope) only when it is there and runs this very
kodelet; ``kodelet daemon status`` and ``kodelet AGENT status`` say which one it is."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import sysconfig
from typing import NamedTuple

NAME = "kodelet-hook"
"""The program on PATH that the shared (project) entries run."""
NATIVE_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
"""The first bytes of a compiled program (ELF, Mach-O)."""
PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


class Client(NamedTuple):
    """``kind``: ``native``, ``python``, ``broken`` (a native client that does not run
    this kodelet) or ``missing``; ``path`` (None when missing); and
    ``why`` it is not the native client ("" when it is)."""

    kind: str
    path: str | None
    why: str

    def describe(self) -> str:
        if self.kind == "native":
            return f"native ({self.path})"
        where = f" ({self.path})" if self.path else ""
        return f"{self.kind}{where}: {self.why}"


def folders() -> list[str]:
    """Where an install of this interpreter puts its programs."""
    found = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    with contextlib.suppress(KeyError):
        found.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    return list(dict.fromkeys(found))


@functools.cache
def installed() -> Client:
    """This installation's ``kodelet-hook``: asked once per process."""
    for folder in folders():
        path = os.path.join(folder, NAME)
        try:
            with open(path, "rb") as f:
                head = f.read(4)
        except OSError:
            continue
        if head not in NATIVE_MAGIC:
            return Client("python", path, "no C compiler built the native client at install")
        return probe(path)
    return Client("missing", None, f"no {NAME} next to {sys.executable}; reinstall kodelet")


def probe(path: str) -> Client:
    """The native client at ``path`` if it runs and finds this very kodelet."""
    try:
        done = subprocess.run(
            [path, "--where"], capture_output=True, stdin=subprocess.DEVNULL, timeout=10
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Client("broken", path, f"the native client does not run ({exc})")
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    if done.returncode != 0 or len(lines) != 3 or lines[0] != "native":
        return Client("broken", path, "the native client does not answer as it should")
    found = os.path.dirname(os.path.dirname(os.path.realpath(lines[1])))
    if found != PACKAGE:
        return Client("broken", path, f"the native client runs another kodelet ({found})")
    return Client("native", path, "")


def native_path() -> str | None:
    """The path of this installation's native client; None when it has none."""
    client = installed()
    return client.path if client.kind == "native" else None
