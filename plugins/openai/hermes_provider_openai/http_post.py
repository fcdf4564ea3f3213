"""Requests to an OpenAI-compatible endpoint over connections kept alive between calls.

A model call is one POST of a JSON body answered with JSON, or with server-sent events of
JSON when it streams. The SDK's path for it builds the request through several layers and its
connection pool looks at every pooled connection on each request: a busy gateway spent most of
its CPU per request there. This module sends the same request (the SDK's headers: its user
agent, the API key as a bearer token, the organisation and project of ``OPENAI_ORG_ID`` and
``OPENAI_PROJECT_ID``) over a connection taken from a stack of idle ones, reads the answer as
the SDK does, and turns failures into the same hermes errors as the SDK's. It serves only
what it can serve exactly as the SDK does: an ``http`` or ``https`` base URL that no proxy
variable of the environment applies to (see :func:`direct_endpoint`); the SDK serves the rest.
"""

from __future__ import annotations

import http.client
import json
import os
import platform
import select
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from urllib.request import (  # type: ignore[attr-defined]  # not in the stubs
    getproxies_environment,
    proxy_bypass_environment,
)

from hermes_hookspecs import ProviderError

from .errors import body_message, classify, from_body, one_line

SDK_SWITCH = "HERMES_OPENAI_HTTP"
"""The environment variable that, set to ``sdk``, sends every request through the SDK's own
HTTP client (for an endpoint this module does not serve as the SDK would)."""

MAX_IDLE = 64
"""Idle connections kept per endpoint; more are closed when they come back."""

_DROPPED = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
"""What a kept-alive connection the server has closed meanwhile raises (sent again once)."""
_NETWORK = (OSError, http.client.HTTPException)
"""What a failure to talk to the server raises (a hermes ``connection`` or ``timeout`` error)."""


@dataclass(frozen=True)
class Endpoint:
    """Where the POSTs go: scheme, host, port and the base URL's path (no trailing ``/``)."""

    https: bool
    host: str
    port: int
    path: str


def direct_endpoint(base_url: str) -> Endpoint | None:
    """The endpoint of ``base_url`` when this module can serve it as the SDK would: ``http`` or
    ``https``, no user name or query in the URL, and no ``*_PROXY`` variable that applies to
    its host (the SDK's client would go through that proxy); else, or when
    :data:`SDK_SWITCH` is ``sdk``, ``None``."""
    if os.environ.get(SDK_SWITCH, "").strip().lower() == "sdk":
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


def sdk_headers(api_key: str) -> dict[str, str]:
    """The headers the ``openai`` SDK's client sends with a JSON POST (without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        sdk_version = version("openai")
    except PackageNotFoundError:  # pragma: no cover - the SDK is this plugin's dependency
        sdk_version = "unknown"
    machine = platform.machine().lower()
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": f"OpenAI/Python {sdk_version}",
        "X-Stainless-Lang": "python",
        "X-Stainless-Package-Version": sdk_version,
        "X-Stainless-OS": {"linux": "Linux", "darwin": "MacOS", "win32": "Windows"}.get(
            sys.platform, f"Other:{sys.platform}"
        ),
        "X-Stainless-Arch": {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(
            machine, machine
        ),
        "X-Stainless-Runtime": platform.python_implementation(),
        "X-Stainless-Runtime-Version": platform.python_version(),
        "X-Stainless-Async": "false",
        "Authorization": f"Bearer {api_key}",
    }
    for variable, header in (
        ("OPENAI_ORG_ID", "OpenAI-Organization"),
        ("OPENAI_PROJECT_ID", "OpenAI-Project"),
    ):
        value = os.environ.get(variable)
        if value:
            headers[header] = value
    return headers


class JsonPoster:
    """POSTs JSON bodies to one endpoint with one key and timeout, reusing idle connections
    (thread-safe; a forked child starts with none of its parent's).

    :param endpoint: where to (:func:`direct_endpoint`).
    :param api_key: sent as the bearer token.
    :param timeout: seconds a connect or a read may take; ``None`` waits as long as it takes.
    :param tls: the verifying TLS context (for ``https``), made when first needed.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        api_key: str,
        timeout: float | None,
        tls: Callable[[], Any] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.headers = sdk_headers(api_key)
        self._tls = tls
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def post(
        self,
        path: str,
        body: dict[str, Any],
        on_connection: Callable[[http.client.HTTPConnection], None] | None = None,
    ) -> Any:
        """POST ``body`` to the base URL's path plus ``path``; the answer's JSON value.
        ``on_connection`` gets the connection before anything is sent (to shut it from another
        thread). Raises :class:`ProviderError` (the SDK's errors, as :func:`errors.from_sdk`
        turns them)."""
        connection, answer = self._exchange(path, body, on_connection)
        data = self._read(connection, answer)
        return _decoded(answer, data)

    def stream(
        self,
        path: str,
        body: dict[str, Any],
        on_connection: Callable[[http.client.HTTPConnection], None] | None = None,
    ) -> EventStream:
        """POST ``body`` (which asks for a stream) and return its events once the server has
        answered with a success; as :meth:`post` otherwise."""
        connection, answer = self._exchange(path, body, on_connection)
        if not 200 <= answer.status < 300:
            _decoded(answer, self._read(connection, answer))  # raises the error
        return EventStream(connection, answer)

    def _exchange(
        self,
        path: str,
        body: dict[str, Any],
        on_connection: Callable[[http.client.HTTPConnection], None] | None,
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
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
            except _DROPPED as exc:
                connection.close()
                if reused and attempt == 1:
                    continue  # the server had closed the idle connection: a fresh one
                raise _connection_error(exc) from exc
            except _NETWORK as exc:
                connection.close()
                raise _network_error(exc) from exc
            except BaseException:
                connection.close()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _read(
        self, connection: http.client.HTTPConnection, answer: http.client.HTTPResponse
    ) -> bytes:
        """The whole body of ``answer``; its connection is then kept for the next call, if
        it may be."""
        try:
            data = answer.read()
        except _NETWORK as exc:
            connection.close()
            raise _network_error(exc) from exc
        except BaseException:
            connection.close()
            raise
        if answer.will_close:
            connection.close()
        else:
            self._put_back(connection)
        return data

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
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

    def _put_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE and self._pid == os.getpid():
                self._idle.append(connection)
                return
        connection.close()


def _still_open(connection: http.client.HTTPConnection) -> bool:
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


def shut(connection: http.client.HTTPConnection) -> None:
    """Shut a connection's socket from another thread, so that a call blocked on it returns."""
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class EventStream:
    """The JSON value of each event of a streamed answer (server-sent events), as the SDK's
    stream yields them: up to ``[DONE]``; an event carrying an ``error`` raises its hermes
    error. Iterated once; :meth:`close` ends it (its connection is not reused)."""

    def __init__(
        self, connection: http.client.HTTPConnection, answer: http.client.HTTPResponse
    ) -> None:
        self.connection = connection
        self.answer = answer

    def __iter__(self) -> Iterator[Any]:
        """Each event's JSON value."""
        try:
            for data in _event_data(self.answer):
                if data.startswith("[DONE]"):
                    return
                value = json.loads(data)
                if isinstance(value, dict) and value.get("error"):
                    error = value["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    if not message or not isinstance(message, str):
                        message = "An error occurred during streaming"
                    raise from_body(error, fallback=message)
                yield value
        except _NETWORK as exc:
            raise _network_error(exc) from exc
        finally:
            self.close()

    def close(self) -> None:
        """Stop reading: the connection is closed (what is left of the stream is not read)."""
        self.connection.close()


def _event_data(answer: http.client.HTTPResponse) -> Iterator[str]:
    """The ``data`` of each server-sent event of ``answer`` (its lines joined)."""
    data: list[str] = []
    for raw in answer:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def _network_error(exc: OSError | http.client.HTTPException) -> ProviderError:
    """The hermes error of a failure to talk to the server."""
    if isinstance(exc, TimeoutError):
        return ProviderError(
            "the request timed out (no answer within the configured timeout)", kind="timeout"
        )
    return _connection_error(exc)


def _connection_error(exc: BaseException) -> ProviderError:
    detail = one_line(exc) if str(exc) else type(exc).__name__
    return ProviderError(f"connection error: {detail}", kind="connection")


def _decoded(answer: http.client.HTTPResponse, data: bytes) -> Any:
    """The JSON value of a successful answer; raises the hermes error of a failed one."""
    status = answer.status
    try:
        value: Any = json.loads(data)
    except ValueError:
        text = data.decode("utf-8", "replace")
        if 200 <= status < 300:
            raise ProviderError(
                f"the server's answer is not JSON: {text[:200]!r}", kind="server"
            ) from None
        value = text
    if 200 <= status < 300:
        return value
    message, code = body_message(value, f"Error code: {status}")
    raise classify(status, message, headers=answer.headers, code=code)
