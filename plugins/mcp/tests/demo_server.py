"""A real MCP server written with the SDK, for the tests: run over stdio with ``python
demo_server.py`` (the tests start it), or served over streamable HTTP by :func:`http_app`.

Every call is appended to the file named by ``DEMO_CALLS`` (when set), so a test can prove that a
blocked call never reached the server.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import Image, MCPServer

server = MCPServer("demo")


def _record(name: str) -> None:
    path = os.environ.get("DEMO_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _record("add")
    return a + b


@server.tool()
def read_env(name: str) -> str:
    """The value of an environment variable of the server process, or <unset>."""
    _record("read_env")
    return os.environ.get(name, "<unset>")


@server.tool()
def pid() -> int:
    """The process id of the server."""
    _record("pid")
    return os.getpid()


@server.tool()
def fail(message: str) -> str:
    """Always fails with an error result."""
    _record("fail")
    raise ValueError(message)


@server.tool()
def picture() -> Image:
    """A tiny PNG image."""
    _record("picture")
    return Image(data=b"\x89PNG\r\n\x1a\n" + bytes(16), format="png")


@server.tool()
def crash() -> str:
    """End the server process at once, without an answer."""
    _record("crash")
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after some seconds."""
    _record("slow")
    await anyio.sleep(seconds)
    return "late"


def http_app():  # type: ignore[no-untyped-def]
    """The server as a streamable HTTP application (path ``/mcp``)."""
    return server.streamable_http_app(host="127.0.0.1")


if __name__ == "__main__":
    print("demo server starting", file=sys.stderr)
    server.run()
