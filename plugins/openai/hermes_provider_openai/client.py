"""The hermes model client on top of the ``openai`` SDK.

The SDK is imported, and its client built, on the first request (or :meth:`OpenAIClient.prepare`),
never when hermes starts. Each HTTP call runs on a worker thread while the calling thread hands
streamed chunks to the converters and watches ``request.cancel``: an interrupt raises the
contract's :class:`~hermes_hookspecs.Cancelled` at once, even when the server has stopped
sending, and the connection is shut down.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections.abc import Callable
from typing import Any

from hermes_hookspecs import Cancelled, ModelRequest, ModelResponse, ProviderError
from hermes_runtime.kept_clients import KeptClients
from hermes_runtime.threads import Workers

from . import chat, responses
from .errors import from_sdk
from .http_post import Poster, direct_endpoint, new_poster, shut

CHAT = "chat_completions"
RESPONSES = "codex_responses"
POLL_SECONDS = 0.05
"""How often a waiting call looks at ``request.cancel``."""

_ITEM, _RESULT, _END, _ERROR = range(4)

_SHARED_SDKS: KeptClients[Any] = KeptClients()


def shared_sdk(base_url: str, api_key: str, timeout: float | None) -> Any:
    """The process's ``openai.OpenAI`` client for an endpoint, key and timeout.

    Building one costs tens of milliseconds (its TLS set-up) and each keeps its own connection
    pool, while agents built for a single turn (the gateway's, scheduled jobs, subagents) each
    make a model client: sharing the SDK client makes their first request as cheap as a later
    one. The SDK client is thread-safe.
    """

    def make() -> Any:
        import openai

        from hermes_runtime.tls import process_context

        return openai.OpenAI(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=0,
            # the SDK's own client and defaults, with the process's verifying context
            http_client=openai.DefaultHttpxClient(timeout=timeout, verify=process_context()),
        )

    return _SHARED_SDKS.get((base_url, api_key, timeout), make)


_SHARED_POSTERS: KeptClients[Poster] = KeptClients()


def shared_poster(base_url: str, api_key: str, timeout: float | None) -> Poster | None:
    """The process's :class:`~.http_post.Poster` for an endpoint, key and timeout, or ``None`` where
    whole answers go through the SDK (:func:`http_post.direct_endpoint`). Like the SDK's
    client, it reads the proxy variables once, when it is made."""

    def make() -> Poster | None:
        from hermes_runtime.tls import process_context

        endpoint = direct_endpoint(base_url)
        return None if endpoint is None else new_poster(endpoint, api_key, timeout, process_context)

    return _SHARED_POSTERS.get((base_url, api_key, timeout), make)


CALL_THREADS = Workers("hermes-openai-call")
"""The threads every client of this process runs its SDK calls on."""


def cancelled(provider: str) -> Cancelled:
    """What an interrupted call raises (``request.cancel`` was set): nothing of it is kept."""
    return Cancelled(f"{provider}: the model call was cancelled")


class _Call:
    """One SDK call on a worker thread (of :data:`CALL_THREADS`), with its results handed over
    through a queue."""

    def __init__(
        self, opener: Callable[[_Call], Any], streaming: bool, cancel: threading.Event
    ) -> None:
        self.opener = opener
        self.streaming = streaming
        self.cancel = cancel
        self.stopped = threading.Event()
        self.stream: Any = None
        self.connection: Any = None
        """The connection of a whole answer's POST (see :mod:`.http_post`), once it has one."""
        self.queue: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()

    def _work(self) -> None:
        try:
            result = self.opener(self)
            if not self.streaming:
                self.queue.put((_RESULT, result))
                return
            self.stream = result
            if self.stopped.is_set():
                return
            for item in result:
                self.queue.put((_ITEM, item))
                if self.stopped.is_set() or self.cancel.is_set():
                    break
            self.queue.put((_END, None))
        except BaseException as exc:  # handed to the caller, which turns it into a hermes error
            self.queue.put((_ERROR, exc))
        finally:
            if self.stream is not None and (self.stopped.is_set() or self.cancel.is_set()):
                _close_quietly(self.stream)

    def attach(self, connection: Any) -> None:
        """The POST's connection: shut by :meth:`stop` (or now, when already stopped)."""
        self.connection = connection
        if self.stopped.is_set():
            shut(connection)

    def stop(self) -> None:
        """Make the worker give up: shut the socket so a blocked read returns at once."""
        self.stopped.set()
        if self.connection is not None:
            shut(self.connection)
        stream = self.stream
        if stream is None:
            return  # the worker closes the stream itself when its call returns
        try:
            network = stream.response.extensions.get("network_stream")
            sock = network.get_extra_info("socket") if network is not None else None
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except Exception:  # best effort: the worker closes the stream when it wakes
            pass


def _close_quietly(stream: Any) -> None:
    try:
        stream.close()
    except Exception:
        pass


class OpenAIClient:
    """A :class:`~hermes_hookspecs.ModelClient` for chat completions and the Responses API.

    :param settings: the resolved :class:`~hermes_hookspecs.ProviderSettings`; its ``api_mode``
        chooses the wire format (``chat_completions`` or ``codex_responses``).
    """

    watches_cancel = True
    """Every call runs on a worker thread and returns at once when ``request.cancel`` is set
    (the contract's ``ModelClient``): the host need not watch the flag for it."""

    def __init__(self, settings: Any) -> None:
        if settings.api_mode not in (CHAT, RESPONSES):
            raise ProviderError(
                f"provider {settings.provider!r} speaks {CHAT} and {RESPONSES}, not"
                f" {settings.api_mode!r}",
                kind="bad_request",
                provider=settings.provider,
            )
        if not settings.base_url:
            raise ProviderError(
                f"provider {settings.provider!r} needs a base URL: pass --base-url or set"
                " model.base_url in config.yaml",
                kind="bad_request",
                provider=settings.provider,
            )
        self.settings = settings
        self._sdk: Any = None
        self._lock = threading.Lock()
        self._no_native_search = False
        """The server refused native tool search once: send the portable request."""

    @property
    def api_mode(self) -> str:
        """The wire format this client speaks."""
        return str(self.settings.api_mode)

    @property
    def sdk(self) -> Any:
        """The ``openai.OpenAI`` client, imported and built on first use (thread-safe), shared
        with every other client of this process for the same endpoint, key and timeout."""
        if self._sdk is None:
            with self._lock:
                if self._sdk is None:
                    self._sdk = shared_sdk(
                        str(self.settings.base_url),
                        self.settings.api_key or "not-needed",
                        self.settings.timeout,
                    )
        return self._sdk

    def prepare(self) -> None:
        """Make what the first request needs now (e.g. on a background thread while the user
        types), so that it does not wait for it: the endpoint's :class:`~.http_post.Poster`, or
        for an endpoint behind a proxy the SDK, imported and its client built."""
        settings = self.settings
        poster = shared_poster(
            str(settings.base_url), settings.api_key or "not-needed", settings.timeout
        )
        if poster is None:
            _ = self.sdk

    def close(self) -> None:
        """Let go of the SDK client (its connection pool stays with the process, for the next
        client of the same endpoint)."""
        self._sdk = None

    # --- requests ---------------------------------------------------------------------------

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the converted response (see ``ModelClient``)."""
        try:
            if self.api_mode == RESPONSES:
                return self._responses(request)
            return self._chat(request)
        except ProviderError as exc:
            if exc.provider is None:
                exc.provider = self.settings.provider
            raise

    def _chat(self, request: ModelRequest) -> ModelResponse:
        body = chat.build_body(request, self.settings)
        opener = self._opener("/chat/completions", body)
        if request.stream:
            accumulator = chat.ChatStream(request)
            self._run(request, opener, accumulator.feed)
            return accumulator.result()
        return chat.parse_completion(self._run(request, opener))

    def _responses(self, request: ModelRequest) -> ModelResponse:
        """A Responses call; a server that refuses native tool search gets the portable
        request, from then on."""
        from .tool_search import refuses_native

        native = bool(request.deferred_tools) and not self._no_native_search
        try:
            return self._responses_once(request, native)
        except ProviderError as exc:
            if not native or not refuses_native(exc):
                raise
            self._no_native_search = True
            return self._responses_once(request, False)

    def _responses_once(self, request: ModelRequest, native: bool) -> ModelResponse:
        # The Codex backend only answers streamed requests: stream on the wire, and deliver
        # deltas only when the caller asked for them.
        stream = request.stream or _is_codex_backend(self.settings.base_url)
        body = responses.build_body(request, self.settings, stream=stream, native=native)
        opener = self._opener("/responses", body)
        if stream:
            quiet = request if request.stream else _without_sink(request)
            accumulator = responses.ResponsesStream(quiet)
            self._run(request, opener, accumulator.feed)
            return accumulator.result()
        return responses.parse_response(self._run(request, opener))

    def _opener(self, path: str, body: dict[str, Any]) -> Callable[[_Call], Any]:
        """A POST of ``body`` to ``path``, handing back the answer as plain JSON (a dict, or
        one dict per streamed event): the converters read plain JSON, and the body is plain
        JSON already. An endpoint reached directly is asked through the process's
        :class:`~.http_post.Poster`; one behind a proxy through the SDK client, which sends it,
        authenticates and turns failures into its errors (imported by the first such call,
        on the worker thread)."""
        settings = self.settings
        poster = shared_poster(
            str(settings.base_url), settings.api_key or "not-needed", settings.timeout
        )
        if poster is None:
            return lambda call: post_json(self.sdk, path, body)
        if body.get("stream"):
            return lambda call: poster.stream(path, body, call.attach)
        return lambda call: poster.post(path, body, call.attach)

    def _run(
        self,
        request: ModelRequest,
        opener: Callable[[_Call], Any],
        on_item: Callable[[Any], None] | None = None,
    ) -> Any:
        """Run ``opener`` on a worker thread; with ``on_item``, hand each streamed item to it
        here. Returns the result (non-streamed) and raises hermes errors only."""
        cancel = request.cancel
        if cancel.is_set():
            raise cancelled(self.settings.provider)
        call = _Call(opener, on_item is not None, cancel)
        CALL_THREADS.submit(call._work)
        finished = False
        try:
            while True:
                try:
                    kind, value = call.queue.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    if cancel.is_set():
                        raise cancelled(self.settings.provider) from None
                    continue
                if cancel.is_set():
                    raise cancelled(self.settings.provider)
                if kind == _ITEM:
                    assert on_item is not None
                    on_item(value)
                elif kind == _RESULT:
                    finished = True
                    return value
                elif kind == _END:
                    finished = True
                    return None
                else:
                    finished = True
                    raise from_sdk(value, provider=self.settings.provider) from value
        finally:
            if not finished:
                call.stop()


_OPTIONS: dict[str, Any] = {"security": {"bearer_auth": True}}
"""The request options of the SDK's own methods for these endpoints (the API key's bearer
header)."""


def post_json(sdk: Any, path: str, body: dict[str, Any]) -> Any:
    """POST ``body`` to ``path`` with the ``openai.OpenAI`` client ``sdk``: the answer's JSON
    value, or, when ``body`` asks for a stream, an SDK stream yielding each event's JSON
    value."""
    if body.get("stream"):
        import openai

        return sdk.post(
            path,
            body=body,
            cast_to=object,
            options=_OPTIONS,
            stream=True,
            stream_cls=openai.Stream[object],
        )
    answer = sdk.post(path, body=body, cast_to=object, options=_OPTIONS)
    if isinstance(answer, str | bytes):  # served without a JSON content type
        try:
            answer = json.loads(answer)
        except ValueError:
            raise ProviderError(
                f"the server's answer is not JSON: {str(answer)[:200]!r}", kind="server"
            ) from None
    return answer


def _is_codex_backend(base_url: str | None) -> bool:
    return "chatgpt.com/backend-api/codex" in (base_url or "").lower()


def _without_sink(request: ModelRequest) -> ModelRequest:
    import dataclasses

    return dataclasses.replace(request, sink=None)
