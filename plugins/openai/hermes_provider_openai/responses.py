"""The OpenAI Responses API (``codex_responses``): hermes messages to ``instructions`` and
``input`` items, and the response (whole or streamed) back to a hermes message.

Calls are stateless (``store: false``). Reasoning items the API returns are kept on the
assistant message under :data:`REPLAY_KEY` and sent back, before that message's text and
function calls, on every later request (with their ``encrypted_content``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import ModelRequest, ModelResponse, ProviderError, Usage

from . import tool_search
from .chat import assistant_message, get, tool_call_dict, wire_messages

REPLAY_KEY = "_responses_items"
INCLUDE = ["reasoning.encrypted_content"]


# --- the request -------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text") or "")
            for p in content
            if isinstance(p, Mapping) and p.get("type") in ("text", "input_text", "output_text")
        )
    return "" if content is None else str(content)


def _user_content(content: Any) -> Any:
    """Chat content parts as Responses input parts (text and images); strings stay strings."""
    if not isinstance(content, list):
        return _text_of(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            parts.append({"type": "input_text", "text": str(part.get("text") or "")})
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            converted = {"type": "input_image", "image_url": url}
            if isinstance(image, Mapping) and image.get("detail"):
                converted["detail"] = image["detail"]
            parts.append(converted)
        elif isinstance(part, Mapping):
            parts.append(dict(part))
    return parts


def replay_items(source: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The reasoning items stored on an assistant message, ready to be sent again.

    Items without ``encrypted_content`` are left out: with ``store: false`` the API cannot
    resolve them by id and would reject the request.
    """
    if not source:
        return []
    items = source.get(REPLAY_KEY) or []
    out = []
    for item in items:
        if not isinstance(item, Mapping) or item.get("type") != "reasoning":
            continue
        if not item.get("encrypted_content"):
            continue
        out.append({k: v for k, v in item.items() if k != "status"})
    return out


def build_input(
    request: ModelRequest, native: bool = False
) -> tuple[str | None, list[dict[str, Any]]]:
    """``(instructions, input items)`` for ``request``; with ``native``, the model's tool
    searches go back as ``tool_search_call``/``tool_search_output`` items
    (:mod:`.tool_search`)."""
    messages = wire_messages(request.messages)
    instructions: str | None = None
    start = 0
    if messages and messages[0].get("role") == "system":
        instructions = _text_of(messages[0].get("content"))
        start = 1
    source = request.source_messages
    offset = len(messages) - len(source)
    items: list[dict[str, Any]] = []
    searches: set[Any] = set()
    for index in range(start, len(messages)):
        message = messages[index]
        role = message.get("role")
        origin = source[index - offset] if 0 <= index - offset < len(source) else None
        if origin is not None and origin.get("role") != role:
            origin = None
        if role == "assistant":
            items.extend(replay_items(origin))
            text = _text_of(message.get("content"))
            if text:
                items.append({"role": "assistant", "content": text})
            marks = _call_marks(origin) if native else {}
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                mark = marks.get(call.get("id")) or {}
                if mark.get(tool_search.SEARCH_MARK):
                    searches.add(call.get("id"))
                    items.append(tool_search.search_call_item(call))
                    continue
                item = {
                    "type": "function_call",
                    "call_id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": function.get("arguments") or "{}",
                }
                if mark.get(tool_search.NAMESPACE_MARK):
                    item["namespace"] = mark[tool_search.NAMESPACE_MARK]
                items.append(item)
        elif role == "tool" and message.get("tool_call_id") in searches:
            items.append(
                tool_search.search_output_item(request, message.get("tool_call_id"), origin)
            )
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": _text_of(message.get("content")),
                }
            )
        elif role == "user":
            items.append({"role": "user", "content": _user_content(message.get("content"))})
        else:  # a later system or developer message
            items.append({"role": role, "content": _text_of(message.get("content"))})
    return instructions, items


def _call_marks(origin: Mapping[str, Any] | None) -> dict[Any, Mapping[str, Any]]:
    """The stored calls of the assistant message ``origin``, by id (their internal marks)."""
    calls = (origin or {}).get("tool_calls") or []
    return {c.get("id"): c for c in calls if isinstance(c, Mapping)}


def convert_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-completions function schemas as Responses function tools (never strict: hermes
    schemas are ordinary JSON schemas)."""
    out = []
    for tool in tools:
        function = tool.get("function") or tool
        converted: dict[str, Any] = {"type": "function", "name": function.get("name")}
        if function.get("description"):
            converted["description"] = function["description"]
        converted["parameters"] = function.get("parameters") or {
            "type": "object",
            "properties": {},
        }
        converted["strict"] = False
        out.append(converted)
    return out


def build_body(
    request: ModelRequest, settings: Any, *, stream: bool, native: bool = True
) -> dict[str, Any]:
    """The JSON body of a Responses call for ``request``; with ``native`` and deferred tools
    (``tools.defer``), they go as the API's own tool search (:mod:`.tool_search`)."""
    native = native and tool_search.wanted(request, getattr(settings, "config", None) or {})
    request.deferred_sent = native
    instructions, items = build_input(request, native)
    body: dict[str, Any] = {"model": request.model}
    if instructions is not None:
        body["instructions"] = instructions
    body["input"] = items
    if request.tools:
        body["tools"] = convert_tools(request.tools)
        if native:
            body["tools"] += tool_search.deferred_tools(request)
    body["store"] = False
    body["include"] = list(INCLUDE)
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    body.update(request.options)
    if stream:
        body["stream"] = True
    return body


# --- the response ------------------------------------------------------------------------------


def item_dict(item: Any) -> dict[str, Any]:
    """An output item as a plain JSON dict."""
    if isinstance(item, Mapping):
        return {k: v for k, v in item.items() if v is not None}
    dump = getattr(item, "model_dump", None)
    if dump is not None:
        dumped: dict[str, Any] = dump(mode="json", exclude_none=True)
        return dumped
    return dict(vars(item))


def usage_from(usage: Any) -> Usage:
    """Token counts from a Responses ``usage`` object."""
    if usage is None:
        return Usage()
    input_details = get(usage, "input_tokens_details")
    return Usage(
        input_tokens=int(get(usage, "input_tokens", 0)),
        output_tokens=int(get(usage, "output_tokens", 0)),
        cache_read_tokens=int(get(input_details, "cached_tokens", 0)),
        cache_write_tokens=int(get(input_details, "cache_write_tokens", 0)),
        reasoning_tokens=int(get(get(usage, "output_tokens_details"), "reasoning_tokens", 0)),
    )


def finish_reason(response: Any, has_calls: bool) -> str:
    """``tool_calls`` with function calls; ``length``/``content_filter`` for an incomplete
    response cut short for that reason; else ``stop``."""
    if has_calls:
        return "tool_calls"
    if get(response, "status") == "incomplete":
        reason = get(get(response, "incomplete_details"), "reason")
        if reason == "max_output_tokens":
            return "length"
        if reason == "content_filter":
            return "content_filter"
    return "stop"


def parse_response(response: Any, output: list[Any] | None = None) -> ModelResponse:
    """A Responses ``response`` object as a :class:`ModelResponse` (``output`` overrides the
    response's own output items, for streams whose final event carries none)."""
    if get(response, "status") == "failed":
        from .errors import from_body

        raise from_body(get(response, "error"), fallback="the response failed")
    items = output if output is not None else (get(response, "output") or [])
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    thoughts: list[str] = []
    replay: list[dict[str, Any]] = []
    for item in items:
        kind = get(item, "type")
        if kind == "message":
            parts = [
                str(get(p, "text") or get(p, "refusal") or "")
                for p in get(item, "content") or []
                if get(p, "type") in ("output_text", "refusal")
            ]
            if any(parts):
                texts.append("".join(parts))
        elif kind == "function_call":
            call = tool_call_dict(get(item, "call_id"), get(item, "name"), get(item, "arguments"))
            if get(item, "namespace"):
                call[tool_search.NAMESPACE_MARK] = str(get(item, "namespace"))
            calls.append(call)
        elif kind == "tool_search_call" and get(item, "execution") == "client":
            call_id = tool_call_dict(get(item, "call_id"), "", "")["id"]
            calls.append(tool_search.call_from_item(item_dict(item), call_id))
        elif kind == "reasoning":
            summary = [str(get(s, "text", "")) for s in get(item, "summary") or []]
            content = [str(get(c, "text", "")) for c in get(item, "content") or []]
            thought = "\n\n".join(t for t in summary if t) or "\n".join(t for t in content if t)
            if thought:
                thoughts.append(thought)
            replay.append(item_dict(item))
    message = assistant_message("\n\n".join(texts), calls, "\n\n".join(thoughts) or None)
    if replay:
        message[REPLAY_KEY] = replay
    return ModelResponse(
        message=message,
        finish_reason=finish_reason(response, bool(calls)),
        usage=usage_from(get(response, "usage")),
        model=str(get(response, "model", "")),
        raw=response,
    )


class ResponsesStream:
    """Accumulates Responses stream events, emitting deltas as they come, into one response.

    The final ``response.completed`` (or ``response.incomplete``) event is authoritative; the
    items seen on the way are used only when that event carries no output. A stream that ends
    without one fails with a retryable error.
    """

    def __init__(self, request: ModelRequest) -> None:
        self.request = request
        self.final: Any = None
        self.items: dict[int, dict[str, Any]] = {}
        self.arguments: dict[int, list[str]] = {}
        self.calls_started = 0

    def feed(self, event: Any) -> None:
        """Take one event."""
        kind = get(event, "type")
        emit = self.request.emit
        if kind == "response.output_text.delta":
            delta = get(event, "delta", "")
            if delta:
                emit("text_delta", text=delta)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            delta = get(event, "delta", "")
            if delta:
                emit("reasoning_delta", text=delta)
        elif kind == "response.output_item.added":
            item = get(event, "item")
            position = int(get(event, "output_index", len(self.items)))
            self.items[position] = item_dict(item)
            if get(item, "type") == "function_call":
                emit(
                    "tool_call_started",
                    index=self.calls_started,
                    id=get(item, "call_id"),
                    name=get(item, "name"),
                )
                self.calls_started += 1
        elif kind == "response.function_call_arguments.delta":
            position = int(get(event, "output_index", 0))
            self.arguments.setdefault(position, []).append(str(get(event, "delta", "")))
        elif kind == "response.output_item.done":
            position = int(get(event, "output_index", len(self.items)))
            self.items[position] = item_dict(get(event, "item"))
            self.arguments.pop(position, None)
        elif kind in ("response.completed", "response.incomplete", "response.done"):
            self.final = get(event, "response")
        elif kind == "response.failed":
            from .errors import from_body

            raise from_body(get(get(event, "response"), "error"), fallback="the response failed")
        elif kind == "error":
            from .errors import from_body

            raise from_body(item_dict(event))

    def result(self) -> ModelResponse:
        """The whole response, once the stream has ended."""
        if self.final is None:
            raise ProviderError(
                "the stream ended before the response was completed", kind="connection"
            )
        output = get(self.final, "output")
        if output:
            return parse_response(self.final)
        seen = []
        for position in sorted(self.items):
            item = dict(self.items[position])
            if position in self.arguments:  # never finished: take what streamed
                item["arguments"] = "".join(self.arguments[position])
            seen.append(item)
        return parse_response(self.final, seen)
