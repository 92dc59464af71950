"""The decision log on disk: ``<global root>/audit/decisions.jsonl``, private and rotated.

Its threats are other local users and the repositories the agent works in: neither
may read it, redirect it or make kodelet write somewhere else through it. So the
folder is the user's own and 0700, the file the user's own and 0600, both opened
without following a symbolic link (the folder by a descriptor the file is then opened
relative to, so no one can swap a link in between), and a file with another owner or
a second hard link is refused rather than written.

Several agents append at once (each call of a bridge is its own process, and a warm
kodelet serves several agents): a record is one ``write()`` of one line under
``PIPE_BUF`` on a descriptor opened with ``O_APPEND``, which Linux and macOS keep
whole; only rotation takes a lock, so that two writers never rotate the same file
twice.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import KodeletError
from ..places import audit_dir

__all__ = ["LINE_CAP", "LOG_NAME", "AuditWriteError", "DecisionLog"]

LOG_NAME = "decisions.jsonl"
LOCK_NAME = ".rotate.lock"
LINE_CAP = 4000
"""Bytes a record may take, newline included: under ``PIPE_BUF`` (4096), so an append
is one whole line whatever else appends at the same time."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class AuditWriteError(KodeletError, OSError):
    """The decision log cannot be written safely; the message says why and the fix."""


class DecisionLog:
    """The log file of one global root. ``max_bytes`` and ``keep`` are ``[audit]``'s."""

    def __init__(self, root: Path, max_bytes: int, keep: int) -> None:
        self.folder = audit_dir(root)
        self.path = self.folder / LOG_NAME
        self.max_bytes = max_bytes
        self.keep = keep

    # -- writing ------------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one line; raises :class:`AuditWriteError`."""
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        if len(line) > LINE_CAP:
            raise AuditWriteError(f"an audit record of {len(line)} bytes is over {LINE_CAP}")
        folder = self._folder()
        try:
            fd = self._open(folder)
            try:
                if os.fstat(fd).st_size + len(line) > self.max_bytes:
                    os.close(fd)
                    fd = -1
                    self._rotate(folder, len(line))
                    fd = self._open(folder)
                written = os.write(fd, line)
            finally:
                if fd >= 0:
                    os.close(fd)
        finally:
            os.close(folder)
        if written != len(line):
            raise AuditWriteError(f"{self.path}: only {written} of {len(line)} bytes written")

    def _folder(self) -> int:
        """A descriptor of the audit folder, made if missing, checked to be the user's own."""
        root = self.folder.parent
        try:
            os.makedirs(root, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise AuditWriteError(f"{root}: cannot create: {exc.strerror}") from None
        try:
            os.mkdir(self.folder, 0o700)  # 0700 whatever the umask: it only takes bits away
        except FileExistsError:
            pass
        except OSError as exc:
            raise AuditWriteError(f"{self.folder}: cannot create: {exc.strerror}") from None
        try:
            fd = os.open(self.folder, _DIR_FLAGS)
        except OSError as exc:
            why = (
                "is a symbolic link" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror
            )
            raise AuditWriteError(
                f"{self.folder}: {why}; the audit folder must be a plain folder of yours"
                " (remove it and kodelet makes a new one)"
            ) from None
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            os.close(fd)
            raise AuditWriteError(
                f"{self.folder}: belongs to uid {st.st_uid}, not to you; remove it"
            )
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.fchmod(fd, 0o700)
        return fd

    def _open(self, folder: int) -> int:
        try:
            fd = os.open(LOG_NAME, _APPEND_FLAGS, 0o600, dir_fd=folder)
        except OSError as exc:
            why = "is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
            raise AuditWriteError(f"{self.path}: {why}; remove it") from None
        try:
            _check_own(fd, self.path)
        except AuditWriteError:
            os.close(fd)
            raise
        return fd

    def _rotate(self, folder: int, need: int) -> None:
        """Shift ``decisions.jsonl`` to ``.1``, ``.1`` to ``.2``, ... (``keep`` of them), under
        a lock and only if no other writer rotated it meanwhile."""
        lock = os.open(LOCK_NAME, _APPEND_FLAGS, 0o600, dir_fd=folder)
        try:
            _check_own(lock, self.folder / LOCK_NAME)
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                st = os.stat(LOG_NAME, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                return
            if st.st_size + need <= self.max_bytes:
                return  # another writer rotated it while we waited
            if self.keep == 0:
                os.unlink(LOG_NAME, dir_fd=folder)
                return
            for n in range(self.keep - 1, 0, -1):
                with contextlib.suppress(FileNotFoundError):
                    os.rename(f"{LOG_NAME}.{n}", f"{LOG_NAME}.{n + 1}",
                              src_dir_fd=folder, dst_dir_fd=folder)  # fmt: skip
            os.rename(LOG_NAME, f"{LOG_NAME}.1", src_dir_fd=folder, dst_dir_fd=folder)
        finally:
            os.close(lock)  # closing releases the lock

    def check(self) -> int:
        """Raise :class:`AuditWriteError` if a record could not be written now; the
        number of the log's files otherwise (``kodelet audit --check``, ``status``).
        Makes nothing: a folder not there yet is made by the first record."""
        if not os.path.lexists(self.folder):
            return 0
        try:
            folder = os.open(self.folder, _DIR_FLAGS)
        except OSError as exc:
            why = (
                "is a symbolic link" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror
            )
            raise AuditWriteError(f"{self.folder}: {why}; remove it") from None
        try:
            owner = os.fstat(folder).st_uid
        finally:
            os.close(folder)
        if owner != os.geteuid():
            raise AuditWriteError(f"{self.folder}: belongs to uid {owner}, not to you; remove it")
        files = self.files()
        for path in files:
            try:
                fd = os.open(path, _READ_FLAGS)
            except OSError as exc:
                why = "is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
                raise AuditWriteError(f"{path}: {why}; remove it") from None
            try:
                _check_own(fd, path)
            finally:
                os.close(fd)
        return len(files)

    # -- reading ------------------------------------------------------------------------

    def files(self) -> list[Path]:
        """The log's files, oldest first: ``.N`` ... ``.1``, then the current one."""
        try:
            names = set(os.listdir(self.folder))
        except OSError:
            return []
        rotated = sorted((int(n.rsplit(".", 1)[1]) for n in names if _rotated(n)), reverse=True)
        out = [self.folder / f"{LOG_NAME}.{n}" for n in rotated]
        if LOG_NAME in names:
            out.append(self.path)
        return out

    def lines(self, path: Path) -> Iterator[bytes]:
        """The lines of one of :meth:`files`, read without following a link."""
        fd = os.open(path, _READ_FLAGS)
        try:
            _check_own(fd, path)
            with os.fdopen(fd, "rb", closefd=False) as fh:
                yield from fh
        finally:
            os.close(fd)


def _rotated(name: str) -> bool:
    head, _, tail = name.rpartition(".")
    return head == LOG_NAME and tail.isdigit()


def _check_own(fd: int, path: Path) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise AuditWriteError(f"{path}: not a regular file; remove it")
    if st.st_uid != os.geteuid():
        raise AuditWriteError(f"{path}: belongs to uid {st.st_uid}, not to you; remove it")
    if st.st_nlink > 1:
        raise AuditWriteError(f"{path}: has {st.st_nlink} hard links; remove it")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.fchmod(fd, 0o600)
