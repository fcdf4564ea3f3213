"""The model client: requests over the process's own connections, or through the SDK.

A request with an API key goes through the process's
:class:`~hermes_runtime.http_json.JsonPoster` for its endpoint (see :mod:`.http_messages`),
which never imports the SDK; one behind a SOCKS proxy, with credentials other than an API key,
or with ``HERMES_ANTHROPIC_HTTP=sdk`` goes through one ``anthropic.Anthropic`` built lazily and
reused.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from hermes_hookspecs import ModelRequest, ModelResponse, ProviderError, ProviderSettings
from hermes_runtime.http_json import JsonPoster
from hermes_runtime.kept_clients import KeptClients
from hermes_runtime.threads import Workers

from .convert import StreamAssembler, build_params, parse_message
from .errors import cancelled, map_exception, stream_failure
from .http_messages import (
    MESSAGES_PATH,
    NO_KEY,
    direct_endpoint,
    direct_key,
    new_poster,
    stream_events,
)

CANCEL_POLL_SECONDS = 0.05

WATCHERS = Workers("hermes-anthropic-cancel")
"""The reused threads that watch a streamed call's ``request.cancel``."""

# body fields with a keyword argument in every supported SDK version (anthropic>=0.40); the
# rest (temperature, thinking, ...) travel in ``extra_body``, which every version merges into
# the JSON body, so a field an SDK version dropped from its signature still reaches the API
_SDK_KWARGS = frozenset({"model", "max_tokens", "messages", "system", "tools"})

_TRANSPORT_MODULES = ("httpx", "httpcore", "h11", "h2", "anyio", "ssl", "socket")

_SHARED_POSTERS: KeptClients[JsonPoster] = KeptClients()


def shared_poster(settings: ProviderSettings) -> JsonPoster | None:
    """The process's :class:`JsonPoster` for the endpoint, key and timeout of ``settings``, or
    ``None`` where requests go through the SDK (:func:`.http_messages.direct_endpoint`,
    :func:`.http_messages.direct_key`). Like the SDK's client, it reads the environment once,
    when it is made."""
    base_url = str(settings.base_url or "")

    def make() -> JsonPoster | None:
        from hermes_runtime.tls import process_context

        api_key = direct_key(settings.api_key)
        endpoint = direct_endpoint(sdk_base_url(base_url)) if base_url and api_key else None
        if endpoint is None or api_key is None:
            return None
        return new_poster(endpoint, api_key, settings.timeout, process_context)

    return _SHARED_POSTERS.get((base_url, settings.api_key, settings.timeout), make)


def _has_credentials(client: Any) -> bool:
    return any(getattr(client, name, None) for name in ("api_key", "auth_token", "credentials"))


def _is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from the HTTP stack under the SDK (a reset or a cut response)."""
    module = type(exc).__module__ or ""
    return isinstance(exc, OSError) or module.split(".")[0].startswith(_TRANSPORT_MODULES)


def sdk_base_url(url: str) -> str:
    """The SDK's ``base_url`` for the endpoint ``url``: the SDK adds ``/v1/messages`` itself, so
    a URL written with the ``/v1`` of OpenAI-compatible endpoints (``http://host/v1``) is used
    without it, and the request goes to ``http://host/v1/messages``, not ``/v1/v1/messages``."""
    stripped = url.rstrip("/")
    return stripped[: -len("/v1")] if stripped.lower().endswith("/v1") else url


def sdk_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` that send ``body``."""
    kwargs = {k: v for k, v in body.items() if k in _SDK_KWARGS}
    extra = {k: v for k, v in body.items() if k not in _SDK_KWARGS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


class AnthropicClient:
    """A :class:`~hermes_hookspecs.ModelClient` for Anthropic's Messages API.

    Requests go over the process's own connections where :func:`shared_poster` serves the
    endpoint; elsewhere the SDK is imported and its client built on the first request (or
    :meth:`prepare`), with the SDK's own retries off, since hermes retries.
    """

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._sdk: Any = None
        self._client: Any = None
        self._lock = threading.Lock()
        self._no_native_search = False
        """The server refused native tool search once: send the portable request."""

    def prepare(self) -> None:
        """Make what the first request needs now (e.g. in the background at start-up): the
        endpoint's poster or, for requests through the SDK, the SDK imported and its client
        built."""
        if shared_poster(self.settings) is None:
            self._get_client()

    def _get_client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import anthropic

                    from hermes_runtime.tls import process_context

                    s = self.settings
                    kwargs: dict[str, Any] = {"timeout": s.timeout, "max_retries": 0}
                    # the SDK's own client and defaults, with the process's verifying context
                    kwargs["http_client"] = anthropic.DefaultHttpxClient(
                        timeout=s.timeout, verify=process_context()
                    )
                    if s.base_url:
                        kwargs["base_url"] = sdk_base_url(s.base_url)
                    if s.api_key:
                        kwargs["api_key"] = s.api_key
                    try:
                        client = anthropic.Anthropic(**kwargs)
                        if not s.api_key and not _has_credentials(client):
                            # hermes allows no key only for a server on this machine; the SDK
                            # refuses to send a request without one, so give it a stand-in
                            client = anthropic.Anthropic(**kwargs, api_key=NO_KEY)
                    except anthropic.AnthropicError as exc:
                        raise map_exception(exc, anthropic) from exc
                    self._sdk = anthropic
                    self._client = client
        return self._client

    def close(self) -> None:
        """Release the SDK client's HTTP connections (the process's poster keeps its own, for
        the next client of the same endpoint)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request``; stream deltas to ``request.emit`` when ``request.stream`` is set.
        A server that refuses native tool search gets the portable request, from then on."""
        from .tool_search import refuses_native

        native = bool(request.deferred_tools) and not self._no_native_search
        try:
            return self._send(request, native=native)
        except ProviderError as exc:
            if not native or not refuses_native(exc):
                raise
            self._no_native_search = True
            return self._send(request, native=False)

    def _send(self, request: ModelRequest, *, native: bool) -> ModelResponse:
        body = build_params(request, self.settings.config, native=native)
        poster = shared_poster(self.settings)
        if poster is None:
            return self._complete_with_sdk(sdk_arguments(body), request)
        if request.cancel.is_set():
            raise cancelled()
        try:
            if request.stream:
                stream = poster.stream(MESSAGES_PATH, {**body, "stream": True})
            else:
                return parse_message(poster.post(MESSAGES_PATH, body))
        except ProviderError as exc:
            if request.cancel.is_set():
                raise cancelled() from exc
            raise
        return _consume(
            request,
            stream_events(stream),
            abort=stream.abort,
            close=stream.close,
            map_error=_provider_errors,
        )

    def _complete_with_sdk(self, params: dict[str, Any], request: ModelRequest) -> ModelResponse:
        client = self._get_client()
        sdk = self._sdk
        if request.cancel.is_set():
            raise cancelled()
        try:
            if request.stream:
                stream = client.messages.create(**params, stream=True)
            else:
                return parse_message(client.messages.create(**params))
        except sdk.AnthropicError as exc:
            if request.cancel.is_set():
                raise cancelled() from exc
            raise map_exception(exc, sdk) from exc

        def map_error(exc: Exception) -> BaseException | None:
            if isinstance(exc, sdk.AnthropicError):
                return map_exception(exc, sdk)
            return stream_failure(exc) if _is_transport_error(exc) else None

        return _consume(
            request,
            iter(stream),
            abort=lambda: _abort(stream),
            close=stream.close,
            map_error=map_error,
        )


def _provider_errors(exc: Exception) -> BaseException | None:
    """Errors of the process's own connections are hermes errors already."""
    return exc if isinstance(exc, ProviderError) else None


def _consume(
    request: ModelRequest,
    events: Iterator[Any],
    *,
    abort: Callable[[], None],
    close: Callable[[], None],
    map_error: Callable[[Exception], BaseException | None],
) -> ModelResponse:
    """Feed a stream's ``events`` to an assembler until the message is complete; ``abort``
    (from a watching thread) wakes a blocked read when ``request.cancel`` is set; ``map_error``
    turns what reading raises into a hermes error (``None``: raised as is)."""
    done = threading.Event()
    WATCHERS.submit(_close_on_cancel, request.cancel, done, abort)
    assembler = StreamAssembler(request)
    try:
        while True:
            if request.cancel.is_set():
                raise cancelled()
            try:
                event = next(events)
            except StopIteration:
                break
            except Exception as exc:
                if request.cancel.is_set():
                    raise cancelled() from exc
                mapped = map_error(exc)
                if mapped is None or mapped is exc:
                    raise
                raise mapped from exc
            assembler.feed(event)
            if assembler.complete:
                break
        if request.cancel.is_set():
            raise cancelled()
        if not assembler.complete:
            raise ProviderError(
                "the response stream ended before the message was complete",
                kind="connection",
                provider="anthropic",
            )
        return assembler.response()
    finally:
        done.set()
        try:
            close()
        except Exception:  # closing a broken connection may fail again: nothing to do
            pass


def _close_on_cancel(
    cancel: threading.Event, done: threading.Event, abort: Callable[[], None]
) -> None:
    """Call ``abort`` when ``cancel`` is set (looked at every ``CANCEL_POLL_SECONDS``), so a
    reader blocked on a silent server wakes up; return as soon as ``done`` is set."""
    while not done.wait(CANCEL_POLL_SECONDS):
        if cancel.is_set():
            abort()
            return


def _abort(stream: Any) -> None:
    """Shut the connection under ``stream`` down (a blocked read then returns in its thread);
    without access to the socket, close the response."""
    response = getattr(stream, "response", None)
    extensions = getattr(response, "extensions", None) or {}
    network = extensions.get("network_stream")
    sock = None
    if network is not None and hasattr(network, "get_extra_info"):
        try:
            sock = network.get_extra_info("socket")
        except Exception:
            sock = None
    try:
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)
        else:
            stream.close()
    except Exception:  # already closed: nothing to abort
        pass
