"""Native tool search on the Messages API: the deferred tools of a request
(:attr:`ModelRequest.deferred_tools`) go with ``defer_loading: true``, so the API keeps them
out of the model's context, and the tools hermes's own search (``find_tools``) found come back
as ``tool_reference`` blocks of its tool result, which load them for the model.

hermes runs the search itself (the API's "custom tool search"); no server tool is needed. A
server that refuses these fields gets the portable request instead, for the rest of the
client's life (:func:`refuses_native`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import ModelRequest, ProviderError
from hermes_hookspecs.providers import FOUND_TOOLS_FIELD

_NATIVE_WORDS = ("defer_loading", "tool_reference")


def wanted(request: ModelRequest, config: Mapping[str, Any]) -> bool:
    """Whether ``request`` has deferred tools and ``tools.defer.backend`` allows native."""
    if not request.deferred_tools:
        return False
    tools_cfg = config.get("tools")
    defer = tools_cfg.get("defer") if isinstance(tools_cfg, Mapping) else None
    backend = defer.get("backend", "auto") if isinstance(defer, Mapping) else "auto"
    return backend != "portable"


def deferred_definitions(request: ModelRequest) -> list[dict[str, Any]]:
    """The Anthropic definitions of the deferred tools, each with ``defer_loading: true``."""
    out = []
    for tool in request.deferred_tools:
        fn = tool.get("function", tool)
        entry: dict[str, Any] = {"name": fn["name"]}
        if fn.get("description"):
            entry["description"] = fn["description"]
        entry["input_schema"] = fn.get("parameters") or {"type": "object", "properties": {}}
        entry["defer_loading"] = True
        out.append(entry)
    return out


def add_references(messages: list[dict[str, Any]], request: ModelRequest) -> None:
    """Give the tool result of each search in ``messages`` (converted Anthropic messages) a
    ``tool_reference`` block per deferred tool it found."""
    deferred = {(t.get("function") or t).get("name") for t in request.deferred_tools}
    found: dict[str, list[str]] = {}
    for message in request.source_messages:
        names = message.get(FOUND_TOOLS_FIELD) if message.get("role") == "tool" else None
        if isinstance(names, list):
            found[str(message.get("tool_call_id"))] = [n for n in names if n in deferred]
    if not any(found.values()):
        return
    for message in messages:
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            names = found.get(str(block.get("tool_use_id"))) if isinstance(block, dict) else None
            if block.get("type") != "tool_result" or not names:
                continue
            content = block.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            refs = [{"type": "tool_reference", "tool_name": name} for name in names]
            block["content"] = [*(content or []), *refs]


def refuses_native(exc: BaseException) -> bool:
    """Whether ``exc`` is a server's refusal of the native fields (an older API, a proxy)."""
    if not isinstance(exc, ProviderError) or getattr(exc, "status", None) != 400:
        return False
    text = str(exc).lower()
    return any(word in text for word in _NATIVE_WORDS)
