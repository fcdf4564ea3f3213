"""Requests over the process's own connections (``http_messages``): the SDK's headers, which
endpoints and credentials are served that way, errors exactly as the SDK path gives them, and a
one-shot chat that never imports the SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hermes_provider_anthropic import client as client_module
from hermes_provider_anthropic import create_client
from hermes_provider_anthropic.client import shared_poster
from hermes_provider_anthropic.http_messages import SDK_SWITCH, direct_key, sdk_headers

from hermes_core.testing import FakeLLM, text, tool_call
from hermes_hookspecs import ModelRequest, ProviderError, ProviderSettings

pytest.importorskip("anthropic")


@pytest.fixture(autouse=True)
def _fresh_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No proxy, credential or header variable of the machine, and no SDK profile on disk."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name.startswith("ANTHROPIC_") or name == SDK_SWITCH:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    client_module._SHARED_POSTERS.clear()
    yield
    client_module._SHARED_POSTERS.clear()


def _settings(base_url: str, api_key: str | None = "k") -> ProviderSettings:
    return ProviderSettings(
        provider="anthropic",
        model="claude-test",
        base_url=base_url,
        api_key=api_key,
        api_mode="anthropic_messages",
        timeout=10.0,
    )


def _request(stream: bool = False) -> ModelRequest:
    return ModelRequest(
        model="claude-test", messages=[{"role": "user", "content": "hello"}], stream=stream
    )


def test_the_headers_are_the_sdks() -> None:
    import anthropic

    sdk = anthropic.Anthropic(api_key="sk-test", base_url="http://127.0.0.1:9")
    expected = {k: v for k, v in sdk.default_headers.items() if isinstance(v, str)}
    assert sdk_headers("sk-test") == expected


def test_the_key_is_the_one_the_sdk_would_send(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert direct_key("sk-configured") == "sk-configured"
    assert direct_key(None) == "no-key-needed"  # nothing anywhere: a server on this machine
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert direct_key(None) == "sk-env"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.setenv(name, "x")
        assert direct_key(None) is None  # the SDK resolves those credentials
        assert direct_key("sk-configured") == "sk-configured"
        monkeypatch.delenv(name)
    (tmp_path / ".config" / "anthropic").mkdir(parents=True)  # profiles on disk
    assert direct_key(None) is None


def test_what_the_sdk_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLM() as fake:
        url = fake.anthropic_base_url
        assert shared_poster(_settings(url)) is not None
        monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Team: a")
        assert shared_poster(_settings(url + "/")) is None  # headers only the SDK adds
        monkeypatch.delenv("ANTHROPIC_CUSTOM_HEADERS")
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        assert shared_poster(_settings(url + "//")) is not None  # through an HTTP proxy
        monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:9")
        assert shared_poster(_settings(url + "///")) is None  # SOCKS: the SDK's way
        monkeypatch.delenv("HTTP_PROXY")
        monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token")
        assert shared_poster(_settings(url, api_key=None)) is None  # a token credential
        assert shared_poster(_settings("http://user@127.0.0.1:9/anthropic")) is None


def test_the_switch_sends_every_request_through_the_sdks_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeLLM() as fake:
        fake.add("own", "sdk")
        url = fake.anthropic_base_url
        assert create_client(_settings(url)).complete(_request()).message["content"] == "own"
        assert "x-stainless-retry-count" not in fake.last_request.headers
        monkeypatch.setenv(SDK_SWITCH, "sdk")
        client = create_client(_settings(url + "/"))  # another endpoint key: chosen afresh
        assert client.complete(_request()).message["content"] == "sdk"
        assert "x-stainless-retry-count" in fake.last_request.headers  # sent by the SDK only


# --- errors exactly as through the SDK --------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.answer: tuple[int, str, dict[str, str], bytes] = (200, "", {}, b"")
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        status, content_type, headers, body = self.server.answer
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server()
    threading.Thread(target=running.serve_forever, daemon=True).start()
    yield running
    running.shutdown()
    running.server_close()


def _events(*events: tuple[str, Any]) -> bytes:
    lines = [
        f"event: {name}\ndata: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        for name, data in events
    ]
    return "".join(lines).encode()


START = (
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 0},
        },
    },
)
ERRORS = {
    "rate limit, retry-after-ms": (
        429,
        "application/json",
        {"retry-after-ms": "1500"},
        json.dumps(
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
        ).encode(),
    ),
    "overloaded": (
        529,
        "application/json",
        {},
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    ),
    "html from a proxy": (502, "text/html", {}, b"<html>\n bad gateway </html>\n"),
    "empty body": (503, "text/plain", {"retry-after": "7"}, b""),
    "context overflow": (
        400,
        "application/json",
        {},
        b'{"type":"error","error":{"type":"invalid_request_error",'
        b'"message":"prompt is too long: 210000 tokens > 200000 maximum"}}',
    ),
    "auth, no message": (
        401,
        "application/json",
        {},
        b'{"type":"error","error":{"type":"authentication_error"}}',
    ),
    "no error object": (413, "application/json", {}, b'{"detail": "too big"}'),
    "an error event in the stream": (
        200,
        "text/event-stream",
        {},
        _events(
            START,
            ("ping", {"type": "ping"}),
            ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
        ),
    ),
    "an error event that is not JSON": (
        200,
        "text/event-stream",
        {},
        _events(START, ("error", "upstream went away")),
    ),
}


def _failure(server: _Server, stream: bool) -> tuple[Any, ...]:
    client_module._SHARED_POSTERS.clear()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    with pytest.raises(ProviderError) as info:
        create_client(_settings(url)).complete(_request(stream))
    err = info.value
    return type(err), err.kind, err.status, err.retry_after, str(err)


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_are_the_sdk_paths(
    server: _Server, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    server.answer = ERRORS[case]
    streams = [True] if server.answer[0] == 200 else [False, True]
    for stream in streams:
        own = _failure(server, stream)
        monkeypatch.setenv(SDK_SWITCH, "sdk")
        through_sdk = _failure(server, stream)
        monkeypatch.delenv(SDK_SWITCH)
        assert own == through_sdk


def test_a_successful_answer_that_is_not_json(server: _Server) -> None:
    server.answer = (200, "text/html", {}, b"<html>hello</html>")
    with pytest.raises(ProviderError) as info:
        create_client(_settings(f"http://127.0.0.1:{server.server_address[1]}")).complete(
            _request()
        )
    assert info.value.kind == "server" and "unexpected response" in str(info.value)


# --- a one-shot chat never imports the SDK ------------------------------------------------------


def test_a_one_shot_chat_to_a_direct_endpoint_does_not_import_the_sdk() -> None:
    hermes = Path(sys.executable).with_name("hermes")
    with FakeLLM() as fake, tempfile.TemporaryDirectory() as home:
        fake.add(tool_call("get_weather", {"city": "Paris"}), text("Sunny in Paris."))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "ANTHROPIC_"))}
        env.update(HERMES_HOME=home, HERMES_SERVE="off", PYTHONPROFILEIMPORTTIME="1", HOME=home)
        argv = [str(hermes), "chat", "-q", "Weather in Paris?", "--provider", "custom"]
        argv += ["--base-url", fake.anthropic_base_url, "--api-mode", "anthropic_messages"]
        argv += ["--model", "claude-test", "--toolsets", "weather"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Sunny in Paris." in done.stdout
        assert [r.path for r in fake.model_requests] == ["/v1/messages"] * 2
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "hermes_provider_anthropic.http_messages" in imported
    assert not {name for name in imported if name.split(".")[0] in ("anthropic", "httpx")}
