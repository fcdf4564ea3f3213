"""Anthropic's messages wire format, whole and streamed.

:func:`message_events` yields ``(event name, data)`` pairs; the server writes them as SSE with an
``event:`` line and a ``data:`` line (the Anthropic SDK skips events without a name).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .steps import Answer, ErrorStep, Exchange

Event = tuple[str | None, Any]

_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}

_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "model: not found"),
    408: ("timeout_error", "Request timed out."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your rate limit."),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    504: ("timeout_error", "Request timed out."),
    529: ("overloaded_error", "Overloaded"),
}


def stop_reason(answer: Answer) -> str:
    """The Anthropic ``stop_reason`` of ``answer``."""
    value = answer.finish_reason or "stop"
    return _STOP.get(value, value)


def error_body(error: ErrorStep) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}, "request_id"}``, as Anthropic answers."""
    default_type, default_message = _ERRORS.get(
        error.status, ("api_error" if error.status >= 500 else "invalid_request_error", "Error.")
    )
    return {
        "type": "error",
        "error": {"type": error.type or default_type, "message": error.message or default_message},
        "request_id": "req_fake",
    }


def _usage(usage: dict[str, int]) -> dict[str, Any]:
    """Anthropic counts ``input_tokens`` without the cache reads and writes."""
    cached = usage["cache_read_tokens"] + usage["cache_write_tokens"]
    out: dict[str, Any] = {
        "input_tokens": max(0, usage["input_tokens"] - cached),
        "cache_creation_input_tokens": usage["cache_write_tokens"],
        "cache_read_input_tokens": usage["cache_read_tokens"],
        "output_tokens": usage["output_tokens"],
        "service_tier": "standard",
    }
    if usage["reasoning_tokens"]:
        out["output_tokens_details"] = {"thinking_tokens": usage["reasoning_tokens"]}
    return out


def signature(answer: Answer, ex: Exchange) -> str:
    """The thinking block's signature: the scripted one, or an opaque made-up one."""
    if answer.signature:
        return answer.signature
    return base64.b64encode(f"fake-llm thinking signature {ex.number}".encode()).decode()


def _blocks(answer: Answer, ex: Exchange) -> list[dict[str, Any]]:
    """The finished content blocks: thinking, text, tool uses (in that order)."""
    blocks: list[dict[str, Any]] = []
    if answer.reasoning is not None:
        blocks.append(
            {"type": "thinking", "thinking": answer.reasoning, "signature": signature(answer, ex)}
        )
    if answer.text:
        blocks.append({"type": "text", "text": answer.text})
    for index, call in enumerate(answer.calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": ex.call_id(call, index, "toolu_fake"),
                "name": call.name,
                "input": call.input(),
            }
        )
    return blocks


def _message(answer: Answer, ex: Exchange, content: list[Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": f"msg_fake{ex.number}",
        "type": "message",
        "role": "assistant",
        "model": ex.model,
        "content": content,
        "stop_reason": stop_reason(answer),
        "stop_sequence": None,
        "usage": _usage(answer.usage or {}),
        **fields,
    }


def message(answer: Answer, ex: Exchange) -> dict[str, Any]:
    """A whole ``message`` object."""
    return _message(answer, ex, _blocks(answer, ex))


def message_events(answer: Answer, ex: Exchange) -> Iterator[Event]:
    """``message_start`` (empty content, input usage), ``ping``, then per block
    ``content_block_start``, any number of ``content_block_delta``, ``content_block_stop``, then
    ``message_delta`` (stop reason and the usage totals) and ``message_stop``.

    Deltas: ``text_delta``; ``thinking_delta`` pieces then one ``signature_delta``;
    ``input_json_delta`` with ``partial_json`` pieces of the arguments' JSON text (the block
    starts with ``"input": {}``).
    """
    usage = _usage(answer.usage or {})
    start_usage = {**usage, "output_tokens": 1}
    start_usage.pop("output_tokens_details", None)
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": _message(answer, ex, [], stop_reason=None, usage=start_usage),
        },
    )
    yield "ping", {"type": "ping"}
    for index, block in enumerate(_blocks(answer, ex)):
        if block["type"] == "thinking":
            first: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in answer.pieces(block["thinking"])
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "text":
            first = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in answer.pieces(block["text"])]
        else:
            first = {**block, "input": {}}
            raw = answer.calls[index - _first_call(answer)].arguments
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in answer.pieces(raw)]
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": first},
        )
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(answer), "stop_sequence": None},
            "usage": {k: v for k, v in usage.items() if k != "service_tier"},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _first_call(answer: Answer) -> int:
    """The block index of the first tool use."""
    return (answer.reasoning is not None) + bool(answer.text)
