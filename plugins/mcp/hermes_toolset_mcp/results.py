"""What an MCP tool call returned, as the text of a hermes tool result."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from hermes_hookspecs import ToolError


def result_text(result: Any) -> str:
    """The text of a ``CallToolResult``: each content block on its own, in order; raises
    :class:`ToolError` with that text when the server flagged the result as an error."""
    parts = [_block_text(block) for block in getattr(result, "content", None) or ()]
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(parts):
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    text = "\n".join(p for p in parts if p)
    if getattr(result, "is_error", False):
        raise ToolError(text or "the MCP tool reported an error without a message")
    return text or "(the tool returned no output)"


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        size = _decoded_size(getattr(block, "data", ""))
        mime = getattr(block, "mime_type", None) or kind
        return f"[{kind} {mime}, {size} bytes: binary content is not shown to the model]"
    if kind == "resource_link":
        label = getattr(block, "title", None) or getattr(block, "name", "") or "resource"
        mime = getattr(block, "mime_type", None)
        return f"[resource link: {label} <{block.uri}>{f' ({mime})' if mime else ''}]"
    if kind == "resource":
        resource = block.resource
        mime = getattr(resource, "mime_type", None)
        if getattr(resource, "text", None) is not None:
            return f"[resource <{resource.uri}>{f' ({mime})' if mime else ''}]\n{resource.text}"
        size = _decoded_size(getattr(resource, "blob", ""))
        return f"[resource <{resource.uri}> {mime or 'binary'}, {size} bytes: not shown]"
    return f"[{kind or 'unknown'} content: not shown]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data or "", validate=False))
    except (binascii.Error, ValueError):
        return len(data or "")
