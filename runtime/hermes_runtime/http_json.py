"""JSON POSTs to a model endpoint over connections kept alive between calls.

A model call is one POST of a JSON body answered with JSON, or with server-sent events when it
streams. An SDK's path for it builds the request through several layers, and its connection
pool looks at every pooled connection on each request. :class:`JsonPoster` sends the request
over a connection taken from a stack of idle ones, sends it once more on a fresh connection
when the server had closed a reused one, reads a streamed answer's events, and lets another
thread shut the connection of a call in progress (:func:`shut`). What belongs to a provider is
passed in: the headers, and :class:`Failures`, which turns a failed answer or a network error
into that provider's error. :func:`direct_endpoint` says which base URLs it serves as an
SDK's client would (no proxy applies, nothing unusual in the URL).
"""

from __future__ import annotations

import http.client
import json
import os
import select
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from email.message import Message
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit
from urllib.request import (  # type: ignore[attr-defined]  # not in the stubs
    getproxies_environment,
    proxy_bypass_environment,
)

MAX_IDLE = 64
"""Idle connections kept per endpoint; more are closed when they come back."""
READ_SIZE = 65536
"""The most a streamed answer's read takes at once."""

DROPPED = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
"""What a kept-alive connection the server has closed meanwhile raises (sent again once)."""
NETWORK = (OSError, http.client.HTTPException)
"""What a failure to talk to the server raises (handed to :meth:`Failures.network`)."""

Connection = http.client.HTTPConnection
"""A connection to the endpoint (``HTTPSConnection`` for ``https``)."""


class Failures(Protocol):
    """A provider's errors for what can go wrong with a POST."""

    def status(self, status: int, body: Any, headers: Message) -> BaseException:
        """The error of an answer whose status is not 2xx: ``body`` is its JSON value, or its
        text when it is not JSON."""

    def network(self, exc: OSError | http.client.HTTPException, streaming: bool) -> BaseException:
        """The error of a failure to talk to the server: while sending the request or reading
        a whole answer, or (``streaming``) while reading a streamed answer's events."""

    def not_json(self, text: str) -> BaseException:
        """The error of a successful answer whose body is not JSON."""


@dataclass(frozen=True)
class Endpoint:
    """Where the POSTs go: scheme, host, port and the base URL's path (no trailing ``/``)."""

    https: bool
    host: str
    port: int
    path: str


def direct_endpoint(base_url: str, switch: str | None = None) -> Endpoint | None:
    """The endpoint of ``base_url`` when a :class:`JsonPoster` can serve it as an SDK's client
    would: ``http`` or ``https``, no user name, query or fragment in the URL, and no
    ``*_PROXY`` variable that applies to its host (the SDK's client would go through that
    proxy); else ``None``. Also ``None`` when the environment variable ``switch`` is ``sdk``
    (the user asks for the SDK's own HTTP client)."""
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
    if (proxies.get(parts.scheme) or proxies.get("all")) and not (
        proxy_bypass_environment(parts.hostname, proxies)
    ):
        return None
    https = parts.scheme == "https"
    return Endpoint(https, parts.hostname, port or (443 if https else 80), parts.path.rstrip("/"))


class JsonPoster:
    """POSTs JSON bodies to one endpoint with fixed headers and timeout, reusing idle
    connections (thread-safe; a forked child starts with none of its parent's).

    :param endpoint: where to (:func:`direct_endpoint`).
    :param headers: sent with every request (the provider's own, its key among them).
    :param timeout: seconds a connect or a read may take; ``None`` waits as long as it takes.
    :param failures: the provider's errors.
    :param tls: the verifying TLS context (for ``https``), made when first needed.
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
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def post(
        self,
        path: str,
        body: Any,
        on_connection: Callable[[Connection], None] | None = None,
    ) -> Any:
        """POST ``body`` to the base URL's path plus ``path``; the answer's JSON value.
        ``on_connection`` gets the connection before anything is sent (to :func:`shut` it from
        another thread). Raises the errors of :attr:`failures`."""
        connection, answer = self._exchange(path, body, on_connection)
        data = self._read(connection, answer)
        return self._decoded(answer, data)

    def stream(
        self,
        path: str,
        body: Any,
        on_connection: Callable[[Connection], None] | None = None,
    ) -> EventStream:
        """POST ``body`` (which asks for a stream) and return its events once the server has
        answered with a success; as :meth:`post` otherwise."""
        connection, answer = self._exchange(path, body, on_connection)
        if not 200 <= answer.status < 300:
            self._decoded(answer, self._read(connection, answer))  # raises the error
        return EventStream(connection, answer, self.failures)

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _exchange(
        self,
        path: str,
        body: Any,
        on_connection: Callable[[Connection], None] | None,
    ) -> tuple[Connection, http.client.HTTPResponse]:
        """Send the request and read the answer's status and headers."""
        # ASCII with escapes: a few percent longer than UTF-8 where the text is not English,
        # but encoding a long history costs half the time (no wide string to convert).
        payload = json.dumps(body, separators=(",", ":")).encode()
        target = self.endpoint.path + path
        for attempt in (1, 2):
            connection, reused = self._connection()
            if on_connection is not None:
                on_connection(connection)
            try:
                connection.request("POST", target, payload, self.headers)
                return connection, connection.getresponse()
            except DROPPED as exc:
                connection.close()
                if reused and attempt == 1:
                    continue  # the server had closed the idle connection: a fresh one
                raise self.failures.network(exc, False) from exc
            except NETWORK as exc:
                connection.close()
                raise self.failures.network(exc, False) from exc
            except BaseException:
                connection.close()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _read(self, connection: Connection, answer: http.client.HTTPResponse) -> bytes:
        """The whole body of ``answer``; its connection is then kept for the next call, if
        it may be."""
        try:
            data = answer.read()
        except NETWORK as exc:
            connection.close()
            raise self.failures.network(exc, False) from exc
        except BaseException:
            connection.close()
            raise
        if answer.will_close:
            connection.close()
        else:
            self._put_back(connection)
        return data

    def _decoded(self, answer: http.client.HTTPResponse, data: bytes) -> Any:
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

    def _connection(self) -> tuple[Connection, bool]:
        """An idle connection still open (and whether it was), or a new one."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child: those are its parent's sockets
                self._idle, self._pid = [], os.getpid()
            while self._idle:
                connection = self._idle.pop()
                if _still_open(connection):
                    return connection, True
                connection.close()
        endpoint = self.endpoint
        if endpoint.https:
            context = self._tls() if self._tls is not None else None
            return http.client.HTTPSConnection(
                endpoint.host, endpoint.port, timeout=self.timeout, context=context
            ), False
        return http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=self.timeout), False

    def _put_back(self, connection: Connection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE and self._pid == os.getpid():
                self._idle.append(connection)
                return
        connection.close()


def _still_open(connection: Connection) -> bool:
    """Whether an idle connection can carry a request: a socket with nothing to read (an idle
    connection that is readable was closed by the server, or holds stray bytes)."""
    sock = connection.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


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
    reading raises the :class:`Failures`' error (``streaming``); :meth:`close` ends it (its
    connection is not reused)."""

    def __init__(
        self, connection: Connection, answer: http.client.HTTPResponse, failures: Failures
    ) -> None:
        self.connection = connection
        self.answer = answer
        self.failures = failures

    def __iter__(self) -> Iterator[ServerSentEvent]:
        """Each event of the answer."""
        try:
            yield from _events(self.answer)
            missing = self.answer.length  # bytes a Content-Length promised and never came
            if missing:
                raise http.client.IncompleteRead(b"", missing)
        except NETWORK as exc:
            raise self.failures.network(exc, True) from exc
        finally:
            self.close()

    def close(self) -> None:
        """Stop reading: the connection is closed (what is left of the stream is not read)."""
        self.connection.close()


def _events(answer: http.client.HTTPResponse) -> Iterator[ServerSentEvent]:
    """The events of ``answer``: a blank line ends one that has a name or data; comments and
    other fields are skipped. The body is read in blocks as they arrive and cut into lines here
    (a ``readline`` of a chunked body costs several calls a line)."""
    event: str | None = None
    data: list[str] = []
    pending = b""
    while True:
        block = answer.read1(READ_SIZE)
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
