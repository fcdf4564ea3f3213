"""JSON POSTs to a model endpoint over connections kept alive between calls.

A model call is one POST of a JSON body answered with JSON, or with server-sent events when it
streams. :class:`JsonPoster` sends it on the endpoint's ``urllib3`` connection pool
(:mod:`.http_pool`, made by the first request: importing ``hermes_runtime`` loads no HTTP
library), through the proxy the environment names for it, verifying TLS with the process's
context (:mod:`.tls`). A request the server dropped on a reused connection is sent once more,
a streamed answer's events are read as they arrive (:class:`EventStream`), and another thread
may shut the connection of a call in progress (:func:`shut`). What belongs to a provider is
passed in: the headers, and :class:`Failures`, which turns a failed answer or a network error
into that provider's error. :func:`direct_endpoint` says which base URLs it serves.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit
from urllib.request import (  # type: ignore[attr-defined]  # not in the stubs
    getproxies_environment,
    proxy_bypass_environment,
)

READ_SIZE = 65536
"""The most a streamed answer's read takes at once."""

Connection = http.client.HTTPConnection
"""A connection to the endpoint (the pool's connections are the standard library's)."""

PROXY_SCHEMES = ("http", "https")
"""The proxies a :class:`JsonPoster` goes through (others, such as SOCKS, are the SDK's)."""


class Failures(Protocol):
    """A provider's errors for what can go wrong with a POST."""

    def status(self, status: int, body: Any, headers: Mapping[str, str]) -> BaseException:
        """The error of an answer whose status is not 2xx: ``body`` is its JSON value, or its
        text when it is not JSON; ``headers`` are looked up without regard to case."""

    def network(self, exc: OSError | http.client.HTTPException, streaming: bool) -> BaseException:
        """The error of a failure to talk to the server: while sending the request or reading
        a whole answer, or (``streaming``) while reading a streamed answer's events. A timeout
        is a :class:`TimeoutError`."""

    def not_json(self, text: str) -> BaseException:
        """The error of a successful answer whose body is not JSON."""


@dataclass(frozen=True)
class Endpoint:
    """Where the POSTs go: scheme, host, port, the base URL's path (no trailing ``/``), and
    the URL of the proxy they go through (``None``: straight to the host)."""

    https: bool
    host: str
    port: int
    path: str
    proxy: str | None = None


def direct_endpoint(base_url: str, switch: str | None = None) -> Endpoint | None:
    """The endpoint of ``base_url`` when a :class:`JsonPoster` can serve it as an SDK's client
    would: ``http`` or ``https``, no user name, query or fragment in the URL, and an HTTP or
    HTTPS proxy if a ``*_PROXY`` variable applies to its host (``NO_PROXY`` honoured); else
    ``None``. Also ``None`` when the environment variable ``switch`` is ``sdk`` (the user asks
    for the SDK's own HTTP client)."""
    if switch and os.environ.get(switch, "").strip().lower() == "sdk":
        return None
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if parts.username or parts.password or parts.query or parts.fragment:
        return None
    proxies = getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all") or None
    if proxy and proxy_bypass_environment(parts.hostname, proxies):
        proxy = None
    if proxy:
        proxy = proxy if "://" in proxy else f"http://{proxy}"
        try:
            scheme, proxy_host = urlsplit(proxy).scheme.lower(), urlsplit(proxy).hostname
        except ValueError:
            return None
        if scheme not in PROXY_SCHEMES or not proxy_host:
            return None
    https = parts.scheme == "https"
    path = parts.path.rstrip("/")
    return Endpoint(https, parts.hostname, port or (443 if https else 80), path, proxy)


class JsonPoster:
    """POSTs JSON bodies to one endpoint with fixed headers and timeout, reusing the idle
    connections of the endpoint's pool, which every poster of the endpoint shares (thread-safe;
    a forked child starts with none of its parent's).

    :param endpoint: where to (:func:`direct_endpoint`).
    :param headers: sent with every request (the provider's own, its key among them).
    :param timeout: seconds a connect or a read may take; ``None`` waits as long as it takes.
    :param failures: the provider's errors.
    :param tls: makes the verifying TLS context (for ``https`` or an ``https`` proxy), called
        by the poster's first request.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        headers: Mapping[str, str],
        timeout: float | None,
        failures: Failures,
        tls: Callable[[], Any] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.headers = dict(headers)
        self.failures = failures
        self._tls = tls
        self._pool: Any = None
        self._send: Callable[..., Any] | None = None
        self._target_prefix = endpoint.path
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def post(
        self,
        path: str,
        body: Any,
        on_connection: Callable[[Connection], None] | None = None,
    ) -> Any:
        """POST ``body`` to the base URL's path plus ``path``; the answer's JSON value.
        ``on_connection`` gets each connection the request uses before anything is sent on it
        (to :func:`shut` it from another thread). Raises the errors of :attr:`failures`."""
        answer = self._exchange(path, body, on_connection)
        return self._decoded(answer, self._read(answer))

    def stream(
        self,
        path: str,
        body: Any,
        on_connection: Callable[[Connection], None] | None = None,
    ) -> EventStream:
        """POST ``body`` (which asks for a stream) and return its events once the server has
        answered with a success; as :meth:`post` otherwise."""
        answer = self._exchange(path, body, on_connection)
        if not 200 <= answer.status < 300:
            self._decoded(answer, self._read(answer))  # raises the error
        return EventStream(answer, self.failures)

    def close(self) -> None:
        """Close the idle connections of the endpoint's pool (every poster of the endpoint then
        makes a new one)."""
        with self._lock:
            pool, self._pool, self._send = self._pool, None, None
        if pool is not None:
            _forget_pool(pool)
            pool.close()

    def _sender(self) -> tuple[Any, Callable[..., Any]]:
        """The endpoint's pool and its ``urlopen`` (:func:`_shared_pool`)."""
        pool, send = self._pool, self._send
        if send is not None and pool.pool is not None and self._pid == os.getpid():
            return pool, send
        with self._lock:
            self._pool, self._send, absolute = _shared_pool(self.endpoint, self.timeout, self._tls)
            self._pid = os.getpid()
            if absolute:
                e = self.endpoint
                port = "" if e.port == 80 else f":{e.port}"
                self._target_prefix = f"http://{_url_host(e.host)}{port}{e.path}"
            return self._pool, self._send

    def _exchange(
        self,
        path: str,
        body: Any,
        on_connection: Callable[[Connection], None] | None,
    ) -> Any:
        """Send the request and read the answer's status and headers."""
        # ASCII with escapes: a few percent longer than UTF-8 where the text is not English,
        # but encoding a long history costs half the time (no wide string to convert).
        payload = json.dumps(body, separators=(",", ":")).encode()
        pool, send = self._sender()
        call = pool.call
        call.on_connection = on_connection
        try:
            return send(
                "POST",
                self._target_prefix + path,
                body=payload,
                headers=self.headers,
                redirect=False,
                assert_same_host=False,
                preload_content=False,
            )
        except Exception as exc:
            if _is_network_error(exc):
                raise self.failures.network(_standard_error(exc), False) from exc
            raise
        finally:
            call.on_connection = None

    def _read(self, answer: Any) -> bytes:
        """The whole body of ``answer``; its connection then goes back to the pool, if it
        may be kept."""
        try:
            data: bytes = answer.read()
        except Exception as exc:
            if _is_network_error(exc):
                raise self.failures.network(_standard_error(exc), False) from exc
            raise
        finally:
            answer.release_conn()
        return data

    def _decoded(self, answer: Any, data: bytes) -> Any:
        """The JSON value of a successful answer; raises the error of a failed one."""
        status = answer.status
        try:
            value: Any = json.loads(data)
        except ValueError:
            text = data.decode("utf-8", "replace")
            if 200 <= status < 300:
                raise self.failures.not_json(text) from None
            value = text
        if 200 <= status < 300:
            return value
        raise self.failures.status(status, value, answer.headers)


_POOLS: dict[tuple[Endpoint, float | None, Any], tuple[Any, Callable[..., Any], bool]] = {}
_POOLS_LOCK = threading.Lock()
_POOLS_PID = [os.getpid()]
MAX_POOLS = 32
"""Pools kept at most (the oldest is dropped past it; whoever still uses it keeps it)."""


def _shared_pool(
    endpoint: Endpoint, timeout: float | None, tls: Callable[[], Any] | None
) -> tuple[Any, Callable[..., Any], bool]:
    """The process's pool for an endpoint, timeout and TLS context (made by ``tls`` when the
    endpoint or its proxy speaks TLS), shared by its posters whatever their headers (another key
    of a credential pool reuses the same connections): ``(pool, urlopen, whether urlopen takes
    the whole URL)``. Made by the first request of this process (a forked child makes its own:
    the parent's sockets are not its to use)."""
    from .http_pool import make_pool, needs_tls

    e = endpoint
    context = tls() if tls is not None and needs_tls(e.https, e.proxy) else None
    key = (endpoint, timeout, context)
    with _POOLS_LOCK:
        if _POOLS_PID[0] != os.getpid():
            _POOLS.clear()
            _POOLS_PID[0] = os.getpid()
        found = _POOLS.get(key)
        if found is None or found[0].pool is None:  # none yet, or closed
            found = make_pool(e.https, e.host, e.port, timeout, context, e.proxy)
            _POOLS.pop(key, None)
            if len(_POOLS) >= MAX_POOLS:
                _POOLS.pop(next(iter(_POOLS)))
            _POOLS[key] = found
        return found


def close_pools() -> None:
    """Close the idle connections of every pool of this process and forget the pools (the
    next request to each endpoint makes a new one): a resident process does it before it forks,
    so that no child inherits sockets it never uses."""
    with _POOLS_LOCK:
        pools = [found[0] for found in _POOLS.values()]
        _POOLS.clear()
    for pool in pools:
        pool.close()


def _forget_pool(pool: Any) -> None:
    with _POOLS_LOCK:
        for key in [k for k, found in _POOLS.items() if found[0] is pool]:
            del _POOLS[key]


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _is_network_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure to talk to the server (the library's or the socket's)."""
    if isinstance(exc, OSError | http.client.HTTPException):
        return True
    module = type(exc).__module__ or ""
    return module.split(".")[0] == "urllib3"


def _standard_error(exc: BaseException) -> OSError | http.client.HTTPException:
    from .http_pool import standard_error

    return standard_error(exc)


def shut(connection: Connection) -> None:
    """Shut a connection's socket from another thread, so that a call blocked on it returns."""
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class ServerSentEvent(NamedTuple):
    """One event of a stream: its ``event`` name (``None`` without one) and its ``data`` lines
    joined by newlines (``None`` without any)."""

    event: str | None
    data: str | None


class EventStream:
    """The events of a streamed answer, in order. Iterated once; a network error while
    reading raises the :class:`Failures`' error (``streaming``); :meth:`close` ends it (a
    connection whose answer was not read to its end is not reused)."""

    def __init__(self, answer: Any, failures: Failures) -> None:
        self.answer = answer
        """The answer (``status``, ``headers``) whose body is being read."""
        self.connection: Connection | None = answer.connection
        """The answer's connection."""
        self.failures = failures

    def __iter__(self) -> Iterator[ServerSentEvent]:
        """Each event of the answer."""
        try:
            yield from _events(self.answer.read1)
        except Exception as exc:
            if _is_network_error(exc):
                raise self.failures.network(_standard_error(exc), True) from exc
            raise
        finally:
            self.close()

    def abort(self) -> None:
        """Shut the connection from another thread, so that a blocked read returns (nothing
        when the answer was read to its end: its connection may serve another call by now)."""
        try:
            self.answer.shutdown()
        except (ValueError, OSError):
            pass

    def close(self) -> None:
        """Stop reading: a connection whose answer is not read to its end is closed."""
        self.answer.close()
        self.answer.release_conn()


def _events(read1: Callable[[int], bytes]) -> Iterator[ServerSentEvent]:
    """The events of a body read by ``read1``: a blank line ends one that has a name or data;
    comments and other fields are skipped. The body is read in blocks as they arrive and cut
    into lines here (a line may be split across reads)."""
    event: str | None = None
    data: list[str] = []
    pending = b""
    while True:
        block = read1(READ_SIZE)
        if block:
            lines = (pending + block).split(b"\n")
            pending = lines.pop()
        else:
            lines, pending = ([pending], b"") if pending else ([], b"")
        for raw in lines:
            line = raw.decode("utf-8").rstrip("\r")
            if not line:
                if data or event is not None:
                    yield ServerSentEvent(event, "\n".join(data) if data else None)
                    event, data = None, []
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
        if not block:
            break
    if data or event is not None:
        yield ServerSentEvent(event, "\n".join(data) if data else None)
