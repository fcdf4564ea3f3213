"""Fixtures: the demo MCP server over stdio (a child process the plugin starts) and over
streamable HTTP (uvicorn in a thread, on a free port of 127.0.0.1, behind a bearer token)."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SERVER = HERE / "demo_server.py"
TOKEN = "demo-token-0123456789"


class _BearerOnly:
    """Answers 401 to every HTTP request without ``Authorization: Bearer TOKEN``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {TOKEN}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no token"})
                return
        await self.app(scope, receive, send)


@pytest.fixture(scope="session")
def http_url() -> Iterator[str]:
    """The URL of the demo server over streamable HTTP."""
    import uvicorn

    sys.path.insert(0, str(HERE))
    import demo_server

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(_BearerOnly(demo_server.http_app()), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the HTTP MCP server did not start"
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture
def token() -> str:
    """The bearer token the HTTP demo server wants."""
    return TOKEN


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file the stdio demo server appends each call to (its env names it)."""
    path = tmp_path / "calls.txt"
    path.write_text("")
    monkeypatch.setenv("DEMO_CALLS_PATH", str(path))
    return path


@pytest.fixture(autouse=True)
def _servers_stopped() -> Iterator[None]:
    """Every test leaves no server running."""
    yield
    from hermes_toolset_mcp.runtime import RUNTIME

    RUNTIME.stop_all()
