"""One turn at a time per session across the worker processes of one gateway: an advisory lock
on a file per session in ``$HERMES_HOME/gateway/locks`` (within one process the gateway's
session lanes already queue the turns)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

POLL = 0.01
"""Seconds between attempts to take a lock another worker holds."""


class SessionLocks:
    """The lock files of the sessions in ``folder`` (made on first use, private)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @contextlib.contextmanager
    def hold(self, session_id: str, cancel: threading.Event) -> Iterator[bool]:
        """Hold the session's lock while the block runs; waits for the worker that holds it.
        Yields ``False`` (holding nothing) when ``cancel`` is set while waiting."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = hashlib.sha256(session_id.encode()).hexdigest()[:32]
        fd = os.open(self.folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if cancel.wait(POLL):
                        yield False
                        return
            yield True
        finally:
            os.close(fd)  # releases the lock
