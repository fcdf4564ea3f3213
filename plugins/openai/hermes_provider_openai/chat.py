"""Chat completions: the request body, prompt-cache markers, and the response (whole or streamed)
converted back to a hermes :class:`~hermes_hookspecs.ModelResponse`.

Everything here works on plain values: SDK objects are read through :func:`get`, which takes
attributes or dict keys, so the same code handles ``openai`` models and JSON dicts.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import ModelRequest, ModelResponse, ProviderError, Usage

FINISH = {
    "stop": "stop",
    "end_turn": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
}
MAX_CACHE_MARKERS = 4
_INTERNAL = ("reasoning", "finish_reason")
_WIRE_KEYS = frozenset(("role", "content", "tool_calls", "tool_call_id", "name"))
"""The keys of the messages the core sends, none of them internal."""


def get(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` or ``obj[name]``; ``default`` when missing or ``None``."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        value = obj.get(name)
    else:
        value = getattr(obj, name, None)
        if value is None:  # fields the SDK does not declare (reasoning_content, ...)
            extra = getattr(obj, "model_extra", None)
            value = extra.get(name) if extra else None
    return default if value is None else value


def new_call_id() -> str:
    """A call id for servers that send none."""
    return f"call_{uuid.uuid4().hex[:24]}"


# --- the request -------------------------------------------------------------------------------


def wants_cache_markers(settings: Any, model: str) -> bool:
    """Claude models through OpenRouter take Anthropic-style ``cache_control`` markers."""
    caching = (getattr(settings, "config", None) or {}).get("prompt_caching") or {}
    if caching.get("enabled") is False:
        return False
    via_openrouter = settings.provider == "openrouter" or "openrouter.ai" in (
        settings.base_url or ""
    )
    name = model.lower()
    return via_openrouter and ("claude" in name or "anthropic/" in name)


def cache_marker(settings: Any) -> dict[str, str]:
    """The ``cache_control`` value: ephemeral, with ``ttl: 1h`` when configured."""
    caching = (getattr(settings, "config", None) or {}).get("prompt_caching") or {}
    marker = {"type": "ephemeral"}
    if str(caching.get("cache_ttl") or "5m") == "1h":
        marker["ttl"] = "1h"
    return marker


def _can_carry(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return bool(content)
    if isinstance(content, list):
        return any(
            isinstance(p, Mapping) and p.get("type") == "text" and p.get("text") for p in content
        )
    return False


def _with_marker(message: Mapping[str, Any], marker: dict[str, str]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        parts = [{"type": "text", "text": content, "cache_control": dict(marker)}]
    else:
        parts = [dict(p) if isinstance(p, Mapping) else p for p in content]
        last = max(
            i
            for i, p in enumerate(parts)
            if isinstance(p, Mapping) and p.get("type") == "text" and p.get("text")
        )
        parts[last]["cache_control"] = dict(marker)
    return {**message, "content": parts}


def add_cache_markers(
    messages: list[dict[str, Any]], marker: dict[str, str]
) -> list[dict[str, Any]]:
    """A copy of ``messages`` with at most 4 ``cache_control`` markers: on the system prompt and
    on the last 3 other messages with text (each marker on the last text part)."""
    out = list(messages)
    chosen: list[int] = []
    if out and out[0].get("role") == "system" and _can_carry(out[0]):
        chosen.append(0)
    tail = [i for i in range(len(out)) if out[i].get("role") != "system" and _can_carry(out[i])]
    chosen += tail[-(MAX_CACHE_MARKERS - 1) :]
    for index in chosen:
        out[index] = _with_marker(out[index], marker)
    return out


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without internal fields (the core strips them; this never adds any)."""
    out = []
    for message in messages:
        # The usual case, only wire keys, is checked without a Python step per key.
        if not _WIRE_KEYS.issuperset(message) and any(
            k.startswith("_") or k in _INTERNAL for k in message
        ):
            message = {
                k: v for k, v in message.items() if not k.startswith("_") and k not in _INTERNAL
            }
        out.append(message)
    return out


def build_body(request: ModelRequest, settings: Any) -> dict[str, Any]:
    """The JSON body of a chat completions call for ``request``."""
    messages = wire_messages(request.messages)
    if wants_cache_markers(settings, request.model):
        messages = add_cache_markers(messages, cache_marker(settings))
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if request.tools:
        body["tools"] = request.tools
    if request.max_tokens is not None:
        body[max_tokens_field(settings)] = request.max_tokens
    body.update(request.options)
    if request.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def max_tokens_field(settings: Any) -> str:
    """OpenAI's own API wants ``max_completion_tokens`` (its reasoning models reject
    ``max_tokens``); every compatible server takes ``max_tokens``."""
    return (
        "max_completion_tokens" if "api.openai.com" in (settings.base_url or "") else "max_tokens"
    )


# --- the response ------------------------------------------------------------------------------


def usage_from(usage: Any) -> Usage:
    """Token counts from a chat completions ``usage`` object."""
    if usage is None:
        return Usage()
    prompt_details = get(usage, "prompt_tokens_details")
    completion_details = get(usage, "completion_tokens_details")
    cached = get(prompt_details, "cached_tokens")
    if cached is None:  # DeepSeek reports its cache hits at the top level
        cached = get(usage, "prompt_cache_hit_tokens", 0)
    return Usage(
        input_tokens=int(get(usage, "prompt_tokens", 0)),
        output_tokens=int(get(usage, "completion_tokens", 0)),
        cache_read_tokens=int(cached or 0),
        cache_write_tokens=int(get(prompt_details, "cache_write_tokens", 0)),
        reasoning_tokens=int(get(completion_details, "reasoning_tokens", 0)),
    )


def finish_reason(reason: Any, has_calls: bool) -> str:
    """One of ``stop``, ``tool_calls``, ``length``, ``content_filter``."""
    if has_calls:
        return "tool_calls"
    mapped = FINISH.get(str(reason or "stop"), "stop")
    return "stop" if mapped == "tool_calls" else mapped


def assistant_message(
    text: str | None, calls: list[dict[str, Any]], reasoning: str | None
) -> dict[str, Any]:
    """The hermes assistant message (``tool_calls`` and ``reasoning`` only when present)."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning"] = reasoning
    return message


def tool_call_dict(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A tool call in the OpenAI message format (a new id when ``call_id`` is empty)."""
    return {
        "id": str(call_id or new_call_id()),
        "type": "function",
        "function": {"name": str(name or ""), "arguments": str(arguments or "") or "{}"},
    }


def _reasoning_of(obj: Any) -> str | None:
    value = get(obj, "reasoning_content") or get(obj, "reasoning")
    return value if isinstance(value, str) and value else None


def parse_completion(completion: Any) -> ModelResponse:
    """A whole (non-streamed) chat completion as a :class:`ModelResponse`."""
    choices = get(completion, "choices") or []
    if not choices:
        error = get(completion, "error")
        from .errors import from_body

        if error is not None:
            raise from_body(error)
        raise ProviderError("the server answered with no choices", kind="server")
    choice = choices[0]
    message = get(choice, "message")
    calls = [
        tool_call_dict(
            get(c, "id"), get(get(c, "function"), "name"), get(get(c, "function"), "arguments")
        )
        for c in (get(message, "tool_calls") or [])
    ]
    content = get(message, "content") or get(message, "refusal")
    return ModelResponse(
        message=assistant_message(
            content if isinstance(content, str) else None, calls, _reasoning_of(message)
        ),
        finish_reason=finish_reason(get(choice, "finish_reason"), bool(calls)),
        usage=usage_from(get(completion, "usage")),
        model=str(get(completion, "model", "")),
        raw=completion,
    )


class _PendingCall:
    __slots__ = ("id", "name", "arguments", "started")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []
        self.started = False


class ChatStream:
    """Accumulates streamed chunks, emitting deltas as they come, into one response.

    Tool-call fragments are joined per ``index`` exactly as sent. :meth:`result` fails with a
    retryable error if the stream ended before the model said why it stopped.
    """

    def __init__(self, request: ModelRequest) -> None:
        self.request = request
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, _PendingCall] = {}
        self.finish: str | None = None
        self.usage: Any = None
        self.model = ""
        self.last: Any = None

    def feed(self, chunk: Any) -> None:
        """Take one chunk."""
        self.last = chunk
        error = get(chunk, "error")
        if error is not None:
            from .errors import from_body

            raise from_body(error)
        self.model = str(get(chunk, "model", "")) or self.model
        usage = get(chunk, "usage")
        if usage is not None:
            self.usage = usage
        for choice in get(chunk, "choices") or []:
            if get(choice, "index", 0) != 0:
                continue
            delta = get(choice, "delta")
            if delta is not None:
                self._delta(delta)
            reason = get(choice, "finish_reason")
            if reason:
                self.finish = str(reason)

    def _delta(self, delta: Any) -> None:
        emit = self.request.emit
        reasoning = _reasoning_of(delta)
        if reasoning:
            self.reasoning.append(reasoning)
            emit("reasoning_delta", text=reasoning)
        content = get(delta, "content") or get(delta, "refusal")
        if isinstance(content, str) and content:
            self.text.append(content)
            emit("text_delta", text=content)
        for fragment in get(delta, "tool_calls") or []:
            index = get(fragment, "index")
            if index is None:  # servers that send each call whole, without an index
                index = len(self.calls)
            pending = self.calls.get(index)
            if pending is None:
                pending = self.calls[index] = _PendingCall()
            call_id = get(fragment, "id")
            if call_id and not pending.id:
                pending.id = str(call_id)
            function = get(fragment, "function")
            name = get(function, "name")
            if name and not pending.name:
                pending.name = str(name)
            arguments = get(function, "arguments")
            if arguments:
                pending.arguments.append(str(arguments))
            if not pending.started and pending.name:
                pending.id = pending.id or new_call_id()
                pending.started = True
                emit("tool_call_started", index=index, id=pending.id, name=pending.name)

    def result(self) -> ModelResponse:
        """The whole response, once the stream has ended."""
        if self.finish is None:
            raise ProviderError(
                "the stream ended before the model finished its answer",
                kind="connection",
            )
        calls = [
            tool_call_dict(p.id, p.name, "".join(p.arguments))
            for _, p in sorted(self.calls.items())
        ]
        return ModelResponse(
            message=assistant_message("".join(self.text), calls, "".join(self.reasoning) or None),
            finish_reason=finish_reason(self.finish, bool(calls)),
            usage=usage_from(self.usage),
            model=self.model,
            raw=self.last,
        )
