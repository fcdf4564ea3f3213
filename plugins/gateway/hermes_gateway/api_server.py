"""An OpenAI-compatible HTTP API in front of the agent: ``/v1/chat/completions``,
``/v1/responses`` and ``/v1/models``, whole or streamed (SSE), behind a bearer key.

The agent's tools run here, in the gateway; the client sees the answer. A conversation continues
in the session named by the ``X-Hermes-Session-Id`` header (every answer carries it), or, on the
Responses API, the one that produced ``previous_response_id``; only its own person may continue
it.

Who asks: the body's ``user`` names the sender (a platform id of ``gateway.users``, else a
guest), unless the request bears a person's own key (``gateway.users.<id>.api_key_env``): it is
then that person, whatever ``user`` says, and the server's shared key can no longer speak for
them.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from hermes_hookspecs import AgentOutcome, HermesError

from . import openai_format as fmt
from .core import GatewayClosed, SessionRefused, new_session_id
from .listening import listen
from .platforms import Gateway, InboundMessage, PlatformAdapter

if TYPE_CHECKING:
    from aiohttp import web

KEY_ENV = "HERMES_API_SERVER_KEY"
SESSION_HEADER = "X-Hermes-Session-Id"
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
DEFAULT_PORT = 8642
DEFAULT_MODEL = "hermes-agent"
NO_RETRY = {"x-should-retry": "false"}
"""Sent with failed turns: the SDKs retry 5xx answers, and a retry would run the turn again."""


class _Begun(NamedTuple):
    """A turn under way: its future, its delta queue, the response headers, the first delta
    (``None`` when it ended before any)."""

    turn: asyncio.Future[AgentOutcome]
    queue: asyncio.Queue[str | None]
    headers: dict[str, str]
    first: str | None


class ApiServerAdapter(PlatformAdapter):
    """The ``api_server`` adapter. Settings: ``host`` (127.0.0.1), ``port`` (8642; 0 picks a
    free one), ``key`` or the variable named by ``key_env`` (``HERMES_API_SERVER_KEY``),
    ``model_name`` (what ``/v1/models`` lists, ``hermes-agent``)."""

    def __init__(self, platform: str, settings: Mapping[str, Any]) -> None:
        self.platform = platform
        self.host = str(settings.get("host", "127.0.0.1"))
        self.port = int(settings.get("port", DEFAULT_PORT))
        self.key_env = str(settings.get("key_env") or KEY_ENV)
        self._key = str(settings.get("key") or os.environ.get(self.key_env) or "")
        self.model = str(settings.get("model_name") or DEFAULT_MODEL)
        self._runner: web.AppRunner | None = None
        self._gateway: Gateway | None = None
        self._routes: Any = None
        self._created = int(time.time())
        self._person_keys: list[tuple[bytes, str]] = []
        self._keyed_ids: frozenset[str] = frozenset()

    @property
    def url(self) -> str:
        """Where the API is served (``http://HOST:PORT/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    # --- life cycle ---------------------------------------------------------------------------

    async def connect(self, gateway: Gateway) -> None:
        """Listen on ``host:port``; refuse to start without a key."""
        if not self._key:
            raise HermesError(
                f"the API server ({self.platform}) needs a key: set {self.key_env} or "
                f"gateway.platforms.{self.platform}.key"
            )
        from aiohttp import web

        self._gateway = gateway
        self._routes = getattr(gateway, "routes", None)
        self._person_keys, self._keyed_ids = self._people_keys(getattr(gateway, "people", None))

        @web.middleware
        async def auth(request: web.Request, handler: Any) -> Any:
            return await self._auth(request, handler)

        app = web.Application(middlewares=[auth], client_max_size=16 * 1024 * 1024)
        app.router.add_get("/health", self._health)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_post("/v1/responses", self._responses)
        self._runner, self.port = await listen(app, self.host, self.port, "the API server")

    def _people_keys(self, people: Any) -> tuple[list[tuple[bytes, str]], frozenset[str]]:
        """The digest of each person's own key with the person, and the ``user`` values of
        this platform that name a person who has a key (the shared key may not speak for
        them); :class:`HermesError` for a key that is not set or not a key of its own."""
        if people is None:
            return [], frozenset()
        keys: list[tuple[bytes, str]] = []
        seen: dict[bytes, str] = {hashlib.sha256(self._key.encode()).digest(): "the server"}
        for person, env in sorted(people.keyed().items()):
            value = os.environ.get(env, "").strip()
            if not value:
                raise HermesError(
                    f"gateway.users.{person}.api_key_env names {env}, which is not set: set it "
                    f"to {person}'s API key"
                )
            digest = hashlib.sha256(value.encode()).digest()
            if digest in seen:
                raise HermesError(
                    f"gateway.users.{person}.api_key_env: {env} holds the same key as "
                    f"{seen[digest]}'s; give {person} a key of their own"
                )
            seen[digest] = person
            keys.append((digest, person))
        keyed = {person for _, person in keys}
        ids = frozenset(
            user
            for (platform, user), person in people.by_platform_id.items()
            if platform == self.platform and person in keyed
        )
        return keys, ids

    async def disconnect(self) -> None:
        """Stop listening; requests under way are finished first."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def send(self, chat_id: str, text: str, *, reply_to: str | None = None) -> str:
        """The API cannot push: its clients ask and read the answer."""
        raise HermesError(
            f"the API server ({self.platform}) cannot send to a chat: its clients ask and "
            "read the answer"
        )

    # --- requests --------------------------------------------------------------------------

    def _error(
        self,
        status: int,
        message: str,
        kind: str,
        code: str | None = None,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        from aiohttp import web

        return web.json_response(
            fmt.error_body(message, kind, code, param), status=status, headers=headers
        )

    async def _auth(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[Any]]
    ) -> Any:
        if request.path.startswith("/v1/"):
            header = request.headers.get("Authorization", "")
            scheme, _, given = header.partition(" ")
            shared = hmac.compare_digest(given.strip().encode(), self._key.encode())
            person = None
            if self._person_keys:
                digest = hashlib.sha256(given.strip().encode()).digest()
                for known, who in self._person_keys:  # every one compared: constant time
                    if hmac.compare_digest(digest, known):
                        person = who
            request["hermes_person"] = person
            if scheme.lower() != "bearer" or not (shared or person is not None):
                return self._error(
                    401,
                    "missing or wrong API key (send Authorization: Bearer KEY)",
                    "invalid_request_error",
                    "invalid_api_key",
                )
        return await handler(request)

    async def _health(self, request: web.Request) -> web.Response:
        from aiohttp import web

        return web.json_response({"status": "ok", "platform": self.platform})

    async def _models(self, request: web.Request) -> web.Response:
        from aiohttp import web

        return web.json_response(fmt.models_body(self.model, self._created))

    async def _body(self, request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            raise fmt.BadRequest("the body is not valid JSON") from None
        if not isinstance(body, dict):
            raise fmt.BadRequest("the body must be a JSON object")
        return body

    def _message(
        self, request: web.Request, body: Mapping[str, Any], prompt: str
    ) -> InboundMessage:
        person = request.get("hermes_person")
        user = person or body.get("user") or body.get("safety_identifier") or "api"
        return InboundMessage(
            platform=self.platform,
            chat_id="api",
            user_id=str(user),
            text=prompt,
            message_id=request.headers.get("X-Request-Id", ""),
            person=person,
            trace_context={
                name: request.headers[name]
                for name in ("traceparent", "tracestate")
                if request.headers.get(name)
            },
        )

    def _session_header(self, request: web.Request) -> str | None:
        value = request.headers.get(SESSION_HEADER)
        if value is None:
            return None
        if not SESSION_ID_RE.match(value):
            raise fmt.BadRequest(
                f"{SESSION_HEADER} must be 1-128 letters, digits, '_', '.', ':' or '-'"
            )
        return value

    def _refusal(self, exc: Exception) -> web.Response:
        if isinstance(exc, GatewayClosed):
            return self._error(503, str(exc), "server_error", "shutting_down")
        if isinstance(exc, SessionRefused):
            return self._error(403, str(exc), "permission_error", "session_not_yours")
        if isinstance(exc, PermissionError):
            return self._error(403, str(exc), "permission_error", "user_not_allowed")
        if isinstance(exc, fmt.BadRequest):
            return self._error(400, str(exc), "invalid_request_error", None, exc.param)
        raise exc

    async def _run(
        self,
        message: InboundMessage,
        session_id: str,
        instructions: str | None,
        stream: bool,
    ) -> tuple[asyncio.Future[AgentOutcome], asyncio.Queue[str | None]]:
        """Start the turn; its text deltas (when streaming) and then ``None`` arrive in the
        queue."""
        assert self._gateway is not None
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        turn = asyncio.ensure_future(
            self._gateway.converse(
                message,
                session_id=session_id,
                instructions=instructions,
                on_delta=queue.put_nowait if stream else None,
            )
        )
        turn.add_done_callback(lambda _: queue.put_nowait(None))
        return turn, queue

    async def _begin(
        self,
        request: web.Request,
        body: Mapping[str, Any],
        prompt: str,
        session_id: str,
        instructions: str | None,
        stream: bool,
    ) -> _Begun | web.StreamResponse:
        """Start the turn and wait for its first text delta (or its end); an HTTP error when
        it failed before anything streamed, while a plain error answer still fits."""
        message = self._message(request, body, prompt)
        if message.person is None and message.user_id in self._keyed_ids:
            return self._error(
                403,
                f"user {message.user_id!r} speaks with their own API key, not the server's",
                "permission_error",
                "user_not_allowed",
            )
        turn, queue = await self._run(message, session_id, instructions, stream)
        headers = {SESSION_HEADER: session_id}
        first = await _first_or_gone(request, queue)
        if first is _GONE:  # the client left before any text: the turn stops, nothing is sent
            turn.cancel()
            from aiohttp import web

            return web.Response(status=499, headers=headers)
        if first is None:  # over before any text streamed
            refused = turn.exception()
            if isinstance(refused, Exception):
                return self._refusal(refused)
            failed = self._failure(turn.result(), headers)
            if failed is not None:
                return failed
        return _Begun(turn, queue, headers, first)

    # --- /v1/chat/completions --------------------------------------------------------------------

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await self._body(request)
            prompt, context = fmt.split_chat_messages(body.get("messages"))
            session_id = self._session_header(request) or new_session_id()
        except fmt.BadRequest as exc:
            return self._refusal(exc)
        stream = body.get("stream") is True
        options = body.get("stream_options")
        include_usage = (
            stream and isinstance(options, dict) and options.get("include_usage") is True
        )
        model = str(body.get("model") or self.model)
        begun = await self._begin(request, body, prompt, session_id, context, stream)
        if not isinstance(begun, _Begun):
            return begun
        turn, queue, headers, first = begun
        cid, created = fmt.completion_id(), int(time.time())
        if not stream:
            outcome = turn.result()
            failed = self._failure(outcome, headers)
            if failed is not None:
                return failed
            from aiohttp import web

            return web.json_response(
                fmt.chat_completion(
                    cid, model, created, outcome.text, _finish(outcome), outcome.usage
                ),
                headers=headers,
            )
        response = await self._sse_start(request, headers)
        try:
            await response.write(
                fmt.sse(fmt.chat_chunk(cid, model, created, {"role": "assistant", "content": ""}))
            )
            piece = first
            while piece is not None:
                await response.write(
                    fmt.sse(fmt.chat_chunk(cid, model, created, {"content": piece}))
                )
                piece = await queue.get()
            outcome = turn.result()
            if outcome.status in ("error", "interrupted"):
                status, kind, text = _failure_text(outcome)
                await response.write(fmt.sse(fmt.error_body(text, kind, status)))
            else:
                await response.write(
                    fmt.sse(fmt.chat_chunk(cid, model, created, {}, _finish(outcome)))
                )
                if include_usage:
                    await response.write(
                        fmt.sse(fmt.chat_usage_chunk(cid, model, created, outcome.usage))
                    )
            await response.write(fmt.sse("[DONE]"))
        except ConnectionResetError:  # aiohttp's ClientConnectionResetError too
            turn.cancel()  # the client went away: the turn is interrupted, quietly
        except asyncio.CancelledError:
            turn.cancel()
            raise
        return response

    async def _sse_start(self, request: web.Request, headers: dict[str, str]) -> web.StreamResponse:
        from aiohttp import web

        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                **headers,
            }
        )
        await response.prepare(request)
        return response

    def _failure(self, outcome: AgentOutcome, headers: dict[str, str]) -> web.Response | None:
        if outcome.status not in ("error", "interrupted"):
            return None
        code, kind, text = _failure_text(outcome)
        status = 409 if outcome.status == "interrupted" else 500
        return self._error(status, text, kind, code, headers={**headers, **NO_RETRY})

    # --- /v1/responses -----------------------------------------------------------------------

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await self._body(request)
            instructions = body.get("instructions")
            prompt, context = fmt.split_responses_input(body.get("input"), instructions)
            previous = body.get("previous_response_id")
            session_id = self._session_header(request)
            if previous is not None:
                if not isinstance(previous, str):
                    raise fmt.BadRequest(
                        "previous_response_id must be a string", "previous_response_id"
                    )
                session_id = self._routes.session_of_response(previous) if self._routes else None
                if session_id is None:
                    return self._error(
                        404,
                        f"previous response {previous!r} not found",
                        "invalid_request_error",
                        "previous_response_not_found",
                        "previous_response_id",
                    )
            session_id = session_id or new_session_id()
        except fmt.BadRequest as exc:
            return self._refusal(exc)
        stream = body.get("stream") is True
        model = str(body.get("model") or self.model)
        begun = await self._begin(request, body, prompt, session_id, context, stream)
        if not isinstance(begun, _Begun):
            return begun
        turn, queue, headers, first = begun
        rid, item_id, created = fmt.response_id(), f"msg_{fmt.response_id()[5:]}", time.time()
        keep = body.get("store") is not False

        def whole(outcome: AgentOutcome) -> dict[str, Any]:
            return fmt.response_object(
                rid,
                model,
                created,
                status="completed" if outcome.status == "completed" else "incomplete",
                output=[fmt.output_message(item_id, outcome.text)],
                previous=previous,
                instructions=instructions,
                usage=outcome.usage,
            )

        if not stream:
            outcome = turn.result()
            failed = self._failure(outcome, headers)
            if failed is not None:
                return failed
            if keep and self._routes is not None:
                self._routes.remember_response(rid, outcome.session_id or session_id)
            from aiohttp import web

            return web.json_response(whole(outcome), headers=headers)
        response = await self._sse_start(request, headers)
        events = _Events(response)
        start = fmt.response_object(
            rid,
            model,
            created,
            status="in_progress",
            output=[],
            previous=previous,
            instructions=instructions,
        )
        try:
            await events.send("response.created", response=start)
            await events.send("response.in_progress", response=start)
            await events.send(
                "response.output_item.added",
                output_index=0,
                item=fmt.output_message(item_id, "", "in_progress"),
            )
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            where = {"item_id": item_id, "output_index": 0, "content_index": 0}
            await events.send("response.content_part.added", **where, part=part)
            text = ""
            piece = first
            while piece is not None:
                text += piece
                await events.send("response.output_text.delta", **where, delta=piece, logprobs=[])
                piece = await queue.get()
            outcome = turn.result()
            if outcome.status in ("error", "interrupted"):
                code, _, message_text = _failure_text(outcome)
                failure = fmt.response_object(
                    rid,
                    model,
                    created,
                    status="failed",
                    output=[],
                    previous=previous,
                    instructions=instructions,
                    usage=outcome.usage,
                    error={"code": code, "message": message_text},
                )
                await events.send("response.failed", response=failure)
                return response
            final = outcome.text or text
            await events.send("response.output_text.done", **where, text=final, logprobs=[])
            await events.send("response.content_part.done", **where, part={**part, "text": final})
            done = whole(outcome)
            await events.send("response.output_item.done", output_index=0, item=done["output"][0])
            if keep and self._routes is not None:
                self._routes.remember_response(rid, outcome.session_id or session_id)
            await events.send("response.completed", response=done)
        except ConnectionResetError:  # the client went away: the turn is interrupted, quietly
            turn.cancel()
        except asyncio.CancelledError:
            turn.cancel()
            raise
        return response


_GONE = object()
"""What :func:`_first_or_gone` returns when the client closed its connection."""
_WATCH_INTERVAL = 0.2
"""Seconds between checks of a waiting client's connection."""


async def _first_or_gone(request: web.Request, queue: asyncio.Queue[str | None]) -> Any:
    """The queue's first item, or :data:`_GONE` as soon as the client's connection closes
    (aiohttp does not cancel a handler whose client left, so the connection is looked at
    every ``_WATCH_INTERVAL`` seconds, by a timer rather than a wait with a timeout, which
    would cost a future and its callbacks each time)."""
    loop = asyncio.get_running_loop()
    getter = asyncio.ensure_future(queue.get())
    gone = False
    timer: asyncio.TimerHandle | None = None

    def watch() -> None:
        nonlocal gone, timer
        transport = request.transport
        if transport is None or transport.is_closing():
            gone = True
            getter.cancel()
        else:
            timer = loop.call_later(_WATCH_INTERVAL, watch)

    timer = loop.call_later(_WATCH_INTERVAL, watch)
    try:
        return await getter
    except asyncio.CancelledError:
        if gone:  # the watch cancelled the getter, not the handler's caller
            return _GONE
        raise
    finally:
        if timer is not None:
            timer.cancel()


class _Events:
    """Responses stream events, numbered in order."""

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response
        self.number = 0

    async def send(self, kind: str, **data: Any) -> None:
        payload = {"type": kind, "sequence_number": self.number, **data}
        self.number += 1
        await self.response.write(fmt.sse(payload, kind))


def _finish(outcome: AgentOutcome) -> str:
    return "length" if outcome.status == "max_iterations" else "stop"


def _failure_text(outcome: AgentOutcome) -> tuple[str, str, str]:
    """(code, type, message) for a turn that did not answer."""
    if outcome.status == "interrupted":
        return (
            "interrupted",
            "server_error",
            "the turn was interrupted (a newer message in this session, /stop, or shutdown)",
        )
    return "agent_error", "server_error", outcome.error or "the agent failed"


def create(platform: str, settings: Mapping[str, Any]) -> ApiServerAdapter:
    """The registered factory of the ``api_server`` adapter."""
    return ApiServerAdapter(platform, settings)
