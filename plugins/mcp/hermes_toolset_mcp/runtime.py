"""Connections to MCP servers, run on one background event loop of this process.

Each connected server is one asyncio task that enters the transport (a stdio child process or a
streamable HTTP session) and the SDK's client, and stays inside them until it is told to stop:
the SDK's cancel scopes must be entered and left by the same task. Callers on other threads use
the blocking methods of :class:`Connection`. The ``mcp`` SDK is imported when the first server
starts, never before.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from typing import Any

from hermes_hookspecs import ToolCancelled, ToolError
from hermes_runtime.secrets import child_environ, mark_secret

from .settings import ServerConfig, expand

STOP_TIMEOUT = 8.0
"""Seconds a server gets to stop (the SDK closes a stdio child's input, then terminates, then
kills its process group)."""

SAFE_BASE = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR", "TZ")
"""Variables of hermes's own environment a stdio server inherits (never a secret one)."""

CONNECTION_CLOSED = -32000
"""The SDK's error code for a connection that broke (``mcp_types.CONNECTION_CLOSED``)."""
REQUEST_TIMEOUT = -32001
"""The SDK's error code for a request not answered in time (``mcp_types.REQUEST_TIMEOUT``)."""


class ServerUnavailable(Exception):
    """A server could not be started or reached; the message is one readable line."""


class Loop:
    """The background event loop thread, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        """The running loop (started now if needed)."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="hermes-mcp", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop

    def run(self, coroutine: Any, timeout: float | None = None) -> Any:
        """Run ``coroutine`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.get()).result(timeout)

    @property
    def started(self) -> bool:
        """Whether the loop thread was ever started."""
        return self._loop is not None


class Connection:
    """One server: started on demand, started again on demand after it stopped or broke."""

    def __init__(self, server: ServerConfig, loop: Loop, config: Mapping[str, Any]) -> None:
        self.server = server
        self.config = config
        self._loop = loop
        self._lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._ready: asyncio.Future[list[Any]] | None = None
        self._client: Any = None
        self._stderr: Any = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None  # a sandboxed server's /tmp
        self.tools: list[Any] = []
        """The server's tools (``mcp.types.Tool``) as it listed them at the last start."""

    @property
    def running(self) -> bool:
        """Whether the server is connected now."""
        return self._client is not None and self._task is not None and not self._task.done()

    def start(self) -> list[Any]:
        """Connect (when not connected) and return the server's tools; raises
        :class:`ServerUnavailable` with one readable line when it cannot."""
        with self._lock:
            if self.running:
                return self.tools
            try:
                self.tools = self._loop.run(self._start())
            except ServerUnavailable:
                raise
            except BaseException as exc:  # the loop's own errors, e.g. a closed loop at exit
                raise ServerUnavailable(self._describe(exc)) from None
            return self.tools

    def stop(self) -> None:
        """Disconnect; a stdio server process is stopped (killed if it does not stop)."""
        with self._lock:
            if self._task is None or not self._loop.started:
                return
            with contextlib.suppress(Exception):
                self._loop.run(self.shutdown(), STOP_TIMEOUT + 2)

    def call(
        self, tool: str, arguments: dict[str, Any], cancelled: Callable[[], bool] = lambda: False
    ) -> Any:
        """Call ``tool`` and return its ``CallToolResult``. Raises :class:`ToolError` (one line)
        when the server is unreachable, answers with a protocol error or takes longer than its
        ``timeout``, and :class:`ToolCancelled` when ``cancelled()`` turns true meanwhile."""
        try:
            self.start()
        except ServerUnavailable as exc:
            raise ToolError(str(exc)) from None
        future = asyncio.run_coroutine_threadsafe(self._call(tool, arguments), self._loop.get())
        while True:
            try:
                return future.result(0.1)
            except TimeoutError:
                if cancelled():
                    future.cancel()
                    raise ToolCancelled(f"MCP tool {tool!r} interrupted") from None
            except ToolError:
                raise
            except Exception as exc:
                code = getattr(exc, "code", None)
                if code == REQUEST_TIMEOUT:
                    raise ToolError(
                        f"MCP server {self.server.name!r} did not answer {tool!r} within "
                        f"{self.server.timeout:g}s (mcp_servers.{self.server.name}.timeout)"
                    ) from None
                if not isinstance(code, int) or code == CONNECTION_CLOSED:
                    self.stop()  # the link broke: the next call starts the server again
                problem = self._describe(exc, stderr=False)  # its log says nothing of this call
                raise ToolError(f"MCP server {self.server.name!r}: {problem}") from None

    # --- on the loop -------------------------------------------------------------------------

    async def _start(self) -> list[Any]:
        ready: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(_retrieve)  # a late failure after a timeout is not "lost"
        self._ready = ready
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._serve(ready, self._stop))
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.server.connect_timeout)
        except TimeoutError:
            await self.shutdown()
            raise ServerUnavailable(
                f"MCP server {self.server.name!r} did not start within "
                f"{self.server.connect_timeout:g}s (mcp_servers.{self.server.name}"
                ".connect_timeout)"
            ) from None
        except Exception as exc:
            await self.shutdown()
            raise ServerUnavailable(
                f"MCP server {self.server.name!r} could not start: {self._describe(exc)}"
            ) from None

    async def _serve(self, ready: asyncio.Future[list[Any]], stop: asyncio.Event) -> None:
        from mcp import Client
        from mcp.types import Implementation

        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = await stack.enter_async_context(
                    Client(transport, client_info=Implementation(name="hermes", version="0.1"))
                )
                tools = await _list_tools(client)
                self._client = client
                ready.set_result(tools)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                if isinstance(exc, Exception):
                    ready.set_exception(exc)
                else:
                    ready.cancel()
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._client = None

    def _sandboxed(self, argv: list[str], cwd: str | None) -> tuple[list[str], str]:
        """``argv`` inside the command sandbox (``sandbox:`` of the entry), with its working
        folder (the entry's ``cwd``, else ``terminal.cwd``, else hermes's) as the workspace;
        :class:`ServerUnavailable` naming the fix when no sandbox can start here."""
        from hermes_env_sandbox import Sandbox, SandboxSettings, SandboxUnavailable

        from hermes_runtime.home import default_home

        terminal = self.config.get("terminal") or {}
        workspace = os.path.abspath(os.path.expanduser(cwd or terminal.get("cwd") or "."))
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="hermes-mcp-")
        try:
            box = Sandbox(
                SandboxSettings(profile=self.server.sandbox, network=True),
                workspace=workspace,
                tmp=self._tmp.name,
                hermes_home=str(default_home()),
            )
        except SandboxUnavailable as exc:
            raise ServerUnavailable(
                f"MCP server {self.server.name!r} (sandbox: {self.server.sandbox}): {exc}"
            ) from None
        wrapped, _ = box.command(argv, cwd=workspace, protect=False)
        return wrapped, "/"

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        secrets: list[str] = []
        if self.server.command:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            # Only a safe base of our own environment, never a provider key; then what the
            # entry's `env:` names (values may refer to variables: ${NAME}).
            env = {k: v for k, v in child_environ(self.config).items() if k in SAFE_BASE}
            env.update({k: expand(v, secrets) for k, v in self.server.env})
            argv = [expand(self.server.command, secrets)]
            argv += [expand(a, secrets) for a in self.server.args]
            cwd = os.path.expanduser(self.server.cwd) if self.server.cwd else None
            if self.server.sandbox != "off":
                argv, cwd = self._sandboxed(argv, cwd)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
            for value in secrets:
                mark_secret(value=value)
            if self._stderr is not None:
                self._stderr.close()
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            return stdio_client(params, errlog=self._stderr)
        import httpx2  # the SDK's HTTP client
        from mcp.client.streamable_http import streamable_http_client

        headers = {k: expand(v, secrets) for k, v in self.server.headers}
        for value in [*secrets, *headers.values()]:
            mark_secret(value=value)
        # The SDK's timeouts (30 s to connect, 300 s to read a stream), with room for a call
        # that may take longer than that.
        timeout = httpx2.Timeout(30.0, read=max(300.0, self.server.timeout + 30.0))
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=headers or None, timeout=timeout)
        )
        return streamable_http_client(expand(self.server.url or ""), http_client=http)

    async def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        client = self._client
        if client is None:
            raise ToolError(f"MCP server {self.server.name!r} is not connected")
        return await client.call_tool(tool, arguments, read_timeout_seconds=self.server.timeout)

    async def shutdown(self) -> None:
        """Stop the serving task (on the loop); waits until the transport is closed.

        A connected server is asked to stop (its transport closes in order); one still
        starting has nothing to finish, so its task is cancelled at once."""
        task, stop, ready = self._task, self._stop, self._ready
        if task is not None and not task.done():
            if stop is not None and ready is not None and ready.done():
                stop.set()
                await asyncio.wait({task}, timeout=STOP_TIMEOUT)
            if not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=STOP_TIMEOUT)
        self._task = None
        self._client = None

    def _describe(self, exc: BaseException, stderr: bool = True) -> str:
        """One line for ``exc`` (the innermost of exception groups), with the last line the
        server wrote to stderr when there is one and ``stderr`` is true."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        message = getattr(exc, "message", None)
        if isinstance(exc, FileNotFoundError):
            text = f"command not found: {self.server.command}"
        elif isinstance(exc, PermissionError):
            text = f"command not executable: {self.server.command}"
        elif isinstance(message, str) and message.strip():
            text = message.strip().splitlines()[0]
        else:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if type(exc).__module__.startswith(("httpx", "httpcore")):
                text = f"cannot reach {self.server.url}: {text}"
        tail = self._stderr_tail() if stderr else ""
        return f"{text} (server said: {tail})" if tail else text

    def _stderr_tail(self) -> str:
        handle = self._stderr
        if handle is None:
            return ""
        try:
            handle.flush()
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 4000))
            lines = [line.strip() for line in handle.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return lines[-1][:300] if lines else ""


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(100):  # a server that always returns a cursor must not spin forever
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


class Runtime:
    """Every connection of this process, by the server's fingerprint, and the sessions open
    in this process (the servers stop when the last one ends)."""

    def __init__(self) -> None:
        self.loop = Loop()
        self._lock = threading.Lock()
        self._connections: dict[str, Connection] = {}
        self._sessions: set[str] = set()

    def connection(self, server: ServerConfig, config: Mapping[str, Any]) -> Connection:
        """The connection for ``server`` (not started)."""
        with self._lock:
            found = self._connections.get(server.key())
            if found is None:
                found = Connection(server, self.loop, config)
                self._connections[server.key()] = found
            return found

    def session_started(self, session_id: str) -> None:
        """Note an open session."""
        with self._lock:
            self._sessions.add(session_id)

    def session_ended(self, session_id: str) -> None:
        """Note a session's end; the last open one ending stops every server."""
        with self._lock:
            self._sessions.discard(session_id)
            last = not self._sessions
        if last:
            self.stop_all()

    def stop_all(self) -> None:
        """Stop every connected server, all at once."""
        with self._lock:
            connections = [c for c in self._connections.values() if c._task is not None]
        if not connections or not self.loop.started:
            return

        async def stop_them() -> None:
            await asyncio.gather(*(c.shutdown() for c in connections), return_exceptions=True)

        with contextlib.suppress(Exception):
            self.loop.run(stop_them(), STOP_TIMEOUT + 4)

    def running(self) -> list[str]:
        """Names of the servers connected now."""
        with self._lock:
            return [c.server.name for c in self._connections.values() if c.running]


RUNTIME = Runtime()
"""The process's connections."""
atexit.register(RUNTIME.stop_all)
