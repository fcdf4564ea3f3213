"""A small web site on 127.0.0.1 for the web tool tests: routes map a path to a handler, every
request and every accepted connection is recorded."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Seen:
    """One request the site received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Route = Callable[["SiteHandler"], None]


@dataclass
class Site:
    """The running site: ``url`` (``http://127.0.0.1:PORT``), ``routes`` to fill in, what it saw."""

    url: str
    port: int
    routes: dict[str, Route] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0

    def page(
        self,
        path: str,
        body: bytes | str,
        content_type: str = "text/html; charset=utf-8",
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> str:
        """Serve ``body`` at ``path``; returns the full URL."""
        data = body.encode("utf-8") if isinstance(body, str) else body

        def route(handler: SiteHandler) -> None:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)

        self.routes[path] = route
        return self.url + path

    def redirect(self, path: str, location: str, status: int = 302) -> str:
        """Redirect ``path`` to ``location``; returns the full URL."""

        def route(handler: SiteHandler) -> None:
            handler.send_response(status)
            handler.send_header("Location", location)
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        self.routes[path] = route
        return self.url + path


class SiteHandler(BaseHTTPRequestHandler):
    """Dispatches to the site's routes by path (query string ignored)."""

    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        site = self.server.site
        site.seen.append(Seen(self.command, self.path, dict(self.headers.items()), body))
        route = site.routes.get(self.path.split("?")[0])
        if route is None:
            self.send_response(404)
            self.send_header("Content-Length", "9")
            self.end_headers()
            self.wfile.write(b"not found")
            return
        route(self)

    do_GET = _dispatch  # noqa: N815
    do_POST = _dispatch  # noqa: N815


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: Site

    def get_request(self) -> tuple[socket.socket, Any]:
        accepted = super().get_request()
        self.site.connections += 1
        return accepted


@pytest.fixture
def site() -> Iterator[Site]:
    """A web site on 127.0.0.1, stopped after the test."""
    server = _Server(("127.0.0.1", 0), SiteHandler)
    port = server.server_address[1]
    server.site = Site(url=f"http://127.0.0.1:{port}", port=port)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.site
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connection the process opens during the test, recorded (and still made)."""
    made: list[tuple[str, int]] = []
    original = socket.create_connection

    def recording(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        made.append((str(address[0]), int(address[1])))
        return original(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", recording)
    return made
