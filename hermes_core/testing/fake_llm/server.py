"""The fake LLM server: scripted steps, request recording, HTTP/1.1 with SSE, loopback only.

Standard library only: the SDKs it is tested with are never imported here.
"""

from __future__ import annotations

import ipaddress
import json as _json
import select
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hermes_hookspecs import ProviderError

from ..scripted import Call, Turn

WIRES = ("chat_completions", "codex_responses", "anthropic_messages")
"""The ``wire`` of a recorded model call."""

DEFAULT_CHUNKS = 4
"""Pieces the text, the reasoning and each tool call's arguments are streamed in by default."""

DEFAULT_MODEL = "fake-model"

_TURN_KEYS = frozenset(
    {
        "text",
        "calls",
        "reasoning",
        "signature",
        "usage",
        "finish_reason",
        "chunks",
        "chunk_delay",
        "delay",
        "model",
        "headers",
        "break_stream_after",
        "hang_after",
    }
)
_CALL_KEYS = frozenset({"name", "arguments", "id"})
_USAGE_KEYS = frozenset(
    {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"}
)
_ERROR_KEYS = frozenset({"status", "message", "type", "code", "param", "retry_after", "headers"})
_KIND_STATUS = {
    "rate_limit": 429,
    "billing": 402,
    "overloaded": 529,
    "server": 500,
    "timeout": 408,
    "auth": 401,
    "model_not_found": 404,
    "context_overflow": 400,
    "bad_request": 400,
    "other": 500,
}


# --- recorded requests ---------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One HTTP request the fake server received, exactly as it arrived.

    :param method: ``POST``, ``GET``, ...
    :param path: the request target as sent (path and query), e.g. ``/v1/chat/completions``.
    :param headers: header names in lower case; repeated headers joined with ``", "``.
    :param body: the raw body bytes.
    :param json: the parsed body, or ``None`` when it is not JSON.
    :param wire: ``chat_completions``, ``codex_responses`` or ``anthropic_messages`` for a model
        call; ``None`` for anything else (``GET /v1/models``, unknown paths).
    :param number: for a model call, which one it was (1, 2, ...); the step it consumed.
    :param received_at: ``time.time()`` when the request's body had arrived.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None
    wire: str | None = None
    number: int | None = None
    received_at: float = field(default_factory=time.time)

    @property
    def stream(self) -> bool:
        """Whether the body asked for a streamed answer (``"stream": true``)."""
        return isinstance(self.json, dict) and self.json.get("stream") is True

    @property
    def model(self) -> str | None:
        """The ``model`` of the body, if any."""
        return self.json.get("model") if isinstance(self.json, dict) else None


# --- steps ---------------------------------------------------------------------------------------


@dataclass
class ToolCallStep:
    """A tool call to answer with; ``arguments`` is the JSON text the "model" wrote."""

    name: str
    arguments: str
    id: str | None = None

    def input(self) -> Any:
        """The arguments as an object, or the raw text when it is not valid JSON."""
        try:
            return _json.loads(self.arguments) if self.arguments else {}
        except ValueError:
            return self.arguments


@dataclass
class Answer:
    """A normalized answer step (what a :class:`Turn`, a ``str`` or a dict step becomes)."""

    text: str | None = None
    calls: list[ToolCallStep] = field(default_factory=list)
    reasoning: str | None = None
    signature: str | None = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    chunks: int = DEFAULT_CHUNKS
    chunk_delay: float = 0.0
    delay: float = 0.0
    model: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    break_stream_after: int | None = None
    hang_after: int | None = None

    def pieces(self, value: str | None) -> list[str]:
        """``value`` cut in ``chunks`` pieces of about the same size (fewer when it is short)."""
        if not value:
            return []
        count = max(1, min(self.chunks, len(value)))
        size, extra = divmod(len(value), count)
        out, start = [], 0
        for i in range(count):
            end = start + size + (1 if i < extra else 0)
            out.append(value[start:end])
            start = end
        return out


@dataclass
class ErrorStep:
    """An HTTP error answered in the error format of the endpoint."""

    status: int
    message: str | None = None
    type: str | None = None
    code: str | None = None
    param: str | None = None
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False  # a dropped connection (ProviderError of kind "connection")


@dataclass
class HangStep:
    """Never answer: wait until the client disconnects or the server stops."""

    delay: float = 0.0


Normalized = Answer | ErrorStep | HangStep


def _number(value: Any, name: str, *, integer: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"fake-llm step: {name!r} must be a number >= 0, not {value!r}")
    if integer and not isinstance(value, int):
        raise ValueError(f"fake-llm step: {name!r} must be an integer, not {value!r}")
    return value


def _headers(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(f"fake-llm step: 'headers' must be an object, not {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _call(value: Any) -> ToolCallStep:
    if isinstance(value, Call):
        name, arguments, call_id = value.name, value.arguments, value.id
    elif isinstance(value, Mapping):
        unknown = set(value) - _CALL_KEYS
        if unknown or "name" not in value:
            raise ValueError(
                f"fake-llm step: a call needs 'name' and takes 'arguments' and 'id'; got {value!r}"
            )
        name, arguments, call_id = value["name"], value.get("arguments", {}), value.get("id")
    else:
        raise ValueError(f"fake-llm step: a call is a Call or an object, not {value!r}")
    if arguments is None:
        arguments = {}
    raw = arguments if isinstance(arguments, str) else _json.dumps(arguments, ensure_ascii=False)
    return ToolCallStep(str(name), raw, None if call_id is None else str(call_id))


def _usage(value: Any) -> dict[str, int] | None:
    if value is None:
        return None
    if hasattr(value, "as_dict"):
        value = value.as_dict()
    if not isinstance(value, Mapping) or set(value) - _USAGE_KEYS:
        raise ValueError(
            f"fake-llm step: 'usage' takes {', '.join(sorted(_USAGE_KEYS))}; got {value!r}"
        )
    usage = dict.fromkeys(_USAGE_KEYS, 0)
    for key, count in value.items():
        usage[key] = int(_number(count, f"usage.{key}", integer=True))
    return usage


def _answer_from_dict(step: Mapping[str, Any]) -> Answer:
    unknown = set(step) - _TURN_KEYS
    if unknown:
        raise ValueError(
            f"fake-llm step: unknown key(s) {', '.join(sorted(unknown))}; a turn takes "
            f"{', '.join(sorted(_TURN_KEYS))} (or use 'error' or 'hang')"
        )
    text = step.get("text")
    reasoning = step.get("reasoning")
    for key, value in (("text", text), ("reasoning", reasoning), ("model", step.get("model"))):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"fake-llm step: {key!r} must be a string, not {value!r}")
    calls = step.get("calls") or []
    if not isinstance(calls, list):
        raise ValueError(f"fake-llm step: 'calls' must be a list, not {calls!r}")
    chunks = _number(step.get("chunks", DEFAULT_CHUNKS), "chunks", integer=True)
    if chunks < 1:
        raise ValueError("fake-llm step: 'chunks' must be at least 1")
    answer = Answer(
        text=text,
        calls=[_call(c) for c in calls],
        reasoning=reasoning,
        signature=step.get("signature"),
        usage=_usage(step.get("usage")),
        finish_reason=step.get("finish_reason"),
        chunks=chunks,
        chunk_delay=_number(step.get("chunk_delay", 0.0), "chunk_delay"),
        delay=_number(step.get("delay", 0.0), "delay"),
        model=step.get("model"),
        headers=_headers(step.get("headers", {})),
    )
    for key in ("break_stream_after", "hang_after"):
        if step.get(key) is not None:
            setattr(answer, key, _number(step[key], key, integer=True))
    return answer


def _error_from_dict(step: Mapping[str, Any]) -> ErrorStep:
    if set(step) - {"error", "delay"}:
        raise ValueError(f"fake-llm step: an error step takes 'error' and 'delay'; got {step!r}")
    error = step["error"]
    if not isinstance(error, Mapping) or set(error) - _ERROR_KEYS or "status" not in error:
        raise ValueError(
            "fake-llm step: 'error' needs 'status' and takes "
            f"{', '.join(sorted(_ERROR_KEYS - {'status'}))}; got {error!r}"
        )
    status = error["status"]
    if not isinstance(status, int) or not 400 <= status <= 599:
        raise ValueError(f"fake-llm step: error status must be 400-599, not {status!r}")
    retry_after = error.get("retry_after")
    return ErrorStep(
        status=status,
        message=error.get("message"),
        type=error.get("type"),
        code=error.get("code"),
        param=error.get("param"),
        retry_after=None if retry_after is None else _number(retry_after, "retry_after"),
        headers=_headers(error.get("headers", {})),
        delay=_number(step.get("delay", 0.0), "delay"),
    )


def _from_provider_error(exc: ProviderError) -> ErrorStep:
    if exc.kind == "connection" and exc.status is None:
        return ErrorStep(status=500, message=str(exc), drop=True)
    status = exc.status or _KIND_STATUS.get(exc.kind, 500)
    return ErrorStep(status=status, message=str(exc) or None, retry_after=exc.retry_after)


def normalize_step(step: Any) -> Normalized:
    """Turn any accepted step form (except a callable) into an :class:`Answer`,
    :class:`ErrorStep` or :class:`HangStep`; a malformed step raises ``ValueError``."""
    if isinstance(step, (Answer, ErrorStep, HangStep)):
        return step
    if isinstance(step, str):
        return Answer(text=step)
    if isinstance(step, Turn):
        return Answer(
            text=step.text,
            calls=[_call(c) for c in step.calls],
            reasoning=step.reasoning,
            usage=_usage(step.usage),
            delay=_number(step.delay, "delay"),
            finish_reason=step.finish_reason,
        )
    if isinstance(step, ProviderError):
        return _from_provider_error(step)
    if isinstance(step, Mapping):
        if "error" in step:
            return _error_from_dict(step)
        if "hang" in step:
            if set(step) - {"hang", "delay"} or step["hang"] is not True:
                raise ValueError(f"fake-llm step: a hang step is {{'hang': true}}; got {step!r}")
            return HangStep(delay=_number(step.get("delay", 0.0), "delay"))
        return _answer_from_dict(step)
    raise TypeError(
        "fake-llm step: expected a Turn, a str, a dict, a ProviderError or a function of the "
        f"request; got {step!r}"
    )


def load_script(path: str | Path) -> list[Any]:
    """Read a ``--script`` file: a JSON list of steps (each checked now, so typos fail early)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        steps = _json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(steps, list):
        raise ValueError(f"{path}: a script is a JSON list of steps")
    for index, step in enumerate(steps, 1):
        try:
            normalize_step(step)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}: step {index}: {exc}") from None
    return steps


# --- what the wire modules are given ------------------------------------------------------------


@dataclass
class Exchange:
    """One model call being answered: the wire modules build their bodies from it."""

    number: int
    request: RecordedRequest
    model: str
    created: int

    @property
    def body(self) -> dict[str, Any]:
        """The request body (an empty dict when it was not a JSON object)."""
        return self.request.json if isinstance(self.request.json, dict) else {}

    def call_id(self, call: ToolCallStep, index: int, prefix: str) -> str:
        """The scripted id of ``call``, or a made-up one unique to this request."""
        return call.id or f"{prefix}{self.number}_{index}"


def _resolve(answer: Answer, request: RecordedRequest) -> Answer:
    """A copy with the usage estimated (about 4 characters a token) and the finish reason set."""
    usage = answer.usage
    if usage is None:
        written = len(answer.text or "") + sum(len(c.arguments) + len(c.name) for c in answer.calls)
        usage = dict.fromkeys(_USAGE_KEYS, 0)
        usage["input_tokens"] = max(1, len(request.body) // 4)
        usage["reasoning_tokens"] = len(answer.reasoning or "") // 4
        usage["output_tokens"] = max(1, written // 4) + usage["reasoning_tokens"]
    finish = answer.finish_reason or ("tool_calls" if answer.calls else "stop")
    return replace(answer, usage=usage, finish_reason=finish)


def _wire_of(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "chat_completions"
    if path.endswith("/responses"):
        return "codex_responses"
    if path.endswith("/messages"):
        return "anthropic_messages"
    return None


def _dumps(value: Any) -> bytes:
    return _json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _sse(wire: str, name: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else _dumps(data).decode("utf-8")
    if wire == "chat_completions" or name is None:
        return f"data: {payload}\n\n".encode()
    return f"event: {name}\ndata: {payload}\n\n".encode()


def _format_seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# --- the HTTP handler ----------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-llm"
    server: _Server

    # -- plumbing --

    def setup(self) -> None:
        super().setup()
        # Answer at once: without this each response waits on the client's delayed ACK (~40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._connected(self)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._disconnected(self)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        pass  # requests are reported through FakeLLM(log=...) instead

    def handle_one_request(self) -> None:
        if self.server.owner._stopping.is_set():
            self.close_connection = True
            return
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError, OSError):
            self.close_connection = True

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self) -> RecordedRequest:
        body = self._read_body()
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        try:
            parsed = _json.loads(body) if body else None
        except ValueError:
            parsed = None
        return RecordedRequest(self.command, self.path, headers, body, parsed)

    def _idle(self, seconds: float | None) -> bool:
        """Wait ``seconds`` (``None``: for ever); ``False`` as soon as the client disconnects or
        the server stops."""
        owner = self.server.owner
        deadline = None if seconds is None else time.monotonic() + seconds
        while not owner._stopping.is_set():
            left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
            if left <= 0:
                return True
            try:
                readable, _, _ = select.select([self.connection], [], [], left)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return False  # end of file: the client closed the connection
            except (OSError, ValueError):
                return False
            if readable:
                owner._stopping.wait(left)  # more bytes (a pipelined request): keep waiting
        return False

    def _drop(self) -> None:
        """Close the connection abruptly, in the middle of whatever was being sent."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _start(self, status: int, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def _send_json(self, status: int, body: Any, headers: Mapping[str, str] = {}) -> None:  # noqa: B006
        data = _dumps(body)
        self._start(
            status,
            {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers},
        )
        self.wfile.write(data)

    # -- requests --

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        recorded = self._record()
        owner = self.server.owner
        owner._log_request(recorded, "models" if self._is_models() else "404")
        if self._is_models():
            self._send_json(200, owner._models_body())
        else:
            self._not_found(recorded)

    def _is_models(self) -> bool:
        return self.path.split("?", 1)[0].rstrip("/").endswith("/models")

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        recorded = self._record()
        recorded.wire = _wire_of(self.path)
        owner = self.server.owner
        if recorded.wire is None:
            owner._log_request(recorded, "404")
            self._not_found(recorded)
            return
        number, step = owner._take(recorded)
        self._answer(recorded, number, step)

    def _method_not_allowed(self) -> None:
        recorded = self._record()
        recorded.wire = _wire_of(self.path)
        self.server.owner._log_request(recorded, "405")
        self._send_error(
            recorded, ErrorStep(405, f"fake-llm: {self.command} is not allowed on {self.path}")
        )

    do_PUT = do_DELETE = do_PATCH = _method_not_allowed  # noqa: N815

    def _not_found(self, recorded: RecordedRequest) -> None:
        self._send_error(
            recorded,
            ErrorStep(404, f"fake-llm: no endpoint {recorded.method} {recorded.path}"),
        )

    def _answer(self, recorded: RecordedRequest, number: int, step: Any) -> None:
        owner = self.server.owner
        if step is None:
            message = f"fake-llm: no scripted step left for request {number}"
            owner._log(f"  -> 500 {message}")
            self._send_error(recorded, ErrorStep(500, message, headers={"x-should-retry": "false"}))
            return
        try:
            if _is_function(step):
                step = step(recorded)
            step = normalize_step(step)
        except Exception as exc:
            owner.errors.append(exc)
            message = f"fake-llm: step {number} raised {type(exc).__name__}: {exc}"
            owner._log(f"  -> 500 {message}")
            self._send_error(recorded, ErrorStep(500, message, headers={"x-should-retry": "false"}))
            return
        owner._log(f"  -> step {number}: {_describe(step)}")
        if step.delay and not self._idle(step.delay):
            self._drop()
            return
        if isinstance(step, HangStep):
            self._idle(None)
            self._drop()
        elif isinstance(step, ErrorStep):
            if step.drop:
                self._drop()
            else:
                self._send_error(recorded, step)
        else:
            self._send_answer(recorded, number, _resolve(step, recorded))

    def _send_error(self, recorded: RecordedRequest, error: ErrorStep) -> None:
        from . import anthropic_wire, openai_wire

        wire = recorded.wire
        if wire == "anthropic_messages" or (
            wire is None and "anthropic-version" in recorded.headers
        ):
            body, request_id_header = anthropic_wire.error_body(error), "request-id"
        else:
            body, request_id_header = openai_wire.error_body(error), "x-request-id"
        headers = {request_id_header: f"req_fake_{len(self.server.owner.requests)}"}
        if error.retry_after is not None:
            headers["Retry-After"] = _format_seconds(error.retry_after)
        headers.update(error.headers)
        self._send_json(error.status, body, headers)

    def _send_answer(self, recorded: RecordedRequest, number: int, answer: Answer) -> None:
        from . import anthropic_wire, openai_wire

        model = answer.model or recorded.model or DEFAULT_MODEL
        exchange = Exchange(number, recorded, str(model), int(time.time()))
        wire = recorded.wire
        if wire == "anthropic_messages":
            build_json, build_events = anthropic_wire.message, anthropic_wire.message_events
            headers = {"request-id": f"req_fake_{number}"}
        elif wire == "codex_responses":
            build_json, build_events = openai_wire.response, openai_wire.response_events
            headers = {"x-request-id": f"req_fake_{number}"}
        else:
            build_json, build_events = openai_wire.chat_completion, openai_wire.chat_events
            headers = {"x-request-id": f"req_fake_{number}"}
        headers.update(answer.headers)
        if recorded.stream:
            self._stream(wire or "", build_events(answer, exchange), answer, headers)
        else:
            self._send_whole(_dumps(build_json(answer, exchange)), answer, headers)

    def _send_whole(self, data: bytes, answer: Answer, headers: dict[str, str]) -> None:
        headers = {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}
        self._start(200, headers)
        if answer.break_stream_after is None and answer.hang_after is None:
            self.wfile.write(data)
            return
        self.wfile.write(data[: len(data) // 2])  # a JSON answer is cut in the middle
        if answer.break_stream_after is None:
            self._idle(None)
        self._drop()

    def _stream(
        self,
        wire: str,
        events: Iterable[tuple[str | None, Any]],
        answer: Answer,
        headers: dict[str, str],
    ) -> None:
        headers = {
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
            **headers,
        }
        self._start(200, headers)
        for sent, (name, data) in enumerate(events):
            if answer.break_stream_after is not None and sent >= answer.break_stream_after:
                self._drop()
                return
            if answer.hang_after is not None and sent >= answer.hang_after:
                self._idle(None)
                self._drop()
                return
            if sent and answer.chunk_delay and not self._idle(answer.chunk_delay):
                self._drop()
                return
            chunk = _sse(wire, name, data)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")


def _describe(step: Normalized) -> str:
    if isinstance(step, HangStep):
        return "hang"
    if isinstance(step, ErrorStep):
        return "drop the connection" if step.drop else f"error {step.status}"
    parts = []
    if step.reasoning:
        parts.append("reasoning")
    if step.text:
        parts.append(f"text {step.text[:40]!r}")
    parts.extend(f"call {c.name}" for c in step.calls)
    if step.break_stream_after is not None:
        parts.append(f"break after {step.break_stream_after}")
    if step.hang_after is not None:
        parts.append(f"hang after {step.hang_after}")
    return ", ".join(parts) or "empty answer"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default 5 drops connections under load (a 1 s SYN retry)

    def __init__(self, address: tuple[str, int], owner: FakeLLM, family: int) -> None:
        self.address_family = family
        self.owner = owner
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host name up (getfqdn), which can take seconds
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, OSError) or self.owner._stopping.is_set():
            return  # a client went away: nothing to report
        if isinstance(exc, Exception):  # what socketserver catches: always
            self.owner.errors.append(exc)
        super().handle_error(request, client_address)


# --- the public object ---------------------------------------------------------------------------


def _loopback(host: str) -> tuple[str, int]:
    """The address to bind for ``host`` and its family; refuses anything but loopback."""
    if host == "localhost":
        return "127.0.0.1", socket.AF_INET
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise ValueError(
            f"fake-llm binds loopback addresses only (127.0.0.1, ::1, localhost); "
            f"refusing host {host!r}"
        )
    return str(address), socket.AF_INET6 if address.version == 6 else socket.AF_INET


class FakeLLM:
    """A local HTTP server that answers OpenAI chat completions, OpenAI Responses and Anthropic
    messages requests from a script, and records every request it receives.

    ::

        with FakeLLM(tool_call("search", {"q": "x"}), "done") as llm:
            client = openai.OpenAI(base_url=llm.openai_base_url, api_key="test")
            ...
            assert llm.last_request.json["model"] == "gpt-test"

    Each model request consumes the next step (see :mod:`hermes_core.testing.fake_llm` for the
    step forms) and is answered in the format of the endpoint it came to: streamed (SSE) when
    its body has ``"stream": true``, else JSON. When the script runs out, requests get a 500
    ``fake-llm: no scripted step left for request N``.

    :param steps: the script.
    :param host: a loopback address; anything else is refused with ``ValueError``.
    :param port: the port; ``0`` picks a free one.
    :param log: called with one line per request (``hermes dev fake-llm`` prints them).
    """

    def __init__(
        self,
        *steps: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._bind_host, self._family = _loopback(host)
        self._port = port
        self._log_fn = log
        self.steps: list[Any] = []
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        """Exceptions raised by function steps (answered with a 500); the ``fake_llm`` fixture
        fails the test with the first one."""
        self._lock = threading.Lock()
        self._calls = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._handlers: dict[int, tuple[threading.Thread, socket.socket]] = {}
        self._stopped = False
        self.add(*steps)

    # -- script --

    def add(self, *steps: Any) -> FakeLLM:
        """Append steps to the script (checked now: a malformed step raises ``ValueError``)."""
        checked = [s if _is_function(s) else normalize_step(s) for s in steps]
        with self._lock:
            self.steps.extend(checked)
        return self

    @property
    def remaining(self) -> int:
        """Steps not yet played."""
        return len(self.steps)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request (fails the test when there was none)."""
        assert self.requests, "the fake LLM server received no request"
        return self.requests[-1]

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The requests that were model calls (each consumed a step)."""
        return [r for r in self.requests if r.number is not None]

    # -- life cycle --

    def start(self) -> FakeLLM:
        """Bind and serve in a background thread; returns ``self``."""
        if self._stopped:
            raise RuntimeError("a stopped FakeLLM cannot be started again; make a new one")
        if self._server is not None:
            return self
        self._server = _Server((self._bind_host, self._port), self, self._family)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-llm:{self._server.server_port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: hanging and streaming answers end, open connections are closed."""
        server = self._server
        if server is None or self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            handlers = list(self._handlers.values())
        for _, connection in handlers:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread, _ in handlers:
            thread.join(timeout=2)
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses --

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("the FakeLLM is not started: call start() or use it in a with")
        return int(self._server.server_port)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        host = f"[{self._bind_host}]" if self._family == socket.AF_INET6 else self._bind_host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``url + "/v1"``: the ``base_url`` of ``openai.OpenAI``."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """``url``: the ``base_url`` of ``anthropic.Anthropic`` (which appends ``/v1/messages``)."""
        return self.url

    def __repr__(self) -> str:
        where = self.url if self._server is not None and not self._stopped else "not serving"
        return f"<FakeLLM {where}, {self.remaining} step(s) left, {len(self.requests)} request(s)>"

    # -- used by the handler --

    def _take(self, request: RecordedRequest) -> tuple[int, Any]:
        with self._lock:
            self._calls += 1
            request.number = self._calls
            self.requests.append(request)
            step = self.steps.pop(0) if self.steps else None
        self._log_request(request, request.wire or "")
        return request.number, step

    def _log_request(self, request: RecordedRequest, what: str) -> None:
        if request.number is None:
            with self._lock:
                self.requests.append(request)
        mode = " stream" if request.stream else ""
        self._log(f"{request.method} {request.path} ({what}{mode})")

    def _log(self, line: str) -> None:
        if self._log_fn is not None:
            self._log_fn(line)

    def _connected(self, handler: _Handler) -> None:
        with self._lock:
            self._handlers[id(handler)] = (threading.current_thread(), handler.connection)

    def _disconnected(self, handler: _Handler) -> None:
        with self._lock:
            self._handlers.pop(id(handler), None)

    def _models_body(self) -> dict[str, Any]:
        names = [DEFAULT_MODEL]
        with self._lock:
            steps = list(self.steps)
        for step in steps:
            if isinstance(step, Answer) and step.model and step.model not in names:
                names.append(step.model)
        data = [
            {
                "id": name,
                "object": "model",
                "type": "model",
                "created": 0,
                "created_at": "2024-01-01T00:00:00Z",
                "owned_by": "fake-llm",
                "display_name": name,
            }
            for name in names
        ]
        return {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": names[0],
            "last_id": names[-1],
        }


def _is_function(step: Any) -> bool:
    return callable(step) and not isinstance(step, (Turn, BaseException, type))
