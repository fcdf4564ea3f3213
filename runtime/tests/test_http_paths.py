"""The ways a model call reaches its server (hermes_runtime.http_json on urllib3): TLS verified
with a CA named by SSL_CERT_FILE or a folder named by SSL_CERT_DIR, HTTP proxies from the
environment (tunnels and forwarded requests, with credentials, NO_PROXY honoured), a server that
closes kept-alive connections, chunked event streams cut at odd places, and no certificate read
for plain HTTP."""

from __future__ import annotations

import http.client
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from runtime_http_servers import EchoServer, Handler, Proxy, make_ca, tls_server_context

from hermes_runtime import tls
from hermes_runtime.http_json import Endpoint, JsonPoster, ServerSentEvent, direct_endpoint


class Failure(Exception):
    def __init__(self, *what: Any) -> None:
        super().__init__(*what)
        self.what = what


class Failures:
    def status(self, status: int, body: Any, headers: Mapping[str, str]) -> BaseException:
        return Failure("status", status, body)

    def network(self, exc: OSError | http.client.HTTPException, streaming: bool) -> BaseException:
        return Failure("network", type(exc).__name__, str(exc), streaming)

    def not_json(self, text: str) -> BaseException:
        return Failure("not_json", text)


@pytest.fixture(autouse=True)
def _no_proxy_or_trust_of_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def https_server(ca: tuple[Path, Path, Path]) -> Iterator[EchoServer]:
    server = EchoServer(tls=tls_server_context(ca[1], ca[2])).start()
    yield server
    server.stop()


@pytest.fixture
def http_server() -> Iterator[EchoServer]:
    server = EchoServer().start()
    yield server
    server.stop()


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    running = Proxy(password="ann:s3cret/").start()
    yield running
    running.stop()


def _poster(url: str, timeout: float = 5.0) -> JsonPoster:
    endpoint = direct_endpoint(url)
    assert endpoint is not None
    return JsonPoster(endpoint, {"X-Key": "k"}, timeout, Failures(), tls.process_context)


def test_tls_verified_with_the_ca_of_ssl_cert_file(
    ca: tuple[Path, Path, Path], https_server: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"https://127.0.0.1:{https_server.port}/v1"
    with pytest.raises(Failure) as info:
        _poster(url).post("/call", {"n": 0})  # the system's CAs do not know the test CA
    assert info.value.what[:2] == ("network", "SSLCertVerificationError")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca[0]))
    poster = _poster(url)
    assert [poster.post("/call", {"n": n}) for n in range(3)] == [
        {"echo": {"n": n}} for n in range(3)
    ]
    assert len({peer for peer, _, _, _ in https_server.requests}) == 1  # one kept connection
    assert https_server.requests[0][1] == "/v1/call"


def test_tls_verified_with_a_certificate_folder_of_ssl_cert_dir(
    ca: tuple[Path, Path, Path],
    https_server: EchoServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "certs"
    folder.mkdir()
    (folder / "test-ca.pem").write_bytes(ca[0].read_bytes())
    subprocess.run(["openssl", "rehash", str(folder)], check=True, capture_output=True)
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    poster = _poster(f"https://127.0.0.1:{https_server.port}/v1")
    assert poster.post("/call", {"n": 1}) == {"echo": {"n": 1}}


def test_a_host_name_the_certificate_does_not_name_is_refused(
    ca: tuple[Path, Path, Path], https_server: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(ca[0]))
    with pytest.raises(Failure) as info:
        _poster(f"https://localhost:{https_server.port}/v1").post("/call", {})
    assert info.value.what[:2] == ("network", "SSLCertVerificationError")
    assert not https_server.requests


def test_https_through_a_proxy_tunnel_with_credentials(
    ca: tuple[Path, Path, Path],
    https_server: EchoServer,
    proxy: Proxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(ca[0]))
    monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("//", "//ann:s3cret%2F@"))
    poster = _poster(f"https://127.0.0.1:{https_server.port}/v1")
    assert poster.endpoint.proxy is not None
    assert [poster.post("/call", {"n": n}) for n in range(2)] == [
        {"echo": {"n": n}} for n in range(2)
    ]
    target = f"127.0.0.1:{https_server.port}"
    assert [(method, path) for method, path, _ in proxy.seen] == [("CONNECT", target)]
    assert proxy.seen[0][2] == "Basic YW5uOnMzY3JldC8="  # ann:s3cret/
    # the key travelled inside the tunnel only
    assert https_server.requests[-1][3]["X-Key"] == "k"


def test_wrong_proxy_credentials_are_a_network_failure(
    https_server: EchoServer, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("//", "//ann:wrong@"))
    with pytest.raises(Failure) as info:
        _poster(f"https://127.0.0.1:{https_server.port}/v1").post("/call", {})
    assert info.value.what[0] == "network" and "proxy" in info.value.what[2].lower()
    assert not https_server.requests


def test_plain_http_forwarded_by_a_proxy(
    http_server: EchoServer, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("//", "//ann:s3cret%2F@"))
    poster = _poster(f"http://127.0.0.1:{http_server.port}/v1/")
    assert poster.post("/call", {"n": 1}) == {"echo": {"n": 1}}
    target = f"http://127.0.0.1:{http_server.port}/v1/call"
    assert proxy.seen == [("POST", target, "Basic YW5uOnMzY3JldC8=")]
    assert http_server.requests[0][1] == "/v1/call"


def test_no_proxy_sends_straight_to_the_host(
    http_server: EchoServer, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    poster = _poster(f"http://127.0.0.1:{http_server.port}/v1")
    assert poster.endpoint.proxy is None
    assert poster.post("/call", {"n": 1}) == {"echo": {"n": 1}}
    assert not proxy.seen


def test_a_proxy_that_is_down_is_a_network_failure(
    http_server: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    with pytest.raises(Failure) as info:
        _poster(f"http://127.0.0.1:{http_server.port}/v1").post("/call", {})
    assert info.value.what[0] == "network" and "proxy" in info.value.what[2].lower()


def test_which_proxies_are_served(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "127.0.0.1:3128")  # no scheme: an HTTP proxy
    endpoint = direct_endpoint("https://api.example.com/v1")
    assert endpoint == Endpoint(True, "api.example.com", 443, "/v1", "http://127.0.0.1:3128")
    assert direct_endpoint("http://api.example.com/v1") == Endpoint(
        False, "api.example.com", 80, "/v1"
    )  # HTTPS_PROXY is for https only
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    assert direct_endpoint("http://api.example.com/v1") is None  # SOCKS: the SDK's
    monkeypatch.setenv("NO_PROXY", "*")
    assert direct_endpoint("http://api.example.com/v1") == Endpoint(
        False, "api.example.com", 80, "/v1"
    )


def test_a_server_that_closes_kept_connections_between_requests() -> None:
    def answer_then_hang_up(handler: Handler, body: dict[str, Any]) -> None:
        handler.send_json({"echo": body})  # keep-alive offered, then taken back
        if body["n"] % 2:
            time.sleep(0.05)  # the next request may be on its way meanwhile
        handler.close_connection = True

    server = EchoServer(answer_then_hang_up).start()
    try:
        poster = _poster(f"http://127.0.0.1:{server.port}")
        for n in range(8):
            assert poster.post("/call", {"n": n}) == {"echo": {"n": n}}
            time.sleep(0.02 * (n % 3))
        assert [body["n"] for _, _, body, _ in server.requests] == list(range(8))  # none twice
    finally:
        server.stop()


def test_a_chunked_stream_cut_at_odd_places() -> None:
    text = 'event: delta\r\ndata: {"t": "h\u00e9"}\r\n\r\n: keep-alive\n\ndata: a\ndata: b\n\n'
    data = text.encode() + b"event: end\ndata: [DONE]\n\n"
    cuts = [0, 1, 7, 13, 20, 21, 22, 40, 41, 45, 46, len(data) - 1, len(data)]

    def trickle(handler: Handler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for start, end in zip(cuts, cuts[1:], strict=False):
            piece = data[start:end]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            handler.wfile.flush()
            time.sleep(0.01)
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    server = EchoServer(trickle).start()
    try:
        poster = _poster(f"http://127.0.0.1:{server.port}")
        for _ in range(2):  # a stream read to its end leaves its connection for the next call
            assert list(poster.stream("/call", {"stream": True})) == [
                ServerSentEvent("delta", '{"t": "h\u00e9"}'),
                ServerSentEvent(None, "a\nb"),
                ServerSentEvent("end", "[DONE]"),
            ]
        assert len({peer for peer, _, _, _ in server.requests}) == 1
    finally:
        server.stop()


def test_plain_http_never_makes_a_tls_context(http_server: EchoServer) -> None:
    made: list[int] = []
    endpoint = Endpoint(False, "127.0.0.1", http_server.port, "")
    poster = JsonPoster(endpoint, {}, 5.0, Failures(), lambda: made.append(1))
    assert poster.post("/call", {}) == {"echo": {}}
    assert not made


def test_importing_the_poster_loads_no_http_library() -> None:
    code = (
        "import sys, hermes_runtime.http_json, hermes_runtime.tls\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('urllib3', 'httpx')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
