"""Reading untrusted JSON and files: one strict loader and one bounded reader;
and one atomic writer for the files kodelet changes.

Everything kodelet parses may have been written by someone else: a hook's
answer, a payload file, the discovery cache, a plugin manifest, a replay file,
a repository's config.toml. So every one of them goes through here:

- JSON is parsed strictly. A duplicate key is an error, not "the last one
  wins" (a naive guardrail that echoes the command could otherwise turn
  ``"blocked": true`` into ``false``); ``NaN`` and ``Infinity`` are not JSON;
  nesting and size are bounded (:mod:`kodelet.bounds`), and a string that is
  not valid Unicode (``"\\ud800"``) is refused here, not when it is re-encoded.
- A file is read only if it is a regular file, and at most ``cap`` bytes of
  it: a FIFO is refused without blocking, ``/dev/zero`` without reading.

Every error is one line naming what was read and why it was refused.

A file kodelet writes (config.toml, Claude Code settings, the discovery cache) is
replaced in one rename from a temporary file created afresh beside it: a reader
never sees half a file, and a name planted in a cloned repository's ``.kodelet/``
or ``.claude/`` (a symlink to the user's ``~/.bashrc``) is never written through.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .bounds import MAX_DEPTH, MAX_SIZE, BoundsError, check_bounds
from .errors import KodeletError

FILE_CAP = 32 * 1024 * 1024
"""Default cap on a JSON file: twice the payload bound, for escapes and indentation."""

_CHUNK = 65536


class JSONError(KodeletError, ValueError):
    """Text that is not strict, bounded JSON; the message names what it was and why.

    ``syntax`` is True when the text does not even parse (a caller may then quote it)."""

    def __init__(self, message: str, *, syntax: bool = False, detail: str = "") -> None:
        super().__init__(message)
        self.syntax = syntax
        self.detail = detail


class FileError(KodeletError, ValueError):
    """A file that cannot be read as asked (not a regular file, too big, unreadable)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {json.dumps(key)[:60]}")
            seen.add(key)
    return obj


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant)


def loads(
    data: str | bytes,
    what: str = "JSON",
    *,
    max_depth: int = MAX_DEPTH,
    max_size: int = MAX_SIZE,
) -> Any:
    """Parse ``data`` strictly; :class:`JSONError` says what is wrong, in one line."""
    if len(data) > 2 * max_size:
        raise JSONError(f"{what}: larger than {2 * max_size} bytes")
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONError(f"{what} is not UTF-8 (at byte {exc.start})") from None
    else:
        text = data
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        where = f" at line {exc.lineno}" if exc.lineno > 1 else ""
        detail = f"{exc.msg}{where}"
        raise JSONError(f"{what} is not JSON ({detail})", syntax=True, detail=detail) from None
    except RecursionError:
        raise JSONError(f"{what}: nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise JSONError(f"{what} is not JSON ({_first_line(exc)})") from None
    try:
        check_bounds(value, what, max_depth=max_depth, max_size=max_size)
    except BoundsError as exc:
        raise JSONError(str(exc)) from None
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def read_file(path: str | os.PathLike[str], what: str = "file", *, cap: int = FILE_CAP) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes.

    Opened non-blocking, so a FIFO cannot hang the caller, and checked with
    ``fstat`` on what was opened, so nothing is swapped in between the check and
    the read. ``FileNotFoundError`` passes through (callers often mean "absent
    is empty"); everything else is a :class:`FileError` naming the path."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileError(f"{path}: cannot read {what}: {_kind(st.st_mode)}")
        if st.st_size > cap:
            raise FileError(f"{path}: cannot read {what}: larger than {cap} bytes")
        return _read_capped(lambda n: os.read(fd, n), cap, f"{path}: cannot read {what}:")
    except OSError as exc:
        raise FileError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory"
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return f"not a regular file ({name})"
    return "not a regular file"


def read_stream(stream: IO[bytes], what: str = "input", *, cap: int = FILE_CAP) -> bytes:
    """At most ``cap`` bytes from a binary stream (stdin), or :class:`FileError`."""
    return _read_capped(stream.read, cap, f"cannot read {what}:")


def _read_capped(read: Any, cap: int, what: str) -> bytes:
    out = bytearray()
    while True:
        chunk = read(min(_CHUNK, cap + 1 - len(out)))
        if not chunk:
            return bytes(out)
        out += chunk
        if len(out) > cap:
            raise FileError(f"{what} larger than {cap} bytes")


def load_file(
    path: str | os.PathLike[str],
    what: str = "JSON file",
    *,
    cap: int = FILE_CAP,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """A regular JSON file, read within ``cap`` and parsed strictly (:func:`loads`)."""
    return loads(read_file(path, what, cap=cap), str(Path(path)), max_depth=max_depth)


class ChangedError(KodeletError, OSError):
    """The file changed since it was read: writing now would lose what was written."""


UNSET: Any = object()


def _unchanged(target: Path, expect: str | None) -> None:
    try:
        current: str | None = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError):
        current = UNSET
    if current != expect:
        raise ChangedError(f"{target} changed while kodelet was editing it; nothing was written")


@contextlib.contextmanager
def editing(directory: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the lock of ``directory`` (``flock`` on it): kodelet's own edits of the files
    in it never interleave. Others' edits are caught by ``expect`` instead."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remove_unchanged(path: str | os.PathLike[str], expect: str) -> None:
    """Remove ``path`` if it still holds ``expect`` (:class:`ChangedError` otherwise)."""
    _unchanged(Path(path), expect)
    os.unlink(path)


def make_private_dirs(directory: str | os.PathLike[str]) -> None:
    """Create ``directory`` and its missing parents, each 0700 whatever the umask:
    under ``umask 002`` a folder kodelet made would otherwise be group-writable, and
    the trust rule (docs/SECURITY.md) may then refuse the hooks kept in it."""
    missing: list[Path] = []
    current = Path(directory)
    while not os.path.lexists(current) and current.parent != current:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs, not ours to chmod
        os.chmod(path, 0o700)


def write_atomically(
    path: str | os.PathLike[str], text: str, mode: int | None = None, expect: Any = UNSET
) -> None:
    """Replace ``path`` with ``text``: the new file keeps the old one's permissions
    (0600 when there was none, in folders made 0700: kodelet's files are private
    whatever the umask) unless ``mode`` is given; the temporary file is removed
    if anything fails. With ``expect`` (the text read before, None for no file), the
    file is compared again just before it is replaced and :class:`ChangedError` raised
    if someone else wrote it meanwhile (compare-and-swap)."""
    target = Path(path)
    make_private_dirs(target.parent)
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except OSError:
            mode = 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(text)
        if expect is not UNSET:
            _unchanged(target, expect)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
