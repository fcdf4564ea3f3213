"""The model client: one ``anthropic.Anthropic`` built lazily and reused for every request."""

from __future__ import annotations

import socket
import threading
from typing import Any

from hermes_hookspecs import ModelRequest, ModelResponse, ProviderError, ProviderSettings

from .convert import StreamAssembler, build_params, parse_message
from .errors import cancelled, map_exception, stream_failure

CANCEL_POLL_SECONDS = 0.05
NO_KEY = "no-key-needed"
"""Sent as the key to a local server when none is configured (the SDK insists on one)."""

# body fields with a keyword argument in every supported SDK version (anthropic>=0.40); the
# rest (temperature, thinking, ...) travel in ``extra_body``, which every version merges into
# the JSON body, so a field an SDK version dropped from its signature still reaches the API
_SDK_KWARGS = frozenset({"model", "max_tokens", "messages", "system", "tools"})

_TRANSPORT_MODULES = ("httpx", "httpcore", "h11", "h2", "anyio", "ssl", "socket")


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

    The SDK is imported and its client built on the first request (or :meth:`prepare`); the
    SDK's own retries are off, since hermes retries.
    """

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._sdk: Any = None
        self._client: Any = None
        self._lock = threading.Lock()

    def prepare(self) -> None:
        """Import the SDK and build its client now (e.g. in the background at start-up)."""
        self._get_client()

    def _get_client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import anthropic

                    from hermes_runtime.tls import default_context_maker, shared_context

                    s = self.settings
                    kwargs: dict[str, Any] = {"timeout": s.timeout, "max_retries": 0}
                    # the SDK's own client and defaults, with the process's verifying context
                    kwargs["http_client"] = anthropic.DefaultHttpxClient(
                        timeout=s.timeout, verify=shared_context(default_context_maker())
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
        """Release the HTTP connections."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request``; stream deltas to ``request.emit`` when ``request.stream`` is set."""
        params = sdk_arguments(build_params(request, self.settings.config))
        client = self._get_client()
        sdk = self._sdk
        if request.cancel.is_set():
            raise cancelled()
        if request.stream:
            return self._stream(client, sdk, params, request)
        try:
            message = client.messages.create(**params)
        except sdk.AnthropicError as exc:
            if request.cancel.is_set():
                raise cancelled() from exc
            raise map_exception(exc, sdk) from exc
        return parse_message(message)

    def _stream(
        self, client: Any, sdk: Any, params: dict[str, Any], request: ModelRequest
    ) -> ModelResponse:
        try:
            stream = client.messages.create(**params, stream=True)
        except sdk.AnthropicError as exc:
            if request.cancel.is_set():
                raise cancelled() from exc
            raise map_exception(exc, sdk) from exc
        done = threading.Event()
        watcher = threading.Thread(
            target=_close_on_cancel,
            args=(request.cancel, done, stream),
            name="hermes-anthropic-cancel",
            daemon=True,
        )
        watcher.start()
        assembler = StreamAssembler(request)
        try:
            events = iter(stream)
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
                    if isinstance(exc, sdk.AnthropicError):
                        raise map_exception(exc, sdk) from exc
                    if _is_transport_error(exc):
                        raise stream_failure(exc) from exc
                    raise
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
                stream.close()
            except Exception:  # closing a broken connection may fail again: nothing to do
                pass


def _close_on_cancel(cancel: threading.Event, done: threading.Event, stream: Any) -> None:
    """Abort ``stream`` as soon as ``cancel`` is set, so a reader blocked on a silent server
    wakes up at once; return when ``done`` is set."""
    while not done.is_set():
        if cancel.wait(CANCEL_POLL_SECONDS):
            if not done.is_set():
                _abort(stream)
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
