"""One turn of a session at a time across the processes of one machine: an advisory lock
(``flock``) on a file per session in a private folder beside the database
(``sessions.db.locks/``), the lock of :meth:`SQLiteSessionStore.hold_session
<hermes_core.session_store.sqlite_store.SQLiteSessionStore.hold_session>`.

A lock file exists only while its session is held (or waited for): the holder removes it when
it lets go, so the folder never fills up with the files of past sessions (the protocol that
makes that safe is :mod:`hermes_runtime.lock_files`'s). The kernel releases a lock when its
process dies, however it dies: no stale lock outlives a crash.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from hermes_runtime.lock_files import LockFileError, LockFiles, lock_name

from .errors import SessionStoreError

__all__ = ["SessionLockFiles", "lock_name"]


class SessionLockFiles:
    """The lock files of the sessions of one database, in ``folder`` (made private on first
    use). Safe to share between threads; two threads of one process exclude each other as two
    processes do.

    :param folder: where the lock files are made (``<database>.locks``).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files = LockFiles(folder)

    def __repr__(self) -> str:
        return f"SessionLockFiles({str(self.folder)!r})"

    @contextlib.contextmanager
    def hold(self, session_id: str, cancel: threading.Event) -> Iterator[bool]:
        """Hold ``session_id``'s lock while the block runs, waiting for its holder; yields
        ``False`` (holding nothing) when ``cancel`` is set while waiting. The lock file is
        removed when the block ends.

        :raises SessionStoreError: the folder or the file cannot be made or opened.
        """
        try:
            with self._files.hold(session_id, cancel) as held:
                yield held
        except LockFileError as exc:  # one line, as every store error
            raise SessionStoreError(str(exc.strerror)) from None
