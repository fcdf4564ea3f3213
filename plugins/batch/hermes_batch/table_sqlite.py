"""The run table in SQLite: ``$HERMES_HOME/batch.db``, a file of its own beside the session
store's ``sessions.db`` (so that a run's many small writes never wait on a chat's turn, and a
session database can be copied or repaired without the run tables)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .attempts import Cursor
from .schema import ADDED_COLUMNS, TABLES
from .table import RunTable

FILE_NAME = "batch.db"
"""The run table's file in the home folder."""


class SQLiteRunTable(RunTable):
    """The run table in the SQLite file ``path`` (made when missing). One connection per
    process (open it after a fork); several processes share the file (WAL, a busy timeout)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.where = str(path)
        self._lock = threading.RLock()  # the row's lease thread shares the connection
        self._conn = sqlite3.connect(
            path, timeout=60, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self.transaction() as cur:
            for statement in TABLES:
                cur.execute(statement)
            for table, column, kind in ADDED_COLUMNS:
                cur.execute(f"PRAGMA table_info({table})")
                if column not in {str(r[1]) for r in cur.fetchall()}:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Cursor]:
        """A transaction; a writing one takes the file's write lock at once (``BEGIN
        IMMEDIATE``), so that two claims never read the same pending row."""
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")
            finally:
                cur.close()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
