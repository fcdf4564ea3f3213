"""Conversion between hermes's OpenAI-style messages and Anthropic's Messages wire format.

Pure functions on plain data: nothing here imports the SDK, so every rule is unit-testable.
Response objects may be SDK models or plain dicts (fields are read with :func:`field`).

Choices where the API leaves room (also in the README):

- an assistant message with neither text nor tool calls is dropped, and the user messages on
  either side of it merge into one (Anthropic needs alternating roles and rejects empty content);
- an empty tool result is sent as a ``tool_result`` block without ``content``;
- when a request offers no tools but the history holds tool calls (e.g. a final summary request),
  tool calls and results are sent as text, because the API refuses ``tool_use`` blocks without
  tool definitions;
- replayed thinking blocks go first in the assistant's content, then its text, then its tool
  calls (the API requires the signed blocks before the tool use they led to).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from hermes_hookspecs import ModelRequest, ModelResponse, Usage

THINKING_KEY = "_anthropic_thinking"
"""Key of the assistant message under which signed thinking blocks are kept for replay."""

DEFAULT_MAX_TOKENS = 8192
MAX_CACHE_MESSAGES = 3
CACHEABLE_BLOCKS = frozenset(
    {"text", "image", "document", "tool_use", "tool_result", "search_result"}
)

STOP_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}

# request.options keys passed through unchanged (Anthropic parameter names)
_PASSTHROUGH_OPTIONS = (
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "metadata",
    "tool_choice",
    "service_tier",
)


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a mapping, ``obj.name`` otherwise; ``default`` when missing or None."""
    value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
    return default if value is None else value


# --- request ------------------------------------------------------------------------------


def build_params(
    request: ModelRequest, config: Mapping[str, Any] | None = None, *, native: bool = True
) -> dict[str, Any]:
    """The keyword arguments of ``client.messages.create`` for ``request``.

    ``config`` is the effective hermes configuration (``ProviderSettings.config``): it supplies
    ``model.max_tokens``, ``prompt_caching`` (``enabled``, default true; ``cache_ttl``,
    ``"5m"`` or ``"1h"``) and ``tools.defer.backend``. With ``native``, the request's deferred
    tools go with ``defer_loading`` and searches' results with ``tool_reference`` blocks
    (:mod:`.tool_search`).
    """
    from . import tool_search

    config = config or {}
    system, messages = convert_messages(
        request.messages, request.source_messages, tools_offered=bool(request.tools)
    )
    tools = convert_tools(request.tools)
    request.deferred_sent = native and bool(request.tools) and tool_search.wanted(request, config)
    if request.deferred_sent:
        tools += tool_search.deferred_definitions(request)
        tool_search.add_references(messages, request)
    caching = config.get("prompt_caching") or {}
    if caching.get("enabled", True):
        apply_cache_control(system, messages, caching.get("cache_ttl") or "5m")

    model_cfg = config.get("model")
    if not isinstance(model_cfg, Mapping):
        model_cfg = {}
    max_tokens = int(request.max_tokens or model_cfg.get("max_tokens") or DEFAULT_MAX_TOKENS)
    params: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens}
    if system:
        params["system"] = system
    params["messages"] = messages
    if tools:
        params["tools"] = tools
    options = dict(request.options or {})
    for key in _PASSTHROUGH_OPTIONS:
        if options.get(key) is not None:
            params[key] = options[key]
    if options.get("stop") is not None and "stop_sequences" not in params:
        stop = options["stop"]
        params["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    thinking = thinking_param(options.get("thinking"))
    if thinking is not None:
        params["thinking"] = thinking
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and params["max_tokens"] <= budget:
            # the API requires max_tokens > budget_tokens: leave room for the answer
            params["max_tokens"] = budget + DEFAULT_MAX_TOKENS
    return params


def thinking_param(value: Any) -> dict[str, Any] | None:
    """The ``thinking`` parameter from the ``thinking`` option: a token budget (int), a full
    dict (sent as given), ``"adaptive"``, or false/None/0 (not sent)."""
    if value is None or value is False:
        return None
    if isinstance(value, bool):  # True: a modest default budget
        return {"type": "enabled", "budget_tokens": 4096}
    if isinstance(value, int):
        return {"type": "enabled", "budget_tokens": value} if value > 0 else None
    if isinstance(value, str):
        if value in ("adaptive", "disabled"):
            return {"type": value}
        if value.isdigit():
            return thinking_param(int(value))
        return None
    if isinstance(value, Mapping):
        return dict(value)
    return None


def convert_tools(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function schemas to Anthropic tool definitions, in the same order."""
    out = []
    for tool in tools or ():
        fn = tool.get("function", tool)
        schema = fn.get("parameters") or {"type": "object", "properties": {}}
        entry: dict[str, Any] = {"name": fn["name"]}
        if fn.get("description"):
            entry["description"] = fn["description"]
        entry["input_schema"] = schema
        out.append(entry)
    return out


def convert_messages(
    messages: list[dict[str, Any]],
    source_messages: list[dict[str, Any]] | None = None,
    *,
    tools_offered: bool = True,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split ``messages`` into Anthropic ``system`` blocks and alternating ``messages``.

    Every message's content is a list of blocks (so a cache marker can be attached to any of
    them); empty text is never sent; same-role neighbours are merged.
    """
    system: list[dict[str, Any]] = []
    chat = [m for m in messages if m.get("role") != "system"]
    for m in messages:
        if m.get("role") == "system":
            system.extend(content_blocks(m.get("content")))
    replay = _replay_thinking(chat, source_messages or [])
    names = {
        call.get("id"): (call.get("function") or {}).get("name", "")
        for m in chat
        for call in m.get("tool_calls") or ()
    }

    out: list[dict[str, Any]] = []
    for index, message in enumerate(chat):
        role = message.get("role")
        if role == "user":
            _append(out, "user", content_blocks(message.get("content")))
        elif role == "assistant":
            blocks = _assistant_blocks(message, tools_offered)
            if not blocks:
                continue  # nothing to say: dropped (see the module docstring)
            _append(out, "assistant", replay.get(index, []) + blocks)
        elif role == "tool":
            block = _tool_result_block(message, names, tools_offered)
            _append(out, "user", [block])
    return system, out


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """Text (or OpenAI content parts) as Anthropic content blocks, empty text left out."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, str):
            blocks.extend(content_blocks(part))
            continue
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text":
            blocks.extend(content_blocks(part.get("text")))
        elif kind == "image_url":
            image = _image_block(part.get("image_url"))
            if image:
                blocks.append(image)
        elif kind in ("image", "document"):  # already in Anthropic's shape
            blocks.append(dict(part))
    return blocks


def _image_block(image_url: Any) -> dict[str, Any] | None:
    url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
    if not isinstance(url, str) or not url:
        return None
    if url.startswith("data:") and ";base64," in url:
        header, data = url[5:].split(";base64,", 1)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": header or "image/png", "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's JSON ``arguments`` as the ``input`` object; ``{}`` when it is not one."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _assistant_blocks(message: Mapping[str, Any], tools_offered: bool) -> list[dict[str, Any]]:
    blocks = content_blocks(message.get("content"))
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        name = fn.get("name") or ""
        if tools_offered:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.get("id") or "",
                    "name": name,
                    "input": parse_arguments(fn.get("arguments")),
                }
            )
        else:
            arguments = fn.get("arguments") or "{}"
            blocks.append({"type": "text", "text": f"[called tool {name} with {arguments}]"})
    return blocks


def _tool_result_block(
    message: Mapping[str, Any], names: Mapping[Any, str], tools_offered: bool
) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, str):
        content = content_blocks(content)
    if not tools_offered:
        name = names.get(message.get("tool_call_id")) or "tool"
        text = (
            content
            if isinstance(content, str)
            else "".join(b.get("text", "") for b in content if b.get("type") == "text")
        )
        return {
            "type": "text",
            "text": f"[result of {name}]\n{text}" if text else f"[{name}: no output]",
        }
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.get("tool_call_id") or "",
    }
    if content:  # empty results go without content (the API refuses empty text)
        block["content"] = content
    return block


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add ``blocks`` as a ``role`` message, merged into the previous one when it has the same
    role; tool results stay ahead of other blocks in a user message, as the API requires."""
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        content = out[-1]["content"]
        for block in blocks:
            if block.get("type") == "tool_result":
                at = 0
                while at < len(content) and content[at].get("type") == "tool_result":
                    at += 1
                content.insert(at, block)
            else:
                content.append(block)
        return
    out.append({"role": role, "content": list(blocks)})


def _call_ids(message: Mapping[str, Any]) -> list[Any]:
    return [call.get("id") for call in message.get("tool_calls") or ()]


def _same_message(wire: Mapping[str, Any], source: Mapping[str, Any]) -> bool:
    return (
        wire.get("role") == source.get("role")
        and _call_ids(wire) == _call_ids(source)
        and (wire.get("content") or "") == (source.get("content") or "")
    )


def _replay_thinking(
    chat: list[dict[str, Any]], source: list[dict[str, Any]]
) -> dict[int, list[dict[str, Any]]]:
    """Signed thinking blocks stored on source assistant messages, by index into ``chat``.

    ``source`` is aligned with the end of ``chat`` (``ModelRequest.source_messages``); the start
    is tried too, in case a message was appended after the transcript. Each pairing is checked
    (role, tool call ids, content) before its blocks are used.
    """
    source = [m for m in source if m.get("role") != "system"]
    if not source:
        return {}
    offsets = dict.fromkeys((len(chat) - len(source), 0))
    replay: dict[int, list[dict[str, Any]]] = {}
    for index, message in enumerate(chat):
        if message.get("role") != "assistant":
            continue
        for offset in offsets:
            j = index - offset
            if 0 <= j < len(source) and _same_message(message, source[j]):
                blocks = clean_thinking_blocks(source[j].get(THINKING_KEY))
                if blocks:
                    replay[index] = blocks
                break
    return replay


def clean_thinking_blocks(blocks: Any) -> list[dict[str, Any]]:
    """The well-formed thinking blocks of ``blocks``, with only the fields the API accepts."""
    out: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "thinking" and isinstance(block.get("signature"), str):
            out.append(
                {
                    "type": "thinking",
                    "thinking": str(block.get("thinking") or ""),
                    "signature": block["signature"],
                }
            )
        elif block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
            out.append({"type": "redacted_thinking", "data": block["data"]})
    return out


def cache_marker(ttl: str = "5m") -> dict[str, str]:
    """The ``cache_control`` value for ``ttl`` (``"1h"``, else the default five minutes)."""
    marker = {"type": "ephemeral"}
    if str(ttl).strip().lower() == "1h":
        marker["ttl"] = "1h"
    return marker


def apply_cache_control(
    system: list[dict[str, Any]], messages: list[dict[str, Any]], ttl: str = "5m"
) -> int:
    """Attach prompt-cache breakpoints in place and return how many were placed (at most 4):
    the system prompt's last block, and the last block of each of the last three messages whose
    last block can carry one (thinking blocks cannot)."""
    placed = 0
    if system:
        system[-1]["cache_control"] = cache_marker(ttl)
        placed += 1
    marked = 0
    for message in reversed(messages):
        if marked >= MAX_CACHE_MESSAGES:
            break
        content = message.get("content")
        if isinstance(content, list) and content and content[-1].get("type") in CACHEABLE_BLOCKS:
            content[-1]["cache_control"] = cache_marker(ttl)
            marked += 1
    return placed + marked


# --- response -----------------------------------------------------------------------------


def finish_reason(stop_reason: str | None, has_tool_calls: bool = False) -> str:
    """Anthropic's ``stop_reason`` as one of hermes's finish reasons."""
    if stop_reason is None:
        return "tool_calls" if has_tool_calls else "stop"
    reason = STOP_REASONS.get(stop_reason, "stop")
    if reason == "stop" and has_tool_calls:
        return "tool_calls"
    return reason


def usage_from(usage: Any) -> Usage:
    """Anthropic usage as :class:`Usage`: ``input_tokens`` is the whole prompt (uncached +
    cache reads + cache writes), as the contract defines it."""
    if usage is None:
        return Usage()
    fresh = int(field(usage, "input_tokens", 0))
    read = int(field(usage, "cache_read_input_tokens", 0))
    written = int(field(usage, "cache_creation_input_tokens", 0))
    details = field(usage, "output_tokens_details")
    reasoning = int(field(details, "thinking_tokens", 0)) if details is not None else 0
    return Usage(
        input_tokens=fresh + read + written,
        output_tokens=int(field(usage, "output_tokens", 0)),
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
    )


def message_from_blocks(blocks: Iterable[Any]) -> dict[str, Any]:
    """An assistant message (hermes format) from Anthropic content blocks."""
    texts: list[str] = []
    reasoning: list[str] = []
    thinking: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        kind = field(block, "type")
        if kind == "text":
            texts.append(field(block, "text", ""))
        elif kind == "thinking":
            text = field(block, "thinking", "")
            if text:
                reasoning.append(text)
            thinking.append(
                {"type": "thinking", "thinking": text, "signature": field(block, "signature", "")}
            )
        elif kind == "redacted_thinking":
            thinking.append({"type": "redacted_thinking", "data": field(block, "data", "")})
        elif kind == "tool_use":
            raw = field(block, "partial_json")  # set by the stream reader: the exact bytes
            if raw is None or not raw.strip():
                raw = json.dumps(field(block, "input", {}), ensure_ascii=False)
            calls.append(
                {
                    "id": field(block, "id", ""),
                    "type": "function",
                    "function": {"name": field(block, "name", ""), "arguments": raw},
                }
            )
        # server tool blocks and other kinds have no hermes equivalent and are skipped
    text = "".join(texts)
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning"] = "\n\n".join(reasoning)
    if thinking:
        message[THINKING_KEY] = thinking
    return message


def parse_message(message: Any) -> ModelResponse:
    """A whole Anthropic ``Message`` (SDK object or dict) as a :class:`ModelResponse`."""
    converted = message_from_blocks(field(message, "content", []))
    return ModelResponse(
        message=converted,
        finish_reason=finish_reason(
            field(message, "stop_reason"), bool(converted.get("tool_calls"))
        ),
        usage=usage_from(field(message, "usage")),
        model=field(message, "model", ""),
        raw=message,
    )


class StreamAssembler:
    """Builds a response from Anthropic stream events (SDK objects or dicts), sending deltas to
    ``request.emit`` as they arrive.

    Only a complete stream (``message_stop`` seen) gives a response: see :attr:`complete`.
    """

    def __init__(self, request: ModelRequest | None = None) -> None:
        self.request = request
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] = {}
        self.model = ""
        self.stop_reason: str | None = None
        self.complete = False
        self._tool_count = 0
        self._json_parts: dict[int, list[str]] = {}

    def _emit(self, event: str, **data: Any) -> None:
        if self.request is not None:
            self.request.emit(event, **data)

    def _merge_usage(self, usage: Any) -> None:
        if usage is None:
            return
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = field(usage, key)
            if value is not None:
                self.usage[key] = value
        details = field(usage, "output_tokens_details")
        if details is not None:
            self.usage["output_tokens_details"] = {
                "thinking_tokens": field(details, "thinking_tokens", 0)
            }

    def feed(self, event: Any) -> None:
        """Take one stream event."""
        kind = field(event, "type")
        if kind == "message_start":
            message = field(event, "message", {})
            self.model = field(message, "model", "")
            self._merge_usage(field(message, "usage"))
        elif kind == "content_block_start":
            self._start(int(field(event, "index", 0)), field(event, "content_block", {}))
        elif kind == "content_block_delta":
            self._delta(int(field(event, "index", 0)), field(event, "delta", {}))
        elif kind == "message_delta":
            delta = field(event, "delta", {})
            if field(delta, "stop_reason") is not None:
                self.stop_reason = field(delta, "stop_reason")
            self._merge_usage(field(event, "usage"))
        elif kind == "message_stop":
            self.complete = True
        # content_block_stop, ping and unknown events carry nothing we keep

    def _start(self, index: int, block: Any) -> None:
        kind = field(block, "type")
        entry: dict[str, Any] = {"type": kind}
        if kind == "text":
            entry["text"] = field(block, "text", "")
            if entry["text"]:
                self._emit("text_delta", text=entry["text"])
        elif kind == "thinking":
            entry["thinking"] = field(block, "thinking", "")
            entry["signature"] = field(block, "signature", "")
            if entry["thinking"]:
                self._emit("reasoning_delta", text=entry["thinking"])
        elif kind == "redacted_thinking":
            entry["data"] = field(block, "data", "")
        elif kind == "tool_use":
            entry.update(
                id=field(block, "id", ""),
                name=field(block, "name", ""),
                input=field(block, "input", {}),
            )
            self._json_parts[index] = []
            self._emit(
                "tool_call_started", index=self._tool_count, id=entry["id"], name=entry["name"]
            )
            self._tool_count += 1
        self.blocks[index] = entry

    def _delta(self, index: int, delta: Any) -> None:
        entry = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = field(delta, "type")
        if kind == "text_delta":
            text = field(delta, "text", "")
            entry["text"] = entry.get("text", "") + text
            if text:
                self._emit("text_delta", text=text)
        elif kind == "thinking_delta":
            text = field(delta, "thinking", "")
            entry["thinking"] = entry.get("thinking", "") + text
            if text:
                self._emit("reasoning_delta", text=text)
        elif kind == "signature_delta":
            entry["signature"] = entry.get("signature", "") + field(delta, "signature", "")
        elif kind == "input_json_delta":
            self._json_parts.setdefault(index, []).append(field(delta, "partial_json", ""))

    def response(self) -> ModelResponse:
        """The assembled response (call once the stream is complete)."""
        blocks = []
        for index in sorted(self.blocks):
            block = dict(self.blocks[index])
            if block.get("type") == "tool_use":
                raw = "".join(self._json_parts.get(index, []))
                block["partial_json"] = raw
                block["input"] = parse_arguments(raw) if raw.strip() else block.get("input") or {}
            blocks.append(block)
        message = message_from_blocks(blocks)
        return ModelResponse(
            message=message,
            finish_reason=finish_reason(self.stop_reason, bool(message.get("tool_calls"))),
            usage=usage_from(self.usage),
            model=self.model,
            raw={"content": blocks, "stop_reason": self.stop_reason, "usage": dict(self.usage)},
        )
