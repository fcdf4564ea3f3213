"""JSON POSTs over kept-alive connections (on urllib3's pool): reuse, a dropped reused
connection sent once more, failures handed to the provider's mapping, server-sent events, a
call shut from another thread, and which URLs are served directly."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from hermes_runtime.http_json import (
    Endpoint,
    JsonPoster,
    ServerSentEvent,
    direct_endpoint,
    shut,
)


class Failure(Exception):
    """What the test's failure mapping raises: which method made it, and with what."""

    def __init__(self, *what: Any) -> None:
        super().__init__(*what)
        self.what = what


class Failures:
    def status(self, status: int, body: Any, headers: Mapping[str, str]) -> BaseException:
        return Failure("status", status, body, headers.get("retry-after"))

    def network(self, exc: OSError | http.client.HTTPException, streaming: bool) -> BaseException:
        return Failure("network", type(exc).__name__, streaming)

    def not_json(self, text: str) -> BaseException:
        return Failure("not_json", text)


Answer = Callable[["_Handler", int, dict[str, Any]], None]
"""How the server answers the n-th request (from 1) of a connection, given its JSON body."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    count = 0

    def do_POST(self) -> None:
        self.count += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.client_address[1], body, dict(self.headers)))
        self.server.answer(self, self.count, body)

    def send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if status == 429:
            self.send_header("Retry-After", "3")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def echo(handler: _Handler, n: int, body: dict[str, Any]) -> None:
    handler.send(200, json.dumps({"echo": body}).encode())


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], _Server]]:
    servers: list[_Server] = []

    def start(answer: Answer) -> _Server:
        server = _Server(answer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def poster_for(server: _Server, timeout: float = 5.0) -> JsonPoster:
    endpoint = Endpoint(False, "127.0.0.1", server.server_address[1], "/base")
    return JsonPoster(endpoint, {"X-Key": "k"}, timeout, Failures())


def test_posts_reuse_one_connection_with_the_headers(serve: Callable[[Answer], _Server]) -> None:
    server = serve(echo)
    poster = poster_for(server)
    assert [poster.post("/call", {"n": n}) for n in range(3)] == [
        {"echo": {"n": n}} for n in range(3)
    ]
    assert len({peer for peer, _, _ in server.requests}) == 1
    assert all(headers["X-Key"] == "k" for _, _, headers in server.requests)
    poster.close()
    poster.post("/call", {"n": 3})
    assert len({peer for peer, _, _ in server.requests}) == 2  # closed: a new connection


def test_a_request_dropped_on_a_reused_connection_is_sent_once_more(
    serve: Callable[[Answer], _Server],
) -> None:
    def drop_the_second(handler: _Handler, n: int, body: dict[str, Any]) -> None:
        if n == 2:  # read the request, then close without answering
            handler.close_connection = True
            handler.wfile.flush()
            handler.connection.shutdown(2)
            return
        echo(handler, n, body)

    server = serve(drop_the_second)
    poster = poster_for(server)
    assert poster.post("/call", {"n": 1}) == {"echo": {"n": 1}}
    assert poster.post("/call", {"n": 2}) == {"echo": {"n": 2}}
    assert [body["n"] for _, body, _ in server.requests] == [1, 2, 2]
    assert len({peer for peer, _, _ in server.requests}) == 2


def test_a_request_dropped_on_a_fresh_connection_is_a_network_failure(
    serve: Callable[[Answer], _Server],
) -> None:
    def drop(handler: _Handler, n: int, body: dict[str, Any]) -> None:
        handler.close_connection = True
        handler.connection.shutdown(2)

    server = serve(drop)
    with pytest.raises(Failure) as info:
        poster_for(server).post("/call", {})
    assert info.value.what == ("network", "RemoteDisconnected", False)
    assert len(server.requests) == 1  # not sent again


def test_failed_answers_go_to_the_providers_mapping(serve: Callable[[Answer], _Server]) -> None:
    answers = iter(
        [
            (429, b'{"error": "slow"}', "application/json"),
            (502, b"<html>bad gateway</html>", "text/html"),
            (200, b"<html>hello</html>", "text/html"),
            (200, b'{"fine": true}', "application/json"),
        ]
    )
    server = serve(lambda handler, n, body: handler.send(*next(answers)))
    poster = poster_for(server)
    failures = []
    for _ in range(3):
        with pytest.raises(Failure) as info:
            poster.post("/call", {})
        failures.append(info.value.what)
    assert failures == [
        ("status", 429, {"error": "slow"}, "3"),
        ("status", 502, "<html>bad gateway</html>", None),
        ("not_json", "<html>hello</html>"),
    ]
    assert poster.post("/call", {}) == {"fine": True}
    assert len({peer for peer, _, _ in server.requests}) == 1  # failures keep the connection


def test_a_timeout_is_a_network_failure(serve: Callable[[Answer], _Server]) -> None:
    server = serve(lambda handler, n, body: time.sleep(1.5))
    with pytest.raises(Failure) as info:
        poster_for(server, timeout=0.3).post("/call", {})
    assert info.value.what == ("network", "TimeoutError", False)


STREAM = (
    ": a comment\n\n"
    'event: start\ndata: {"a": 1}\n\n'
    "event: ping\n\n"
    "data: line one\r\ndata:line two\r\n\r\n"
    "id: 7\nretry: 100\n\n"
    "event: end\ndata: [DONE]"
)


def test_a_stream_yields_each_event(serve: Callable[[Answer], _Server]) -> None:
    server = serve(lambda handler, n, body: handler.send(200, STREAM.encode(), "text/event-stream"))
    events = list(poster_for(server).stream("/call", {"stream": True}))
    assert events == [
        ServerSentEvent("start", '{"a": 1}'),
        ServerSentEvent("ping", None),
        ServerSentEvent(None, "line one\nline two"),
        ServerSentEvent("end", "[DONE]"),
    ]


def test_events_split_across_reads(serve: Callable[[Answer], _Server]) -> None:
    pieces = [b"event: st", b'art\r\ndata: {"a"', b": 1}\r", b"\n\r\n", b"data: \xc3", b"\xbc"]

    def trickle(handler: _Handler, n: int, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", str(sum(map(len, pieces))))
        handler.end_headers()
        for piece in pieces:
            handler.wfile.write(piece)
            handler.wfile.flush()
            time.sleep(0.05)

    server = serve(trickle)
    events = list(poster_for(server).stream("/call", {"stream": True}))
    assert events == [ServerSentEvent("start", '{"a": 1}'), ServerSentEvent(None, "\u00fc")]


def test_a_stream_that_fails_before_it_starts(serve: Callable[[Answer], _Server]) -> None:
    server = serve(lambda handler, n, body: handler.send(529, b'{"error": "busy"}'))
    with pytest.raises(Failure) as info:
        poster_for(server).stream("/call", {"stream": True})
    assert info.value.what == ("status", 529, {"error": "busy"}, None)


def test_a_stream_cut_mid_way_is_a_streaming_network_failure(
    serve: Callable[[Answer], _Server],
) -> None:
    def cut(handler: _Handler, n: int, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        handler.wfile.write(b"data: 1\n\n")
        handler.wfile.flush()
        handler.close_connection = True
        handler.connection.shutdown(2)

    server = serve(cut)
    seen = []
    with pytest.raises(Failure) as info:
        for event in poster_for(server).stream("/call", {"stream": True}):
            seen.append(event.data)
    assert seen == ["1"]
    assert info.value.what == ("network", "IncompleteRead", True)


def test_shut_wakes_a_call_blocked_on_a_silent_server(serve: Callable[[Answer], _Server]) -> None:
    stop = threading.Event()
    server = serve(lambda handler, n, body: stop.wait(10))
    connections: list[http.client.HTTPConnection] = []
    threading.Timer(0.3, lambda: shut(connections[0])).start()
    started = time.monotonic()
    with pytest.raises(Failure) as info:
        poster_for(server, timeout=30).post("/call", {}, connections.append)
    stop.set()
    assert time.monotonic() - started < 5
    assert info.value.what[0] == "network"


def test_which_urls_are_served_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SWITCH"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert direct_endpoint("http://127.0.0.1:8000/v1/") == Endpoint(False, "127.0.0.1", 8000, "/v1")
    assert direct_endpoint("https://api.example.com") == Endpoint(True, "api.example.com", 443, "")
    for unusual in ("ftp://host/x", "https://user:pw@host/v1", "https://host/v1?key=1", "http://"):
        assert direct_endpoint(unusual) is None
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert direct_endpoint("https://api.example.com") == Endpoint(
        True, "api.example.com", 443, "", "http://127.0.0.1:9"
    )  # through the proxy
    assert direct_endpoint("http://127.0.0.1:8000") == Endpoint(False, "127.0.0.1", 8000, "")
    monkeypatch.setenv("NO_PROXY", "api.example.com")
    assert direct_endpoint("https://api.example.com") == Endpoint(True, "api.example.com", 443, "")
    monkeypatch.setenv("SWITCH", "sdk")
    assert direct_endpoint("http://127.0.0.1:8000", "SWITCH") is None
    assert direct_endpoint("http://127.0.0.1:8000") is not None


def test_posters_of_one_endpoint_share_its_connections(serve: Callable[[Answer], _Server]) -> None:
    server = serve(echo)
    endpoint = Endpoint(False, "127.0.0.1", server.server_address[1], "/base")

    def tls() -> Any:
        raise AssertionError("plain HTTP makes no TLS context")

    first = JsonPoster(endpoint, {"X-Key": "one"}, 5.0, Failures(), tls)
    second = JsonPoster(endpoint, {"X-Key": "two"}, 5.0, Failures(), tls)
    assert first.post("/call", {"n": 1}) == {"echo": {"n": 1}}
    assert second.post("/call", {"n": 2}) == {"echo": {"n": 2}}
    assert first.post("/call", {"n": 3}) == {"echo": {"n": 3}}
    assert [headers["X-Key"] for _, _, headers in server.requests] == ["one", "two", "one"]
    assert len({peer for peer, _, _ in server.requests}) == 1  # another key, same connection


def test_a_forked_child_uses_connections_of_its_own(serve: Callable[[Answer], _Server]) -> None:
    import os

    server = serve(echo)
    poster = poster_for(server)
    poster.post("/call", {"who": "parent"})
    pid = os.fork()
    if pid == 0:  # the child: its answer must come, on a connection the parent never used
        code = 1
        try:
            code = 0 if poster.post("/call", {"who": "child"}) == {"echo": {"who": "child"}} else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert poster.post("/call", {"who": "parent"}) == {"echo": {"who": "parent"}}
    peers = {body["who"]: set() for _, body, _ in server.requests}
    for peer, body, _ in server.requests:
        peers[body["who"]].add(peer)
    assert len(peers["parent"]) == 1 and not peers["parent"] & peers["child"]


def test_closing_the_pools_closes_their_idle_connections(
    serve: Callable[[Answer], _Server],
) -> None:
    from hermes_runtime.http_json import close_pools

    server = serve(echo)
    poster = poster_for(server)
    poster.post("/call", {"n": 1})
    close_pools()
    poster.post("/call", {"n": 2})  # a new pool, a new connection
    assert len({peer for peer, _, _ in server.requests}) == 2
