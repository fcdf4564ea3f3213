"""Connections to the PostgreSQL server: the URL shown without its password, a pool shared by
the threads of one process (and made again in a forked child), and errors as one line.

Every call of the store borrows a connection from the pool for one transaction. The pool is
made when the store opens, never at import or registration, and a process that forks gets its
own: the parent's connections are left alone (closing them from the child would end the
parent's sessions on the server).
"""

from __future__ import annotations

import os
import re
import threading
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
    :param max_connections: the most connections this process keeps open to the server.
    """

    def __init__(self, url: str, *, timeout: float = 30.0, max_connections: int = 8) -> None:
        self.url = url
        self.where = describe(url)
        self.timeout = timeout
        self.max_connections = max(1, int(max_connections))
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
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
        if self._pool is not None:
            _INHERITED.append(self._pool)
            self._pool = None
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

    def _timed_out(self) -> PostgresStoreError:
        """Why no connection came in time: the server's own answer when it refuses one now,
        else that every connection stayed busy."""
        try:
            self.connect().close()
        except PostgresStoreError as exc:
            return exc
        return PostgresStoreError(
            f"no connection to the PostgreSQL session store at {self.where} was free within "
            f"{self.timeout:g}s (this process keeps at most {self.max_connections})"
        )

    def close(self) -> None:
        """Close the pool (in the process that made it); later calls fail."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._closed = True
        if pool is not None:
            if self._pid == os.getpid():
                pool.close(timeout=5.0)
            else:
                _INHERITED.append(pool)


def _after_fork_in_child() -> None:
    """In a forked child: every store of the parent makes connections of its own."""
    for connections in list(_LIVE):
        connections.forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
