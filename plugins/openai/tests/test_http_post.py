"""Whole answers over kept-alive connections (``http_post``): the SDK's headers, connections
reused and replaced, HTTP proxies served (SOCKS left to the SDK), errors as the SDK path gives
them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import hermes_provider_openai as plugin
import pytest
from hermes_provider_openai.client import shared_poster
from hermes_provider_openai.http_post import direct_endpoint, sdk_headers

from hermes_core.testing import FakeLLM
from hermes_hookspecs import ModelRequest, ProviderError, ProviderSettings


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answer: bytes, content_type: str, close_after: bool) -> None:
        self.answer = answer
        self.content_type = content_type
        self.close_after = close_after
        self.peers: list[int] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.peers.append(self.client_address[1])
        self.send_response(200)
        self.send_header("Content-Type", self.server.content_type)
        self.send_header("Content-Length", str(len(self.server.answer)))
        self.end_headers()
        self.wfile.write(self.server.answer)
        self.wfile.flush()
        # closes without saying so: the client finds out when it next uses the connection
        self.close_connection = self.server.close_after

    def log_message(self, format: str, *args: Any) -> None:
        pass


ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
}


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[_Server] = []

    def start(
        answer: bytes = json.dumps(ANSWER).encode(),
        content_type: str = "application/json",
        close_after: bool = False,
    ) -> _Server:
        server = _Server(answer, content_type, close_after)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _client(base_url: str) -> Any:
    return plugin.create_client(
        ProviderSettings(provider="custom", model="m", base_url=base_url, timeout=10.0)
    )


def _ask(client: Any) -> str:
    request = ModelRequest(model="m", messages=[{"role": "user", "content": "hello"}])
    return str(client.complete(request).message["content"])


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_the_headers_are_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    import openai

    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    sdk = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    expected = {k: v for k, v in sdk.default_headers.items() if isinstance(v, str)}
    expected["Authorization"] = "Bearer sk-test"
    assert sdk_headers("sk-test") == expected


def test_calls_reuse_one_connection(serve: Any) -> None:
    server = serve()
    client = _client(_url(server))
    assert [_ask(client) for _ in range(3)] == ["hi"] * 3
    assert len(server.peers) == 3 and len(set(server.peers)) == 1


def test_a_connection_the_server_closed_is_replaced(serve: Any) -> None:
    server = serve(close_after=True)
    client = _client(_url(server))
    assert [_ask(client) for _ in range(3)] == ["hi"] * 3
    assert len(set(server.peers)) == 3


def test_an_answer_that_is_not_json_is_a_server_error(serve: Any) -> None:
    server = serve(answer=b"<html>busy</html>", content_type="text/html")
    with pytest.raises(ProviderError) as info:
        _ask(_client(_url(server)))
    assert info.value.kind == "server" and "not JSON" in str(info.value)


def test_which_proxied_endpoints_are_served(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    endpoint = direct_endpoint("http://127.0.0.1:8000/v1")
    assert endpoint is not None and endpoint.proxy == "http://127.0.0.1:9"
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    endpoint = direct_endpoint("http://127.0.0.1:8000/v1")
    assert endpoint is not None and endpoint.proxy is None
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    assert direct_endpoint("https://example.invalid/v1") is None  # SOCKS: the SDK's way
    assert direct_endpoint("https://example.invalid/v1?key=1") is None  # a query: the SDK's way


def test_with_a_proxy_the_whole_answer_goes_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLM() as fake:
        fake.add("through the proxy")
        # the "proxy" is the fake server itself, which answers whatever path it is asked for
        monkeypatch.setenv("HTTP_PROXY", fake.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        base_url = "http://127.0.0.1:9/proxied/v1"
        assert shared_poster(base_url, "not-needed", 10.0) is not None
        assert _ask(_client(base_url)) == "through the proxy"
        assert fake.last_request.path.endswith("/proxied/v1/chat/completions")
        assert "x-stainless-retry-count" not in fake.last_request.headers  # not the SDK's


def _chunk(text: str, finish: str | None = None) -> str:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n"


def _ask_streamed(client: Any, deltas: list[str]) -> str:
    request = ModelRequest(
        model="m",
        messages=[{"role": "user", "content": "hello"}],
        stream=True,
        sink=lambda event, data: deltas.append(data["text"]) if event == "text_delta" else None,
    )
    return str(client.complete(request).message["content"])


def test_a_streamed_answer_with_comments_and_split_data(serve: Any) -> None:
    events = ": a comment line\n\n" + _chunk("Hel") + "event: message\n" + _chunk("lo")
    events += _chunk("", "stop") + "data: [DONE]\n\n"
    server = serve(answer=events.encode(), content_type="text/event-stream")
    deltas: list[str] = []
    assert _ask_streamed(_client(_url(server)), deltas) == "Hello"
    assert deltas == ["Hel", "lo"]


def test_an_error_event_inside_a_stream_is_the_sdks_error(serve: Any) -> None:
    error = {"error": {"message": "the model is overloaded", "code": "overloaded"}}
    events = _chunk("Hel") + f"data: {json.dumps(error)}\n\n"
    server = serve(answer=events.encode(), content_type="text/event-stream")
    with pytest.raises(ProviderError) as info:
        _ask_streamed(_client(_url(server)), [])
    assert info.value.kind == "overloaded" and "the model is overloaded" in str(info.value)
    assert info.value.status is None  # inferred from the event: not reported as an HTTP status


def test_the_switch_sends_every_request_through_the_sdks_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hermes_provider_openai.http_post import SDK_SWITCH

    with FakeLLM() as fake:
        fake.add("own", "sdk")
        base_url = fake.openai_base_url
        monkeypatch.delenv(SDK_SWITCH, raising=False)
        assert direct_endpoint(base_url) is not None
        assert _ask(_client(base_url)) == "own"
        assert "x-stainless-retry-count" not in fake.last_request.headers
        monkeypatch.setenv(SDK_SWITCH, "sdk")
        assert direct_endpoint(base_url) is None
        assert _ask(_client(base_url + "/")) == "sdk"  # another endpoint key: chosen afresh
        assert "x-stainless-retry-count" in fake.last_request.headers  # sent by the SDK only
