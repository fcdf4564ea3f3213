"""Connections to the PostgreSQL server: the URL shown without its password, a pool shared by
the threads of one process (and made again in a forked child), and errors as one line.

Every call of the store borrows a connection from the pool for one transaction. A session's
lock (:mod:`.session_locks`) keeps a connection for as long as it is held, so those come from
a pool of their own: held locks never take the connections the calls of the turns they
protect need. The pools are made when first needed, never at import or registration, and a
process that forks gets its own: the parent's connections are left alone (closing them from
the child would end the parent's sessions on the server).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from hermes_hookspecs import HermesError

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

T = TypeVar("T")
Connection = psycopg.Connection[Any]

_INHERITED: list[Any] = []
"""Pools a forked child found in its parent's store: kept (never closed nor freed) so that the
child never ends the parent's connections."""

_LIVE: weakref.WeakSet[Connections] = weakref.WeakSet()
"""Every open :class:`Connections` of this process, for :func:`_after_fork_in_child`."""

_CREDENTIALS = re.compile(r"(://[^:/@\s]*):[^@\s]*@")
_PASSWORD_OPTION = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


class PostgresStoreError(HermesError):
    """The PostgreSQL session store cannot do what was asked; the message is one line that says
    why (the server's address without the password) and, where there is one, the way out."""


def redact(text: str, url: str) -> str:
    """``text`` without the password of ``url`` (nor any ``user:password@`` of a URL, nor a
    ``password=`` option)."""
    secrets = set()
    try:
        raw = urllib.parse.urlsplit(url).password
    except ValueError:
        raw = None
    if raw:
        secrets |= {raw, urllib.parse.unquote(raw)}
    try:
        password = conninfo_to_dict(url).get("password")
    except psycopg.Error:
        password = None
    if isinstance(password, str) and password:
        secrets.add(password)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _CREDENTIALS.sub(r"\1:***@", text)
    return _PASSWORD_OPTION.sub(r"\1***", text)


def describe(url: str) -> str:
    """Where ``url`` points, for messages: ``postgresql://USER@HOST:PORT/DATABASE``, never the
    password; a Unix socket's folder as the host."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error:
        return redact(url, url)
    host = str(params.get("host") or params.get("hostaddr") or "localhost (Unix socket)")
    port = params.get("port")
    user = params.get("user")
    where = f"{user}@" if user else ""
    where += host + (f":{port}" if port else "")
    return f"postgresql://{where}/{params.get('dbname') or ''}"


def one_line(exc: BaseException, url: str) -> str:
    """The message of ``exc`` on one line, without the password of ``url``."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return redact("; ".join(lines) or type(exc).__name__, url)


class Connections:
    """The connections of one store to the server at ``url``: a pool for the threads of this
    process, made when first needed.

    :param url: a libpq URL (``postgresql://user:password@host:port/database``).
    :param timeout: seconds a call waits for a connection before it fails.
    :param max_connections: the most connections this process keeps open to the server for
        its calls.
    :param max_held: the most session locks this process holds at once (each keeps a
        connection of its own while held).
    """

    def __init__(
        self, url: str, *, timeout: float = 30.0, max_connections: int = 8, max_held: int = 64
    ) -> None:
        self.url = url
        self.where = describe(url)
        self.timeout = timeout
        self.max_connections = max(1, int(max_connections))
        self.max_held = max(1, int(max_held))
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._lock_pool: ConnectionPool | None = None
        self._pid = os.getpid()
        self._closed = False
        _LIVE.add(self)
        try:
            given = conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise PostgresStoreError(
                f"store.url is not a PostgreSQL URL ({one_line(exc, url)}): "
                f"{redact(url, url)}; see docs/postgres.md"
            ) from None
        self._kwargs: dict[str, Any] = {}
        if "connect_timeout" not in given:
            self._kwargs["connect_timeout"] = max(1, int(min(timeout, 10)))
        if "application_name" not in given:
            self._kwargs["application_name"] = "hermes"

    def connect(self) -> Connection:
        """A connection of its own (not from the pool), in autocommit mode.

        :raises PostgresStoreError: the server cannot be reached, refuses the login, or has
            no such database; the message names the server, never the password.
        """
        try:
            return psycopg.connect(self.url, autocommit=True, **self._kwargs)
        except psycopg.Error as exc:
            raise self.unreachable(exc) from exc

    def unreachable(self, exc: BaseException) -> PostgresStoreError:
        """The error for a server that could not be reached (or refused us)."""
        reason = one_line(exc, self.url).removeprefix("connection failed: ")
        hint = ""
        if "does not exist" in reason and "database" in reason:
            hint = "; create it first (createdb), or name an existing database"
        return PostgresStoreError(
            f"cannot reach the PostgreSQL session store at {self.where}: {reason}{hint}"
        )

    def forked(self) -> None:
        """Forget the parent's pool in a forked child (kept, never closed) and the lock a
        thread of the parent may have held: the child makes its own when it needs them."""
        self._lock = threading.Lock()
        for pool in (self._pool, self._lock_pool):
            if pool is not None:
                _INHERITED.append(pool)
        self._pool = self._lock_pool = None
        self._pid = os.getpid()

    def pool(self) -> ConnectionPool:
        """The pool of this process (a forked child makes its own)."""
        if self._pid != os.getpid():
            self.forked()
        with self._lock:
            if self._closed:
                raise PostgresStoreError(f"the session store at {self.where} is closed")
            if self._pool is None:
                from psycopg_pool import ConnectionPool

                self._pid = os.getpid()
                self._pool = ConnectionPool(
                    self.url,
                    kwargs=dict(self._kwargs),
                    min_size=1,
                    max_size=self.max_connections,
                    timeout=self.timeout,
                    check=ConnectionPool.check_connection,
                    name="hermes-sessions",
                    open=False,
                )
                self._pool.open(wait=False)
            return self._pool

    def lock_pool(self) -> ConnectionPool:
        """The pool of the connections that hold session locks, in this process: made empty,
        at most :attr:`max_held` connections, each in autocommit mode and set up so that the
        server lets go of its locks soon after its process or machine is gone."""
        if self._pid != os.getpid():
            self.forked()
        with self._lock:
            if self._closed:
                raise PostgresStoreError(f"the session store at {self.where} is closed")
            if self._lock_pool is None:
                from psycopg_pool import ConnectionPool

                self._pid = os.getpid()
                self._lock_pool = ConnectionPool(
                    self.url,
                    kwargs=dict(self._kwargs),
                    min_size=0,
                    max_size=self.max_held,
                    timeout=self.timeout,
                    configure=_for_holding,
                    check=ConnectionPool.check_connection,
                    name="hermes-session-locks",
                    open=False,
                )
                self._lock_pool.open(wait=False)
            return self._lock_pool

    def lock_connection(self, cancel: threading.Event) -> Connection | None:
        """A connection of :meth:`lock_pool`, to hold a lock on (give it back with
        :meth:`give_back`); ``None`` when ``cancel`` is set while every one is taken.

        :raises PostgresStoreError: none came within ``timeout`` seconds (the server refuses
            connections, or this process holds :attr:`max_held` locks).
        """
        from psycopg_pool import PoolTimeout

        pool = self.lock_pool()
        deadline = time.monotonic() + self.timeout
        while True:
            wait = max(0.01, min(0.25, deadline - time.monotonic()))
            try:
                return pool.getconn(timeout=wait)
            except PoolTimeout as exc:
                if cancel.is_set():
                    return None
                if time.monotonic() >= deadline:
                    raise self._timed_out(holding=True) from exc
            except psycopg.Error as exc:
                raise PostgresStoreError(
                    f"the PostgreSQL session store at {self.where} could not hold a session: "
                    f"{one_line(exc, self.url)}"
                ) from exc

    def give_back(self, conn: Connection) -> None:
        """Return a connection of :meth:`lock_connection` to its pool (which drops it when it
        is closed or broken)."""
        pool = self._lock_pool
        if pool is None or self._pid != os.getpid():
            conn.close()  # its pool is closed (or the parent's): nothing to return it to
            return
        pool.putconn(conn)

    def run(self, work: Callable[[Connection], T], what: str) -> T:
        """``work(conn)`` in one transaction of a pooled connection: committed when it returns,
        rolled back when it raises.

        :raises PostgresStoreError: the database failed; the message says ``what`` was being
            done, in one line.
        """
        from psycopg_pool import PoolTimeout

        try:
            with self.pool().connection(timeout=self.timeout) as conn:
                with conn.transaction():
                    return work(conn)
        except HermesError:
            raise
        except PoolTimeout as exc:
            raise self._timed_out() from exc
        except psycopg.Error as exc:
            raise PostgresStoreError(
                f"the PostgreSQL session store at {self.where} could not {what}: "
                f"{one_line(exc, self.url)}"
            ) from exc

    def _timed_out(self, *, holding: bool = False) -> PostgresStoreError:
        """Why no connection came in time: the server's own answer when it refuses one now,
        else that every connection stayed busy (``holding``: every one holding a lock)."""
        try:
            self.connect().close()
        except PostgresStoreError as exc:
            return exc
        if holding:
            return PostgresStoreError(
                f"no connection to hold a session's lock in the PostgreSQL session store at "
                f"{self.where} was free within {self.timeout:g}s (this process holds at most "
                f"{self.max_held} sessions at once)"
            )
        return PostgresStoreError(
            f"no connection to the PostgreSQL session store at {self.where} was free within "
            f"{self.timeout:g}s (this process keeps at most {self.max_connections})"
        )

    def close(self) -> None:
        """Close the pool (in the process that made it); later calls fail."""
        with self._lock:
            pools = [p for p in (self._pool, self._lock_pool) if p is not None]
            self._pool = self._lock_pool = None
            self._closed = True
        for pool in pools:
            if self._pid == os.getpid():
                pool.close(timeout=5.0)
            else:
                _INHERITED.append(pool)


HOLDING_SETTINGS = {
    "idle_session_timeout": "0",
    "tcp_keepalives_idle": "30",
    "tcp_keepalives_interval": "10",
    "tcp_keepalives_count": "6",
}
"""The settings of a connection that holds a lock: it stays idle while the turn runs, which the
server must not end it for (``idle_session_timeout``); and the server asks a silent client
after 30 s and gives up on it (ending its connection, releasing its locks) after about a minute
and a half, where the system's default would keep a vanished machine's locks for hours (the
keepalive settings do nothing on a Unix socket, where a dead process is seen at once)."""


def _for_holding(conn: Connection) -> None:
    """Set up a new connection of the lock pool (autocommit, :data:`HOLDING_SETTINGS` that the
    server knows)."""
    conn.autocommit = True
    conn.execute(
        "SELECT set_config(s.name, v.value, false) FROM pg_settings s "
        "JOIN (SELECT * FROM jsonb_each_text(%s::jsonb)) AS v(name, value) ON v.name = s.name",
        (json.dumps(HOLDING_SETTINGS),),
    )


def _after_fork_in_child() -> None:
    """In a forked child: every store of the parent makes connections of its own."""
    for connections in list(_LIVE):
        connections.forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
