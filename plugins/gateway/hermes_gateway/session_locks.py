"""One turn at a time per session across the processes (and machines) that share the session
store: with several workers (``gateway.workers``), or with a store that other gateways may use
too (``store.url`` naming anything but SQLite). Within one process the gateway's session lanes
already queue the turns.

The lock is the store's own when it has one (a :class:`~hermes_hookspecs.LockingSessionStore`:
lock files beside ``sessions.db``, an advisory lock in PostgreSQL), held with
:meth:`~hermes_hookspecs.LockingSessionStore.hold_session`. For a store without it,
:class:`SessionLocks` is the fallback: an advisory lock (``flock``) on a file per session in
``$HERMES_HOME/gateway/locks``, which serves the processes of one machine only.

A fallback lock file exists only while its session is held or waited for: the holder removes
it as it lets go. That is safe because whoever takes a lock checks, once it has it, that the
path still names the file it locked (else the holder removed it meanwhile, and it starts
again), and a holder removes the path before it closes the file (which releases the lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

FIRST_POLL = 0.001
"""Seconds before the first new attempt at a lock another worker holds; doubled after each."""
LAST_POLL = 0.02
"""The longest pause between two attempts."""


def shares_sessions(config: Mapping[str, Any], workers: int) -> bool:
    """Whether other processes may run turns of this gateway's sessions, so that each turn
    must hold its session's lock: with several ``workers``, or when ``store.url`` names a
    store other than SQLite (other gateways, on other machines too, may share it)."""
    store = config.get("store")
    url = store.get("url") if isinstance(store, Mapping) else None
    return workers > 1 or bool(url and not str(url).startswith("sqlite:"))


class SessionLocks:
    """The lock files of the sessions in ``folder`` (made private on first use), for a store
    that holds no lock itself. Each file is removed when its lock is let go."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @contextlib.contextmanager
    def hold(self, session_id: str, cancel: threading.Event) -> Iterator[bool]:
        """Hold the session's lock while the block runs; waits for the worker that holds it.
        Yields ``False`` (holding nothing) when ``cancel`` is set while waiting."""
        path = self.folder / (hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".lock")
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
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        pause = FIRST_POLL
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
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


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)
