"""Locks of one machine (one turn per session, say) that leave no files behind: an advisory
lock (``flock``) on a file per key in a private folder, the file removed by the holder as it
lets go.

Removing a file that others may have open is safe with this protocol:

- to take the lock, open (or create) the file, ``flock`` it, then check that the path still
  names the file that was locked (same device and inode); when it does not, the previous
  holder removed it meanwhile: close it and start again with the file now at the path;
- to let go, remove the path first, then close the file (which releases the ``flock``).

Only a holder removes the path, and only while it holds the lock on the file the path names, so
whoever holds a lock on the file at the path is the only holder. The kernel releases a
``flock`` when its process dies, however it dies: no stale lock outlives a crash (the file of a
crashed holder stays until the key is next held and let go). Each hold opens a file of its own,
so two threads of one process exclude each other as two processes do.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

FIRST_POLL = 0.001
"""Seconds before the first new attempt at a lock another holder has; doubled after each."""
LAST_POLL = 0.02
"""The longest pause between two attempts (how late at most a waiter sees a lock go free)."""


class LockFileError(OSError):
    """A lock file that cannot be made or opened; the message is one line naming it."""


def lock_name(key: str) -> str:
    """The file name of ``key``'s lock: a hash, so any key makes a safe, short name."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".lock"


class LockFiles:
    """The lock files of the keys in ``folder`` (made private on first use); safe to share
    between threads."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __repr__(self) -> str:
        return f"LockFiles({str(self.folder)!r})"

    @contextlib.contextmanager
    def hold(self, key: str, cancel: threading.Event) -> Iterator[bool]:
        """Hold ``key``'s lock while the block runs, waiting for its holder; yields ``False``
        (holding nothing) when ``cancel`` is set while waiting. The file goes when the block
        ends.

        :raises LockFileError: the folder or the file cannot be made or opened.
        """
        path = self.folder / lock_name(key)
        fd = self._take(path, cancel)
        if fd is None:
            yield False
            return
        try:
            yield True
        finally:
            try:
                os.unlink(path)  # first, while the lock is held ...
            except OSError:
                pass  # gone already; or kept, and then simply locked again by the next holder
            finally:
                os.close(fd)  # ... then let go

    def _take(self, path: Path, cancel: threading.Event) -> int | None:
        """The open, locked file that ``path`` names; ``None`` when cancelled while waiting."""
        pause = FIRST_POLL
        while True:
            fd = self._open(path)
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if cancel.wait(pause):
                            os.close(fd)
                            return None
                        pause = min(pause * 2, LAST_POLL)
                if _still_named(fd, path):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # its holder removed it meanwhile: lock the file now at the path

    def _open(self, path: Path) -> int:
        """The lock file at ``path``, created (private) when missing, with its folder."""
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            return os.open(path, flags, 0o600)
        except FileNotFoundError:
            pass  # no folder yet
        except OSError as exc:
            raise _error(path, exc) from None
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            return os.open(path, flags, 0o600)
        except OSError as exc:
            raise _error(path, exc) from None


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _error(path: Path, exc: OSError) -> LockFileError:
    """The one-line error for a lock file that cannot be opened."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ELOOP:
        reason = "it is a symbolic link"
    return LockFileError(exc.errno or 0, f"cannot open the session lock {path}: {reason}")


__all__ = ["FIRST_POLL", "LAST_POLL", "LockFileError", "LockFiles", "lock_name"]
