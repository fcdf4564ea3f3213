"""Token estimates without a tokenizer: about 4 characters per token.

Only what reaches the provider is counted (content, tool call names and arguments); internal
fields such as ``reasoning`` are not sent and cost nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
"""Tokens every message costs beyond its text (role, separators)."""
CALL_OVERHEAD = 8
"""Tokens every tool call costs beyond its name and arguments (id, type)."""
IMAGE_TOKENS = 800
"""A flat cost for an image part, whatever the size of its data URL."""

_IMAGE_PARTS = frozenset({"image_url", "image", "input_image"})


def text_of(content: Any) -> str:
    """The text of a message's content: a string as is, the text parts of a list joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") not in _IMAGE_PARTS:
                text = part.get("text")
                if text:
                    texts.append(str(text))
        return "\n".join(texts)
    return str(content)


def content_chars(content: Any) -> int:
    """Characters of ``content``, an image counting as :data:`IMAGE_TOKENS` tokens."""
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict):
                if part.get("type") in _IMAGE_PARTS:
                    total += IMAGE_TOKENS * CHARS_PER_TOKEN
                else:
                    total += len(str(part.get("text") or ""))
            else:
                total += len(str(part))
        return total
    return len(str(content))


def message_tokens(message: dict[str, Any]) -> int:
    """Estimated tokens of one message."""
    content = message.get("content")
    chars = len(content) if type(content) is str else content_chars(content)
    calls = message.get("tool_calls")
    if calls:
        return _with_calls(chars, calls)
    return MESSAGE_OVERHEAD + chars // CHARS_PER_TOKEN


def _with_calls(chars: int, calls: Any) -> int:
    """Estimated tokens of a message with ``chars`` characters of content and ``calls``."""
    tokens = MESSAGE_OVERHEAD
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            chars += len(str(function.get("name") or ""))
            chars += len(str(function.get("arguments") or ""))
        tokens += CALL_OVERHEAD
    return tokens + chars // CHARS_PER_TOKEN


def estimate(messages: Iterable[dict[str, Any]]) -> int:
    """Estimated tokens of ``messages``: the sum of their :func:`message_tokens`."""
    return sum(message_tokens(message) for message in messages if isinstance(message, dict))
