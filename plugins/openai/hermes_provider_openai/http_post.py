"""What is OpenAI's in requests sent over the process's own kept-alive connections.

A model call goes through :class:`hermes_runtime.http_json.JsonPoster` (a ``urllib3``
connection pool per endpoint, through the proxy the environment names, a request dropped on a
reused connection sent once more, server-sent events read as the SDK reads them) rather than
the SDK's client, whose import a one-shot command would pay and whose connection pool costs a
busy gateway several times the CPU per request. This module holds what the ``openai`` SDK
would do for it: its headers (its user agent, the API key as a bearer token, the organisation
and project of ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID``), which endpoints are served that
way (:func:`direct_endpoint`: the SDK serves the rest), and failures turned into the same
hermes errors as the SDK's.
"""

from __future__ import annotations

import http.client
import json
import os
import platform
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from hermes_hookspecs import ProviderError
from hermes_runtime import http_json
from hermes_runtime.http_json import Connection, Endpoint, shut

from .errors import body_message, classify, from_body, one_line

__all__ = [
    "SDK_SWITCH",
    "EventStream",
    "OpenAIFailures",
    "direct_endpoint",
    "new_poster",
    "sdk_headers",
    "shut",
]

SDK_SWITCH = "HERMES_OPENAI_HTTP"
"""The environment variable that, set to ``sdk``, sends every request through the SDK's own
HTTP client (for an endpoint this module does not serve as the SDK would)."""


def direct_endpoint(base_url: str) -> Endpoint | None:
    """The endpoint of ``base_url`` when it is served over the process's own connections, with
    or without an HTTP proxy (:func:`hermes_runtime.http_json.direct_endpoint`, with
    :data:`SDK_SWITCH`); else ``None``: the SDK serves it."""
    return http_json.direct_endpoint(base_url, SDK_SWITCH)


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


class OpenAIFailures:
    """The hermes errors of failed POSTs, as :func:`errors.from_sdk` gives them for the SDK's."""

    def status(self, status: int, body: Any, headers: Mapping[str, str]) -> BaseException:
        """The error of an answer with a failing ``status``."""
        message, code = body_message(body, f"Error code: {status}")
        return classify(status, message, headers=headers, code=code)

    def network(self, exc: OSError | http.client.HTTPException, streaming: bool) -> BaseException:
        """The error of a failure to talk to the server (the same while streaming)."""
        if isinstance(exc, TimeoutError):
            return ProviderError(
                "the request timed out (no answer within the configured timeout)", kind="timeout"
            )
        detail = one_line(exc) if str(exc) else type(exc).__name__
        return ProviderError(f"connection error: {detail}", kind="connection")

    def not_json(self, text: str) -> BaseException:
        """The error of a successful answer that is not JSON."""
        return ProviderError(f"the server's answer is not JSON: {text[:200]!r}", kind="server")


class Poster:
    """A :class:`~hermes_runtime.http_json.JsonPoster` whose streams yield each event's JSON
    value as the SDK's stream does (see :class:`EventStream`)."""

    def __init__(self, poster: http_json.JsonPoster) -> None:
        self.poster = poster

    def post(
        self, path: str, body: Any, on_connection: Callable[[Connection], None] | None = None
    ) -> Any:
        """POST ``body`` to ``path``: the answer's JSON value."""
        return self.poster.post(path, body, on_connection)

    def stream(
        self, path: str, body: Any, on_connection: Callable[[Connection], None] | None = None
    ) -> EventStream:
        """POST ``body`` (which asks for a stream): its events' JSON values."""
        return EventStream(self.poster.stream(path, body, on_connection))

    def close(self) -> None:
        """Close the idle connections."""
        self.poster.close()


def new_poster(
    endpoint: Endpoint, api_key: str, timeout: float | None, tls: Callable[[], Any] | None
) -> Poster:
    """A poster to ``endpoint`` with the SDK's headers for ``api_key``."""
    return Poster(
        http_json.JsonPoster(endpoint, sdk_headers(api_key), timeout, OpenAIFailures(), tls)
    )


class EventStream:
    """The JSON value of each event of a streamed answer, as the SDK's stream yields them: up
    to ``[DONE]``; an event carrying an ``error`` raises its hermes error. Iterated once;
    :meth:`close` ends it."""

    def __init__(self, events: http_json.EventStream) -> None:
        self.events = events

    @property
    def connection(self) -> Connection | None:
        """The stream's connection."""
        return self.events.connection

    def __iter__(self) -> Iterator[Any]:
        """Each event's JSON value."""
        try:
            for event in self.events:
                data = event.data
                if data is None:
                    continue
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
        finally:
            self.close()

    def close(self) -> None:
        """Stop reading (the connection is closed)."""
        self.events.close()
