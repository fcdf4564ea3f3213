"""Message and tool content in the conventions' shapes (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.system_instructions``), as JSON text: recorded only when
content capture is opted in."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

MAX_CHARS = 64_000
"""Longest text recorded in one attribute; the rest is cut (backends refuse huge spans)."""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "…"


def dumps(value: Any) -> str:
    """``value`` as compact JSON text, cut to :data:`MAX_CHARS`."""
    return _cut(json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":")))


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else [content]:
        if not isinstance(part, Mapping):
            parts.append({"type": "text", "content": str(part)})
        elif part.get("type") == "text":
            parts.append({"type": "text", "content": str(part.get("text", ""))})
        elif part.get("type") in ("image_url", "image"):
            parts.append({"type": "uri", "modality": "image", "uri": "(image)"})
        else:
            parts.append({"type": str(part.get("type") or "unknown")})
    return parts


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def message_parts(message: Mapping[str, Any]) -> dict[str, Any]:
    """One OpenAI-format message as the conventions' ``{role, parts}``."""
    role = str(message.get("role") or "user")
    if role == "tool":
        return {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "response": message.get("content"),
                }
            ],
        }
    parts = _text_parts(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": _arguments(function.get("arguments")),
            }
        )
    return {"role": role, "parts": parts}


def input_messages(messages: Iterable[Mapping[str, Any]]) -> str:
    """``gen_ai.input.messages``: the request's messages, the system prompt left out (it is
    ``gen_ai.system_instructions``)."""
    return dumps([message_parts(m) for m in messages if m.get("role") != "system"])


def system_instructions(prompt: str | None) -> str | None:
    """``gen_ai.system_instructions`` of a system prompt, or ``None`` without one."""
    return dumps([{"type": "text", "content": prompt}]) if prompt else None


def output_messages(message: Mapping[str, Any], finish_reason: str) -> str:
    """``gen_ai.output.messages``: the assistant message with its finish reason."""
    out = message_parts({**message, "role": "assistant"})
    out["finish_reason"] = finish_reason
    return dumps([out])


def tool_definitions(tools: Iterable[Mapping[str, Any]]) -> str:
    """``gen_ai.tool.definitions``: the offered tools (name, description, parameters)."""
    return dumps(
        [
            {
                "type": "function",
                "name": (t.get("function") or {}).get("name"),
                "description": (t.get("function") or {}).get("description"),
                "parameters": (t.get("function") or {}).get("parameters"),
            }
            for t in tools
        ]
    )
