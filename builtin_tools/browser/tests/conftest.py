"""Pages served on 127.0.0.1 for the browser tests, and the browser itself: the tests run with
Debian's Chromium, are skipped with the reason where it is missing, and fail under CI (which
installs it) rather than skip."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

PAGES: dict[str, str] = {
    "/": """<!doctype html><html><head><title>Home</title></head><body>
        <h1>Welcome</h1><p>A small site for the browser tests.</p>
        <a href="/form">Go to the form</a>
        <img src="/pixel.png" alt="a red pixel" width="10" height="10">
        </body></html>""",
    "/form": """<!doctype html><html><head><title>Form</title></head><body>
        <h1>Say hello</h1>
        <form action="/hello" method="get">
          <label for="name">Name</label> <input id="name" name="name">
          <button type="submit">Send</button>
        </form></body></html>""",
    "/js": """<!doctype html><html><head><title>Needs JavaScript</title></head><body>
        <noscript>This page needs JavaScript.</noscript>
        <div id="app"></div>
        <script>
          const app = document.getElementById("app");
          app.innerHTML = '<h1>Rendered by JavaScript</h1><button id="b">Count</button>'
            + '<p id="n">Clicked 0 times</p>';
          let n = 0;
          document.getElementById("b").addEventListener("click", () => {
            n += 1; document.getElementById("n").textContent = "Clicked " + n + " times";
          });
        </script></body></html>""",
    "/long": """<!doctype html><html><head><title>top</title></head><body>
        <h1>A long page</h1><div style="height: 5000px">filler</div><p>The end</p>
        <script>window.addEventListener("scroll", () => {
          document.title = scrollY > 100 ? "scrolled" : "top"; });</script></body></html>""",
    "/download": """<!doctype html><html><head><title>Download</title></head><body>
        <a href="/report.csv">Get the report</a></body></html>""",
    "/setcookie": "<!doctype html><html><head><title>Set</title></head><body>set</body></html>",
    "/leaky": """<!doctype html><html><head><title>Leaky</title></head><body>
        <h1>Leaky</h1><img src="http://169.254.169.254/latest/meta-data/x.png" alt="meta">
        <img src="http://127.0.0.2:{port}/pixel.png" alt="other"></body></html>""",
}

# a 1x1 red PNG
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108020000009077"
    "53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        parts = urlsplit(self.path)
        self.server.seen.append(self.path)
        html = "text/html; charset=utf-8"
        if parts.path == "/slow":
            time.sleep(8)
            self._send(200, b"<html><body>late</body></html>", html)
        elif parts.path == "/hello":
            name = parse_qs(parts.query).get("name", ["nobody"])[0]
            self._send(
                200,
                f"<html><head><title>Hello</title></head><body><h1>Hello, {name}"
                f"</h1></body></html>".encode(),
                html,
            )
        elif parts.path == "/pixel.png":
            self._send(200, PIXEL, "image/png")
        elif parts.path == "/report.csv":
            self._send(
                200,
                b"month,total\njune,42\n",
                "text/csv",
                Content_Disposition='attachment; filename="report.csv"',
            )
        elif parts.path == "/setcookie":
            self._send(200, PAGES["/setcookie"].encode(), html, Set_Cookie="visited=yes; Path=/")
        elif parts.path == "/showcookie":
            cookie = self.headers.get("Cookie") or "no cookie"
            self._send(
                200,
                f"<html><head><title>Cookie</title></head><body><p>{cookie}</p>"
                "</body></html>".encode(),
                html,
            )
        elif parts.path in PAGES:
            page = PAGES[parts.path].replace("{port}", str(self.server.server_address[1]))
            self._send(200, page.encode(), html)
        else:
            self._send(404, b"<html><body>not found</body></html>", html)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    seen: list[str]


@pytest.fixture
def site() -> Iterator[Any]:
    """The test site on 127.0.0.1; ``site.url`` and ``site.seen`` (paths requested)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.seen = []
    server.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def chromium() -> None:
    """Skip (with the reason) where the browser cannot run; under CI, fail instead."""
    from hermes_toolset_browser.manager import unavailable

    reason = unavailable({})
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs Chromium (.ci/run), yet: {reason}")
        pytest.skip(reason)
