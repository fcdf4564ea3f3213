"""Connections to the database file: one per thread (and per process after fork), writes in
``BEGIN IMMEDIATE`` transactions queued behind a process-wide lock, busy retries with random
backoff, SQLite errors turned into :class:`SessionStoreError`, and private file modes."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from .errors import REPAIR_HINT, SessionStoreError

log = logging.getLogger("hermes.sessions")

T = TypeVar("T")

_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CORRUPT, _SQLITE_NOTADB = 5, 6, 11, 26
_HEADER = b"SQLite format 3\x00"
_BUSY_WAIT_MS = 10
"""How long SQLite itself waits for a lock in one attempt (it sleeps 1, 2, 5 ms...)."""
_MAX_BACKOFF = 0.005
_WAL_AUTOCHECKPOINT = 10_000
"""Pages (40 MB) the WAL may reach before a commit copies it into the database: checkpoints
(and their fsyncs) ten times rarer than SQLite's default, and pages written many times (the
session row, index pages) are copied once."""


class _Handle:
    """One connection; closed when the thread that owns it ends (or the store closes)."""

    __slots__ = ("conn", "pid", "__weakref__")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pid = os.getpid()

    def __del__(self) -> None:
        if self.pid != os.getpid():  # inherited through fork: closing it here could disturb
            _FORK_LEFTOVERS.append(self.conn)  # the parent's WAL, so it is never closed
            return
        try:
            self.conn.close()
        except Exception:  # interpreter shutdown, already closed
            pass


_FORK_LEFTOVERS: list[sqlite3.Connection] = []


def _error_kind(exc: sqlite3.Error) -> str:
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).lower()
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED) or "locked" in text or "busy" in text:
        return "busy"
    if (
        primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
        or "malformed" in text
        or "not a database" in text
    ):
        return "corrupt"
    return "other"


class SQLiteConnections:
    """Connections to one SQLite file, safe to share between threads (one connection per thread)
    and processes (a forked child opens its own); the base of :class:`SQLiteSessionStore`.

    :param path: the database file.
    :param timeout: seconds :meth:`_run` keeps retrying while the database is busy.
    :param synchronous: the ``PRAGMA synchronous`` of every connection (``NORMAL`` or ``FULL``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        synchronous: str = "NORMAL",
    ) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.synchronous = synchronous.upper()
        self._local = threading.local()
        self._lock = threading.Lock()
        # Writers of this process queue here rather than in SQLite's busy handler, which sleeps
        # in growing steps: under many threads that sleep, not the write, was the latency.
        self._write_lock = threading.Lock()
        self._handles: weakref.WeakSet[_Handle] = weakref.WeakSet()
        self._inherited: list[_Handle] = []  # connections of the parent after fork: never used
        self._pid = os.getpid()
        self._closed = False

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.path),
            timeout=self.timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_WAIT_MS}")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute("PRAGMA cache_size = -16000")
            conn.execute(f"PRAGMA wal_autocheckpoint = {_WAL_AUTOCHECKPOINT}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise SessionStoreError(f"the session store {self.path} is closed")
        pid = os.getpid()
        if pid != self._pid:  # forked: the parent's connections must not be used nor closed here
            with self._lock:
                if pid != self._pid:
                    self._inherited.extend(self._handles)
                    self._handles = weakref.WeakSet()
                    self._pid = pid
        handle: _Handle | None = getattr(self._local, "handle", None)
        if handle is None or handle.pid != pid:
            if handle is not None:
                self._inherited.append(handle)
            handle = _Handle(self._connect())
            self._local.handle = handle
            with self._lock:
                self._handles.add(handle)
        return handle.conn

    def _run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool, what: str) -> T:
        """Run ``fn`` (in a ``BEGIN IMMEDIATE`` transaction when ``write``), retrying while the
        database is busy; any failure becomes one :class:`SessionStoreError`."""
        delay = 0.001
        started = time.monotonic()
        deadline = started + self.timeout
        attempt = 0
        while True:
            try:
                conn = self._conn()
                if not write:
                    return fn(conn)
                with self._write_lock:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = fn(conn)
                        conn.execute("COMMIT")
                    except BaseException:
                        if conn.in_transaction:
                            try:
                                conn.execute("ROLLBACK")
                            except sqlite3.Error:
                                pass
                        raise
                return result
            except sqlite3.Error as exc:
                kind = _error_kind(exc)
                if kind == "busy" and time.monotonic() < deadline:
                    attempt += 1
                    if attempt % 100 == 0:
                        log.debug("%s: still busy on %s after %d tries", self.path, what, attempt)
                    time.sleep(random.uniform(0, delay))
                    delay = min(delay * 2, _MAX_BACKOFF)
                    continue
                if kind == "corrupt":
                    raise SessionStoreError(
                        f"{self.path} is damaged or not a hermes session database ({exc}); "
                        f"{REPAIR_HINT}"
                    ) from None
                waited = time.monotonic() - started
                if kind == "busy":
                    message = (
                        f"could not {what} in {self.path}: {exc} after {attempt + 1} attempts "
                        f"over {waited:.1f}s (another process holds it)"
                    )
                else:
                    message = f"could not {what} in {self.path}: {exc}"
                log.error("%s", message)
                raise SessionStoreError(message) from None

    def close(self) -> None:
        """Close every connection of this store; later calls raise :class:`SessionStoreError`."""
        self._closed = True
        with self._lock:
            handles = list(self._handles) if os.getpid() == self._pid else []
            self._handles = weakref.WeakSet()
        for handle in handles:
            try:
                handle.conn.close()
            except sqlite3.Error:
                pass


SIDECARS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps next to a database, which hold its recent writes."""


def make_private(path: Path, *, sidecars_only: bool = False) -> None:
    """Make the database ``path`` (created empty when missing) and the sidecar files next to it
    readable by their owner only (mode 600): they hold every conversation and tool output."""
    if not sidecars_only:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
        except OSError:
            return  # reported by the open that follows, with its own message
    names = SIDECARS if sidecars_only else ("", *SIDECARS)
    for suffix in names:
        target = Path(f"{path}{suffix}")
        try:
            if target.stat().st_mode & 0o077:
                os.chmod(target, 0o600)
        except OSError:
            pass  # absent, or not ours: `hermes doctor` reports a file others can read


def check_header(path: Path) -> None:
    """Fail early, with the way out, when ``path`` exists and is not an SQLite file."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SessionStoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head and head != _HEADER:
        raise SessionStoreError(f"{path} is not an SQLite database; {REPAIR_HINT}")


def read_only_connection(path: Path, timeout: float = 10.0) -> sqlite3.Connection:
    """A connection through which SQLite can change nothing of ``path`` nor create anything
    beside it: ``immutable`` when the file has no write-ahead log (no writer has it open),
    else read-only (``mode=ro``), sharing the writer's log. A caller that needs a consistent
    read of an immutable-opened file checks that its size and time did not change meanwhile
    (:func:`file_state`)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    if not Path(f"{path}-wal").exists():
        uri += "&immutable=1"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    conn.execute("PRAGMA query_only = ON")
    return conn


def file_state(path: Path) -> tuple[int, int, bool]:
    """Size, modification time and whether a write-ahead log exists: what changes when another
    program writes ``path``."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns, Path(f"{path}-wal").exists()
