"""The run table in PostgreSQL, when ``store.url`` names a ``postgresql://`` database: the
``batch_*`` tables beside the sessions, shared by every machine of a run. psycopg is imported
when such a table is opened, never before."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .attempts import Cursor
from .schema import ADDED_COLUMNS, TABLES
from .table import RunTable

SCHEMES = ("postgresql", "postgres")


def _sql(statement: str) -> str:
    return statement.replace("%", "%%").replace("?", "%s")


class _Cursor:
    """A psycopg cursor that takes ``?`` placeholders."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._cur.execute(_sql(sql), tuple(params))

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> Any:
        return self._cur.executemany(_sql(sql), [tuple(p) for p in params])

    def fetchone(self) -> Any:
        return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._cur.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self._cur.rowcount)


class PostgresRunTable(RunTable):
    """The run table in the PostgreSQL database at ``url`` (tables made when missing)."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.where = url.split("@")[-1]  # never the password
        self._lock = threading.RLock()  # the row's lease thread shares the connection
        self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        with self.transaction() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext('hermes_batch_schema'))")
            for statement in TABLES:
                cur.execute(statement)
            for table, column, kind in ADDED_COLUMNS:
                cur.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {kind}")

    def claim_next_sql(self) -> str:
        """The next pending row, locked; rows other workers hold are skipped."""
        return super().claim_next_sql() + " FOR UPDATE SKIP LOCKED"

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Cursor]:
        """A transaction on the connection (read committed; claims lock their row)."""
        with self._lock, self._conn.transaction(), self._conn.cursor() as cur:
            yield _Cursor(cur)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
