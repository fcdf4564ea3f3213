"""One turn of a session at a time across every process and machine using the database: a
session-level advisory lock, the lock of :meth:`PostgresSessionStore.hold_session
<hermes_store_postgres.store.PostgresSessionStore.hold_session>`.

The lock is ``pg_try_advisory_lock`` on a 64-bit hash of the session id, tried again (with a
growing pause, up to :data:`LAST_POLL`) until it is had or the caller cancels, on a connection
of the lock pool (see :mod:`.connections`) kept for as long as the lock is held: an advisory
lock of a session belongs to its connection, which is why it dies with it. When the holder
lets go, the lock is released (``pg_advisory_unlock``) before the connection goes back to the
pool; a connection that cannot say it released it is closed instead, which releases it too.
When the holder's process dies, the server ends its connection and the lock with it (at once
for a process killed on a live machine; within about a minute and a half for a machine that
vanished, see :data:`.connections.HOLDING_SETTINGS`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Iterator

import psycopg

from .connections import Connection, Connections, PostgresStoreError, one_line
from .schema import MIGRATION_LOCK

log = logging.getLogger("hermes.sessions")

FIRST_POLL = 0.005
"""Seconds before the first new attempt at a lock another holder has; doubled after each."""
LAST_POLL = 0.1
"""The longest pause between two attempts (how late at most a waiter sees a lock go free)."""


def lock_key(session_id: str) -> int:
    """The advisory lock key of ``session_id``: a signed 64-bit hash of it (never the key of
    the migrations' lock)."""
    digest = hashlib.blake2b(
        session_id.encode("utf-8", "surrogatepass"), digest_size=8, person=b"hermes-turn"
    ).digest()
    key = int.from_bytes(digest, "big", signed=True)
    return key ^ 1 if key == MIGRATION_LOCK else key


class SessionLocks:
    """The session locks of one store, on the lock pool of ``connections``.

    :param connections: the store's connections.
    """

    def __init__(self, connections: Connections) -> None:
        self.connections = connections

    @contextlib.contextmanager
    def hold(self, session_id: str, cancel: threading.Event) -> Iterator[bool]:
        """Hold ``session_id``'s lock while the block runs, waiting for its holder; yields
        ``False`` (holding nothing) when ``cancel`` is set while waiting.

        :raises PostgresStoreError: the server cannot be reached, or fails (one line).
        """
        key = lock_key(session_id)
        conn = self.connections.lock_connection(cancel)
        if conn is None:
            yield False
            return
        try:
            held = self._take(conn, key, cancel)
        except BaseException:
            self._drop(conn)
            raise
        if not held:
            self.connections.give_back(conn)
            yield False
            return
        try:
            yield True
        finally:
            self._let_go(conn, key)

    def _take(self, conn: Connection, key: int, cancel: threading.Event) -> bool:
        """Try the lock until it is had (``True``) or ``cancel`` is set meanwhile."""
        pause = FIRST_POLL
        while True:
            try:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            except psycopg.Error as exc:
                raise self._failed("hold a session", exc) from exc
            if row is not None and row[0]:
                return True
            if cancel.wait(pause):
                return False
            pause = min(pause * 2, LAST_POLL)

    def _let_go(self, conn: Connection, key: int) -> None:
        """Release the lock and give the connection back; when the release fails, close the
        connection instead, which ends the lock with it (the turn it protected is over: that
        is logged, not raised)."""
        try:
            row = conn.execute("SELECT pg_advisory_unlock(%s)", (key,)).fetchone()
        except Exception as exc:
            failure = self._failed("release a session's lock", exc)
            log.warning("%s; its connection was closed instead", failure)
            self._drop(conn)
            return
        except BaseException:
            self._drop(conn)
            raise
        if row is None or not row[0]:
            self._drop(conn)  # it was not held any more (the server restarted?): start afresh
            return
        self.connections.give_back(conn)

    def _drop(self, conn: Connection) -> None:
        """Close ``conn`` (ending whatever it holds) and let its pool forget it."""
        with contextlib.suppress(Exception):
            conn.close()
        with contextlib.suppress(Exception):
            self.connections.give_back(conn)

    def _failed(self, what: str, exc: BaseException) -> PostgresStoreError:
        """The one-line error for a database failure while doing ``what``."""
        db = self.connections
        return PostgresStoreError(
            f"the PostgreSQL session store at {db.where} could not {what}: {one_line(exc, db.url)}"
        )
