"""Which program starts a hook file: kodelet's own Python for kodelet's kind of hook.

A hook written as the docs show starts with ``#!/usr/bin/env python3`` and
imports :mod:`kodelet.hookkit`. The ``python3`` that line finds on PATH is
kodelet's only when kodelet's venv is the active one: under pipx, ``uv tool``,
or an agent that starts hooks with its own PATH, it is another Python, the
import fails, and the guard does not run. So such a file (its ``#!`` line asks
``env`` for a Python by name, and it imports kodelet) is started as
``<kodelet's Python> <file> <verb>``: the interpreter kodelet itself runs on
(``sys.executable``), which imports this very kodelet whatever installed it.

This widens nothing. The file is one kodelet runs anyway (found, trusted and
re-checked like any other); only the program that interprets it changes, from
the first ``python3`` on a PATH to a fixed absolute path, and the hook gets the
same environment as any hook: no ``PYTHONPATH`` entry, nothing of kodelet's
``site-packages`` leaks into the programs the hook starts. A file that is not
executable, or on a ``noexec`` mount, is started as written (and fails as it
would), so kodelet's Python never runs what the system would refuse to.

Everything else runs as written, by its ``#!`` line: a Python hook that imports
no kodelet keeps the ``python3`` (and the packages) of the PATH, and one that
names its interpreter by path keeps it. When a hook's Python cannot import a
module, :func:`explain` says which module and how to fix it.
"""

from __future__ import annotations

import os
import re
import sys

__all__ = ["Launcher", "command", "explain", "own_python"]

# How much of a file is read to find its ``#!`` line and its imports: a hook is a
# script, and a kodelet import far past this is not one the docs show.
HEAD = 64 * 1024
_PYTHON = re.compile(rb"python(?:3(?:\.\d+)?)?")
_IMPORTS_KODELET = re.compile(
    rb"^[ \t]*(?:from[ \t]+kodelet(?:[ \t]|\.)|import[ \t]+kodelet\b)", re.MULTILINE
)
# The last line of the hook's stderr, as a failure ends with it: an import that failed
# and was caught, with the hook then failing for another reason, is not the cause.
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'\s*$")
ENV_SHEBANG = "#!/usr/bin/env python3"


def _head(file: str) -> bytes | None:
    try:
        with open(file, "rb") as fh:
            return fh.read(HEAD)
    except OSError:
        return None


def _asks_env_for_python(head: bytes) -> bool:
    """``#!/usr/bin/env python3`` (or ``python``, ``python3.N``), nothing more on the line."""
    if not head.startswith(b"#!"):
        return False
    words = head[2:].split(b"\n", 1)[0].split()
    return (
        len(words) == 2
        and os.path.basename(words[0]) == b"env"
        and bool(_PYTHON.fullmatch(words[1]))
    )


def _runnable(file: str) -> bool:
    """Whether the system itself would start the file: executable, and not on a
    ``noexec`` mount. kodelet's Python starts nothing the system would refuse."""
    try:
        return os.access(file, os.X_OK) and not os.statvfs(file).f_flag & os.ST_NOEXEC
    except OSError:
        return False


def _python() -> str | None:
    exe = sys.executable
    return exe if exe and os.path.isabs(exe) and os.access(exe, os.X_OK) else None


def _kodelets_kind(head: bytes | None) -> bool:
    """Whether a file starting with ``head`` is kodelet's kind of hook (see above)."""
    return head is not None and _asks_env_for_python(head) and bool(_IMPORTS_KODELET.search(head))


def own_python(file: str) -> str | None:
    """kodelet's Python, when it is the one that runs ``file``; None when the file runs
    as written. Read afresh: for one look (a discovery query, a server's start)."""
    if not _kodelets_kind(_head(file)):
        return None
    return _python() if _runnable(file) else None


def command(file: str, verb: str) -> list[str]:
    """The argv that runs hook ``file`` with ``verb`` (``hook``, ``run`` or ``serve``)."""
    python = own_python(file)
    return [python, file, verb] if python else [file, verb]


class Launcher:
    """:func:`command` for a hook started again and again (per call): the file's head
    is read again only when ``stat`` says the file changed (its inode, size, mtime
    or ctime, which a chmod moves too), so an edit counts from its next run, and a
    call costs one ``stat`` rather than an open and a read of up to 64 KiB. Whether
    the system would start the file is still asked at every start."""

    def __init__(self, file: str) -> None:
        self.file = file
        self._seen: tuple[int, ...] | None = None
        self._ours = False

    def argv(self, verb: str) -> list[str]:
        try:
            st = os.stat(self.file)
        except OSError:
            return [self.file, verb]  # gone: starting it says so in its own words
        seen = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if seen != self._seen:
            self._ours, self._seen = _kodelets_kind(_head(self.file)), seen
        python = _python() if self._ours and _runnable(self.file) else None
        return [python, self.file, verb] if python else [self.file, verb]


def _shebang(file: str) -> str:
    head = _head(file) or b""
    if not head.startswith(b"#!"):
        return ""
    return head[2:].split(b"\n", 1)[0].strip().decode("utf-8", "backslashreplace")


def explain(failure: str, file: str) -> str:
    """``failure`` (a hook's failure, its stderr's last lines included) with a missing
    module named, and the fix, in place of the traceback; unchanged when no module was
    missing."""
    found = _MISSING.search(failure)
    if found is None:
        return failure
    module = found[1]
    top = module.split(".", 1)[0]
    what = failure[: found.start()].split(":", 1)[0].strip()
    ours = own_python(file)
    if ours is not None:
        where = f"kodelet's own Python ({ours}), which runs this hook,"
        if top == "kodelet":
            fix = f"reinstall kodelet: {ours} cannot import it"
        else:
            fix = (
                f"add {top} to kodelet's environment (kodelet plugins install {top}, which"
                f" asks whichever installer made it: {ours} -m pip install {top},"
                f" pipx inject kodelet {top}, or uv tool install kodelet --with {top}), or "
                f"name a Python that has both on the #! line"
            )
    else:
        line = _shebang(file)
        where = f"the Python its #!{line} line runs" if line else "the hook's Python"
        if top == "kodelet":
            fix = (
                f"make its first line {ENV_SHEBANG} and import kodelet on a line of its "
                "own (from kodelet import hookkit): kodelet then runs it with its own "
                "Python, whatever installed kodelet"
            )
        else:
            fix = f"install {top} for that Python"
    return f"{what}: {where} cannot import {module!r} (ModuleNotFoundError); fix: {fix}"
