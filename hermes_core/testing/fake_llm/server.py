"""The fake LLM server: the HTTP/1.1 handler with SSE, loopback only, and :class:`FakeLLM`,
which serves a script (:mod:`.steps`) and records every request.

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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..scripted import Turn
from .steps import (
    DEFAULT_MODEL,
    Answer,
    ErrorStep,
    Exchange,
    HangStep,
    Normalized,
    RecordedRequest,
    dumps,
    format_seconds,
    normalize_step,
    resolve_answer,
    sse_event,
    wire_of,
)

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
        arrived = time.time()  # before this server's own parse, which is not the client's time
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        try:
            parsed = _json.loads(body) if body else None
        except ValueError:
            parsed = None
        return RecordedRequest(self.command, self.path, headers, body, parsed, received_at=arrived)

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
        data = dumps(body)
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
        recorded.wire = wire_of(self.path)
        owner = self.server.owner
        if recorded.wire is None:
            owner._log_request(recorded, "404")
            self._not_found(recorded)
            return
        from .tool_search import problem

        refused = problem(recorded.wire, recorded.json, owner.native_tool_search)
        if refused is not None:  # as the API would: a 400, no step consumed
            owner._log_request(recorded, f"400 {refused}")
            self._send_error(recorded, ErrorStep(400, refused))
            return
        number, step = owner._take(recorded)
        self._answer(recorded, number, step)

    def _method_not_allowed(self) -> None:
        recorded = self._record()
        recorded.wire = wire_of(self.path)
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
            self._send_answer(recorded, number, resolve_answer(step, recorded))

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
            headers["Retry-After"] = format_seconds(error.retry_after)
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
            self._send_whole(dumps(build_json(answer, exchange)), answer, headers)

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
            chunk = sse_event(wire, name, data)
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
    :param native_tool_search: whether the server knows deferred tools and tool references
        (checked as the API checks them); without, it refuses them with a 400
        (:mod:`~hermes_core.testing.fake_llm.tool_search`).
    """

    def __init__(
        self,
        *steps: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        log: Callable[[str], None] | None = None,
        native_tool_search: bool = True,
    ) -> None:
        self.native_tool_search = native_tool_search
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
