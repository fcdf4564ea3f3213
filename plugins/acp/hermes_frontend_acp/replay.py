"""A stored hermes transcript as the ``session/update`` notifications that show it again
(``session/load``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ResourceContentBlock,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from .tools import kind_of, locations_of, parse_arguments, text_content, title_of

Replayed = (
    UserMessageChunk | AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress
)


def _texts(content: Any) -> Iterator[TextContentBlock | ResourceContentBlock]:
    if isinstance(content, str):
        if content:
            yield TextContentBlock(type="text", text=content)
        return
    if not isinstance(content, Sequence):
        return
    for part in content:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text" and part.get("text"):
            yield TextContentBlock(type="text", text=str(part["text"]))
        elif part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url") or "")
            if url.startswith("file://"):  # a stored image: a link, not its bytes again
                name = url.rsplit("/", 1)[-1]
                yield ResourceContentBlock(type="resource_link", uri=url, name=name)


def replay(messages: Sequence[Mapping[str, Any]], cwd: str) -> Iterator[Replayed]:
    """The updates that show ``messages`` (a session's transcript) in the editor, in order."""
    for message in messages:
        role = message.get("role")
        if role == "user":
            for block in _texts(message.get("content")):
                yield UserMessageChunk(session_update="user_message_chunk", content=block)
        elif role == "assistant":
            reasoning = message.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                yield AgentThoughtChunk(
                    session_update="agent_thought_chunk",
                    content=TextContentBlock(type="text", text=reasoning),
                )
            for block in _texts(message.get("content")):
                if isinstance(block, TextContentBlock):
                    yield AgentMessageChunk(session_update="agent_message_chunk", content=block)
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                name = str(function.get("name") or "")
                arguments = parse_arguments(function.get("arguments"))
                yield ToolCallStart(
                    session_update="tool_call",
                    tool_call_id=str(call.get("id") or ""),
                    title=title_of(name, arguments, cwd),
                    kind=kind_of(name),
                    status="in_progress",
                    locations=locations_of(name, arguments, cwd) or None,
                    raw_input=arguments,
                )
        elif role == "tool":
            content = message.get("content")
            text = content if isinstance(content, str) else ""
            yield ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=str(message.get("tool_call_id") or ""),
                status="failed" if text.startswith(("BLOCKED:", "Error")) else "completed",
                content=list(text_content(text)) or None,
            )
