"""What the fake server checks of tool search in a request, as the real APIs do: deferred tool
definitions (``defer_loading``), and the references that load them (Anthropic's
``tool_reference`` blocks). A request that breaks a rule gets the 400 the API would give; a
server started with ``native_tool_search=False`` refuses the fields, like an API (or a proxy)
that does not know them."""

from __future__ import annotations

from typing import Any

_REFERENCE_KEYS = frozenset({"type", "tool_name", "cache_control"})


def problem(wire: str | None, body: Any, native: bool) -> str | None:
    """Why the API of ``wire`` would refuse ``body`` for its tool search fields, else ``None``."""
    if not isinstance(body, dict):
        return None
    if wire == "anthropic_messages":
        return _anthropic(body, native)
    if wire == "codex_responses":
        return _responses(body, native)
    return None


def _responses(body: dict[str, Any], native: bool) -> str | None:
    """The Responses API's rules: deferred functions need a ``tool_search`` tool; a
    ``tool_search_output`` answers an earlier ``tool_search_call`` and loads only deferred
    functions of the request, in their namespace."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    kinds = {t.get("type") for t in tools}
    deferred: dict[str, str] = {}  # name -> namespace ("" at the top level)
    for tool in tools:
        inner = tool.get("tools") if tool.get("type") == "namespace" else [tool]
        for fn in inner or []:
            if isinstance(fn, dict) and fn.get("defer_loading") is True:
                deferred[str(fn.get("name"))] = str(tool.get("name") or "")
    if not native and (deferred or kinds & {"tool_search", "namespace"}):
        return "Invalid value: 'tool_search'. Supported values are: 'function', ..."
    if deferred and "tool_search" not in kinds:
        return "tools: deferred functions (defer_loading) need a tool_search tool"
    searches: set[Any] = set()
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "tool_search_call":
            searches.add(item.get("call_id"))
        elif item.get("type") == "tool_search_output":
            if not native:
                return "Invalid value: 'tool_search_output'."
            if item.get("call_id") not in searches:
                return f"input: no tool_search_call for tool_search_output {item.get('call_id')}"
            refused = _loaded(item.get("tools") or [], deferred)
            if refused is not None:
                return refused
    return None


def _loaded(tools: list[Any], deferred: dict[str, str]) -> str | None:
    """Why the tools a ``tool_search_output`` loads would be refused."""
    for tool in tools:
        inner = tool.get("tools") if tool.get("type") == "namespace" else [tool]
        space = str(tool.get("name") or "") if tool.get("type") == "namespace" else ""
        for fn in inner or []:
            name = str(fn.get("name"))
            if deferred.get(name, None) != space:
                return f"tool_search_output: '{name}' is not a deferred function of {space!r}"
    return None


def _anthropic(body: dict[str, Any], native: bool) -> str | None:
    tools = body.get("tools") or []
    deferred = {t.get("name") for t in tools if isinstance(t, dict) and "defer_loading" in t}
    if deferred and not native:
        return "tools.0.defer_loading: Extra inputs are not permitted"
    for tool in tools:
        if isinstance(tool, dict) and "defer_loading" in tool:
            if tool["defer_loading"] is not True and tool["defer_loading"] is not False:
                return f"tools: defer_loading of '{tool.get('name')}' must be a boolean"
    if tools and all(isinstance(t, dict) and t.get("defer_loading") is True for t in tools):
        return "tools: at least one tool must not have defer_loading: true"
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_reference":
                return "messages: tool_reference blocks are only allowed inside a tool_result"
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                refused = _references(block["content"], deferred, native)
                if refused is not None:
                    return refused
    return None


def _references(parts: list[Any], deferred: set[Any], native: bool) -> str | None:
    """Why the ``tool_reference`` blocks of one tool result's content would be refused."""
    for part in parts:
        if not isinstance(part, dict) or part.get("type") != "tool_reference":
            continue
        if not native:
            return "tool_reference: Input tag 'tool_reference' is not permitted"
        if set(part) - _REFERENCE_KEYS or not isinstance(part.get("tool_name"), str):
            return f"tool_reference: unexpected fields {sorted(set(part))}"
        if part["tool_name"] not in deferred:
            return (
                f"tool_reference: tool '{part['tool_name']}' is not a deferred tool of this request"
            )
    return None
