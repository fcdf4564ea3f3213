"""The stdio connection of ``hermes acp``: frames in on stdin, out on a private stdout."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from acp import RequestError
from acp.agent.connection import AgentSideConnection
from acp.connection import StreamDirection, StreamEvent

from hermes_hookspecs import CommandContext

from .server import HermesAgent
from .settings import Settings

log = logging.getLogger("hermes.acp")

Handler = Callable[[str, Any, bool], Awaitable[Any]]

STDIN_LIMIT = 64 * 1024 * 1024
"""The longest frame read (a prompt with images can be large)."""


class _Drain(asyncio.streams.FlowControlMixin, asyncio.Protocol):
    """Write protocol of the private stdout (``drain`` waits when the pipe is full)."""


async def _streams(
    private: int, prelude: bytes
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIN_LIMIT)
    if prelude:
        reader.feed_data(prelude)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(_Drain, os.fdopen(private, "wb", 0))
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def _with_extras(agent: HermesAgent, router: Handler, prompts: dict[Any, str]) -> Handler:
    """The SDK's router, with the methods it does not route yet: ``session/delete``,
    ``logout`` and ``$/cancel_request``."""

    async def handle(method: str, params: Any, is_notification: bool) -> Any:
        if method == "session/delete":
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            if not isinstance(session_id, str):
                raise RequestError.invalid_params({"details": "sessionId is required"})
            return await agent.delete_session(session_id)
        if method == "logout":
            return await agent.logout()
        if method == "$/cancel_request":
            agent.cancel_request(params if isinstance(params, dict) else None, prompts)
            return None
        return await router(method, params, is_notification)

    return handle


OPENING = frozenset({"session/new", "session/load", "session/resume"})
"""The requests after whose answer a session's commands are announced."""


def _prompt_tracker(
    prompts: dict[Any, str],
    opened: Callable[[str], Awaitable[None]],
    answered: Callable[[str], None],
) -> Callable[[StreamEvent], Awaitable[None] | None]:
    """Remember which request id is which session's prompt (for ``$/cancel_request``); once a
    session is opened and the answer sent, call ``opened`` with its id; once a prompt is
    answered, ``answered``."""
    opening: dict[Any, str] = {}

    def observe(event: StreamEvent) -> Awaitable[None] | None:
        message = event.message
        if event.direction is StreamDirection.INCOMING:
            params = message.get("params") or {}
            if message.get("method") == "session/prompt" and "id" in message:
                prompts[message["id"]] = str(params.get("sessionId"))
            elif message.get("method") in OPENING and "id" in message:
                opening[message["id"]] = str(params.get("sessionId") or "")
        elif "id" in message and "method" not in message:
            prompted = prompts.pop(message["id"], None)
            if prompted is not None:
                answered(prompted)
            if message["id"] in opening:
                session_id = opening.pop(message["id"])
                result = message.get("result")
                if isinstance(result, dict):
                    return opened(str(result.get("sessionId") or session_id))
        return None

    return observe


async def serve(
    context: CommandContext,
    settings: Settings,
    private: int,
    prelude: bytes = b"",
    hello: Mapping[str, Any] | None = None,
) -> None:
    """Serve one client until it closes stdin (``prelude``: bytes of it already read;
    ``hello``: the params of the ``initialize`` already answered); turns still running are
    interrupted."""
    reader, writer = await _streams(private, prelude)
    agent = HermesAgent(context, settings)
    if hello is not None:
        version = hello.get("agreedVersion")
        agent.remember_client(
            hello.get("clientCapabilities"), version if isinstance(version, int) else 1
        )
    prompts: dict[Any, str] = {}
    conn = AgentSideConnection(
        agent,
        writer,
        reader,
        listening=False,
        use_unstable_protocol=True,
        observers=[_prompt_tracker(prompts, agent.announce_commands, agent.prompt_answered)],
    )
    inner = conn._conn  # the SDK routes neither session/delete nor $/cancel_request yet
    inner._handler = _with_extras(agent, inner._handler, prompts)
    try:
        await conn.listen()
    finally:
        for session in list(agent.sessions.values()):
            session.cancel.set()
        turns = [s.turn for s in agent.sessions.values() if s.turn is not None]
        if turns:
            await asyncio.wait(turns, timeout=10)
        log.info("client gone; %d session(s) closed", len(agent.sessions))
