"""Protocol version 2 (draft) on one connection, when ``acp.protocol_v2`` allows it and the
client asks for it on ``initialize``.

What differs from version 1, and only that, lives here: ``session/prompt`` is answered once
the prompt is accepted (``{}``), the turn then reports the accepted user message, its
``state_update`` (``running``, ``requires_action`` while a permission question waits, ``idle``
with the stop reason), and its output as keyed upserts (messages by ``messageId``, tool calls by
``toolCallId``, the plan by its id). Version 2 has no client file system, terminals or session
modes. The protocol SDK speaks version 1 only: version 2 updates are written as plain frames
through its connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from acp.interfaces import Client

VERSION = 2
"""The draft protocol version."""

Send = Callable[[str, Any], Awaitable[None]]
"""``send(session_id, update)``: one ``session/update`` to the client."""


def message_id(kind: str) -> str:
    """A fresh, opaque message id."""
    return f"msg_{kind}_{uuid.uuid4().hex[:12]}"


def _plain(update: Any) -> dict[str, Any]:
    if hasattr(update, "model_dump"):
        dumped: dict[str, Any] = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped
    return dict(update) if isinstance(update, Mapping) else {}


class Upserts:
    """Turns the version 1 updates hermes makes into version 2 ones, per session: chunks of one
    message share its ``messageId`` until another kind of update comes; a tool call's start is
    the first upsert of its ``toolCallId``; the todo list is one plan, replaced each time."""

    CHUNKS = {
        "agent_message_chunk": "agent",
        "agent_thought_chunk": "thought",
        "user_message_chunk": "user",
    }

    def __init__(self) -> None:
        self._open: dict[str, tuple[str, str]] = {}

    def convert(self, session_id: str, update: Any) -> dict[str, Any] | None:
        """The version 2 form of ``update`` (``None``: version 2 has no such update)."""
        data = _plain(update)
        kind = str(data.get("sessionUpdate"))
        if kind in self.CHUNKS:
            current = self._open.get(session_id)
            if current is None or current[0] != kind:
                current = (kind, message_id(self.CHUNKS[kind]))
                self._open[session_id] = current
            data["messageId"] = current[1]
            return data
        self._open.pop(session_id, None)
        if kind == "current_mode_update":
            return None  # no session modes in version 2: the mode is a config option
        if kind == "tool_call":
            data["sessionUpdate"] = "tool_call_update"
        elif kind == "plan":
            plan = {"type": "items", "id": f"plan_{session_id}", "entries": data.get("entries")}
            data = {"sessionUpdate": "plan_update", "plan": plan}
        return data


def sender(conn: Client, upserts: Upserts) -> Send:
    """Sends updates as version 2 frames through the SDK's connection ``conn``."""
    inner = conn._conn  # type: ignore[attr-defined]  # the SDK models version 1 only

    async def send(session_id: str, update: Any) -> None:
        converted = upserts.convert(session_id, update)
        if converted is not None:
            params = {"sessionId": session_id, "update": converted}
            await inner.send_notification("session/update", params)

    return send


def state(name: str, stop_reason: str | None = None) -> dict[str, Any]:
    """A ``state_update``: ``running``, ``requires_action`` or ``idle`` (with why it stopped)."""
    update: dict[str, Any] = {"sessionUpdate": "state_update", "state": name}
    if stop_reason is not None:
        update["stopReason"] = stop_reason
    return update


def user_message(blocks: list[Any]) -> dict[str, Any]:
    """The accepted user message, as the upsert that gives it its id."""
    return {
        "sessionUpdate": "user_message",
        "messageId": message_id("user"),
        "content": [_plain(b) for b in blocks],
    }


def asking(send: Send, session_id: str, ask: Callable[..., Awaitable[Any]]) -> Any:
    """``ask`` (``request_permission``) reporting ``requires_action`` while the person decides,
    and ``running`` again after."""

    async def request(*args: Any, **kwargs: Any) -> Any:
        await send(session_id, state("requires_action"))
        try:
            return await ask(*args, **kwargs)
        finally:
            await send(session_id, state("running"))

    return request
