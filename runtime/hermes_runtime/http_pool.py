"""The ``urllib3`` connection pool of one model endpoint, as :mod:`.http_json` uses it.

Imported by the first request (``urllib3`` is not loaded before a process talks to a model).
Beyond the library's own pool (idle connections checked before reuse, proxies and their
``CONNECT`` tunnels, TLS with the context given), it adds what a model call needs: a POST whose
kept-alive connection the server had closed meanwhile is sent once more on a new one (the
library retries no POST by itself, and cannot tell a reused connection from a new one), the
connection a call uses is handed to a watcher that may shut it from another thread, and the
library's errors are turned back into the standard library's (what a provider's mapping reads).
"""

from __future__ import annotations

import http.client
import ssl
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

import urllib3
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ProxyError,
    SSLError,
)
from urllib3.exceptions import (
    TimeoutError as Urllib3Timeout,
)
from urllib3.util.retry import Retry

MAX_IDLE = 64
"""Idle connections kept per endpoint; more are closed when they come back."""

DROPPED = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
"""What a kept-alive connection the server has closed meanwhile raises (sent again once)."""

Connection = http.client.HTTPConnection
"""A connection of the pool (``urllib3``'s connections are the standard library's)."""


class _Call(threading.local):
    """What the current thread's request on a pool needs to know."""

    reused: bool = False
    on_connection: Callable[[Connection], None] | None = None


class _Kept:
    """A pool that records, per thread, whether the connection a request got was kept alive
    from an earlier one, and hands it to the request's watcher."""

    call: _Call

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)  # type: ignore[misc]  # the pool class mixed in
        call = self.call
        call.reused = getattr(conn, "sock", None) is not None  # a dropped one is closed already
        if call.on_connection is not None:
            call.on_connection(conn)
        return conn


class KeptHTTPPool(_Kept, HTTPConnectionPool):
    """A plain HTTP pool (see :class:`_Kept`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.call = _Call()
        super().__init__(*args, **kwargs)


class KeptHTTPSPool(_Kept, HTTPSConnectionPool):
    """A TLS pool (see :class:`_Kept`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.call = _Call()
        super().__init__(*args, **kwargs)


class DroppedOnce(Retry):
    """Sends a request once more when it failed on a reused connection the server had closed
    (:data:`DROPPED`, before any answer); nothing else is retried, and the error raised is the
    library's own, not a ``MaxRetryError``."""

    def increment(  # type: ignore[override]  # the library's keywords, private ones included
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Retry:
        """The retry state after ``error``, or ``error`` raised when it is not retried."""
        call = getattr(_pool, "call", None)
        if (
            error is not None
            and self.total
            and call is not None
            and call.reused
            and isinstance(error, ProtocolError)
            and isinstance(_cause(error), DROPPED)
        ):
            return super().increment(method, url, response, error, _pool, _stacktrace)
        if error is not None:
            raise error
        raise AssertionError("an answer is never retried")  # pragma: no cover - see is_retry

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        """Never: an answer, whatever its status, goes to the provider (hermes retries)."""
        return False


RETRY = DroppedOnce(
    total=1,
    connect=0,
    read=1,
    redirect=0,
    status=0,
    other=0,
    allowed_methods=None,
    respect_retry_after_header=False,
)


def _cause(error: BaseException) -> BaseException | None:
    """The error under one of the library's (the library keeps it among its arguments)."""
    for arg in getattr(error, "args", ()):
        if isinstance(arg, BaseException):
            return arg
    return error.__cause__


def standard_error(exc: BaseException) -> OSError | http.client.HTTPException:
    """The standard library's error for a failure the library raised: a timeout is a
    :class:`TimeoutError`, a dropped or cut connection the socket's or ``http.client``'s
    error under it, a refused connection or failed handshake the ``OSError`` that caused it."""
    if isinstance(exc, OSError | http.client.HTTPException) and not isinstance(exc, HTTPError):
        return exc
    if isinstance(exc, ProxyError):
        cause = _cause(exc)
        detail = f": {standard_error(cause)}" if cause is not None else ""
        return ConnectionError(f"the proxy failed{detail}")
    if isinstance(exc, NewConnectionError):
        cause = exc.__cause__
        return cause if isinstance(cause, OSError) else ConnectionError(str(exc))
    if isinstance(exc, Urllib3Timeout):
        return TimeoutError(str(exc))
    if isinstance(exc, ProtocolError | SSLError):
        cause = _cause(exc)
        if cause is not None and cause is not exc:
            return standard_error(cause)
    if isinstance(exc, http.client.HTTPException):  # the library's IncompleteRead
        return exc
    return ConnectionError(str(exc))


def needs_tls(https: bool, proxy: str | None) -> bool:
    """Whether the pool of an endpoint needs a TLS context: for the endpoint or its proxy."""
    return https or (proxy is not None and proxy.lower().startswith("https:"))


def make_pool(
    https: bool,
    host: str,
    port: int,
    timeout: float | None,
    context: ssl.SSLContext | None,
    proxy: str | None,
) -> tuple[HTTPConnectionPool, Callable[..., urllib3.BaseHTTPResponse], bool]:
    """The pool of an endpoint, the function that sends a request on it (``urlopen``), and
    whether that function takes the whole URL (a plain HTTP request forwarded by a proxy) rather
    than the path. ``context`` verifies the endpoint and an ``https`` proxy (:func:`needs_tls`);
    ``proxy`` is the proxy's URL, user and password included."""
    limits: dict[str, Any] = {
        "maxsize": MAX_IDLE,
        "block": False,
        "timeout": urllib3.Timeout(connect=timeout, read=timeout),
        "retries": RETRY,
    }
    if https:
        limits["ssl_context"] = context
    if proxy is None:
        direct: HTTPConnectionPool = (KeptHTTPSPool if https else KeptHTTPPool)(
            host, port, **limits
        )
        return direct, direct.urlopen, False
    parts = urlsplit(proxy)
    proxy_headers = None
    if parts.username or parts.password:
        auth = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        proxy_headers = urllib3.make_headers(proxy_basic_auth=auth)
        proxy = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    manager = urllib3.ProxyManager(
        proxy, num_pools=2, proxy_headers=proxy_headers, proxy_ssl_context=context, **limits
    )
    manager.pool_classes_by_scheme = {"http": KeptHTTPPool, "https": KeptHTTPSPool}
    pool = manager.connection_from_host(host, port, "https" if https else "http")
    if https:  # tunnelled with CONNECT: requests on the pool go to the endpoint
        return pool, pool.urlopen, False
    return pool, manager.urlopen, True
