"""Native tool search on the Responses API: the deferred tools of a request
(:attr:`ModelRequest.deferred_tools`) go with ``defer_loading: true`` inside one ``namespace``
per toolset (an MCP server), with a client-executed ``tool_search`` tool. The model's
``tool_search_call`` becomes a call of hermes's own search tool
(:data:`~hermes_hookspecs.providers.TOOL_SEARCH_NAME`), which hermes runs; its answer goes
back as a ``tool_search_output`` that loads the tools it found.

The stored call keeps :data:`SEARCH_MARK` (and a namespaced function call its ``namespace`` in
:data:`NAMESPACE_MARK`), so the history is sent back in the items the model wrote. A server
that refuses these fields gets the portable request instead (:func:`refuses_native`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from hermes_hookspecs import ModelRequest, ProviderError
from hermes_hookspecs.providers import FOUND_TOOLS_FIELD, TOOL_SEARCH_NAME

SEARCH_MARK = "_tool_search"
"""Internal field of a stored tool call that was the model's ``tool_search_call``."""
NAMESPACE_MARK = "_namespace"
"""Internal field of a stored tool call: the namespace of the function the model called."""
SEARCH_TOOL: dict[str, Any] = {
    "type": "tool_search",
    "execution": "client",
    "description": "Search the deferred tools (listed in the instructions' tool catalogue) by "
    "words; the best matches are loaded for you to call.",
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words describing the tool you need"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        },
        "required": ["query"],
    },
}
_NATIVE_WORDS = ("tool_search", "defer_loading", "namespace")


def wanted(request: ModelRequest, config: Mapping[str, Any]) -> bool:
    """Whether ``request`` has deferred tools and ``tools.defer.backend`` allows native."""
    if not request.deferred_tools or not request.tools:
        return False
    tools_cfg = config.get("tools")
    defer = tools_cfg.get("defer") if isinstance(tools_cfg, Mapping) else None
    backend = defer.get("backend", "auto") if isinstance(defer, Mapping) else "auto"
    return backend != "portable"


def namespace_of(toolset: str) -> str:
    """The namespace name of ``toolset`` (``mcp-github`` is ``mcp_github``)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", toolset or "deferred") or "deferred"


def _function(tool: Mapping[str, Any]) -> dict[str, Any]:
    fn = tool.get("function") or tool
    out: dict[str, Any] = {"type": "function", "name": fn.get("name")}
    if fn.get("description"):
        out["description"] = fn["description"]
    out["parameters"] = fn.get("parameters") or {"type": "object", "properties": {}}
    out["strict"] = False
    return out


def _namespaces(tools: Iterable[Mapping[str, Any]], deferred: bool) -> list[dict[str, Any]]:
    """``tools`` (deferred schemas) grouped in one namespace per toolset, in name order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        fn = _function(tool)
        if deferred:
            fn["defer_loading"] = True
        groups.setdefault(namespace_of(str(tool.get("toolset") or "")), []).append(fn)
    return [
        {
            "type": "namespace",
            "name": name,
            "description": f"tools of {name}",
            "tools": groups[name],
        }
        for name in sorted(groups)
    ]


def deferred_tools(request: ModelRequest) -> list[dict[str, Any]]:
    """The tools a native request adds: the namespaces of deferred tools and the search."""
    return [*_namespaces(request.deferred_tools, deferred=True), dict(SEARCH_TOOL)]


def search_call_item(call: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tool_search_call`` input item of a stored search call."""
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        arguments = {}
    return {
        "type": "tool_search_call",
        "call_id": call.get("id"),
        "arguments": arguments,
        "execution": "client",
        "status": "completed",
    }


def search_output_item(
    request: ModelRequest, call_id: Any, origin: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``tool_search_output`` input item answering search ``call_id``: the tools it found
    (:data:`~hermes_hookspecs.providers.FOUND_TOOLS_FIELD` of its stored result), loaded."""
    found = (origin or {}).get(FOUND_TOOLS_FIELD) or []
    by_name = {(t.get("function") or t).get("name"): t for t in request.deferred_tools}
    loaded = [by_name[name] for name in found if name in by_name]
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": _namespaces(loaded, deferred=False),
    }


def call_from_item(item: Mapping[str, Any], call_id: Any) -> dict[str, Any]:
    """A ``tool_search_call`` output item as a hermes tool call of the search tool."""
    arguments = item.get("arguments")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": TOOL_SEARCH_NAME, "arguments": text},
        SEARCH_MARK: True,
    }


def refuses_native(exc: BaseException) -> bool:
    """Whether ``exc`` is a server's refusal of the native fields (an older API, a proxy)."""
    if not isinstance(exc, ProviderError) or getattr(exc, "status", None) != 400:
        return False
    text = str(exc).lower()
    return any(word in text for word in _NATIVE_WORDS)
