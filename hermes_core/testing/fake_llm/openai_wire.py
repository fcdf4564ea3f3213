"""OpenAI's wire formats: chat completions and the Responses API, whole and streamed.

Each ``*_events`` generator yields ``(event name or None, data)`` pairs; the server writes them
as SSE (``data:`` only for chat completions, ``event:`` and ``data:`` for Responses).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .steps import Answer, ErrorStep, Exchange

Event = tuple[str | None, Any]

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}

_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    402: ("insufficient_quota", "insufficient_quota", "Insufficient credits."),
    403: ("permission_error", "permission_denied", "You are not allowed to use this model."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    408: ("timeout", None, "Request timed out."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", "service_unavailable", "The service is temporarily unavailable."),
    529: ("server_error", "overloaded", "The server is overloaded."),
}


def finish_reason(answer: Answer) -> str:
    """The chat completions ``finish_reason`` of ``answer``."""
    value = answer.finish_reason or "stop"
    return _FINISH.get(value, value)


def looks_like_context_overflow(message: str) -> bool:
    """Whether an error message talks about the prompt not fitting."""
    lowered = message.lower()
    return any(w in lowered for w in ("context", "too long", "too many tokens", "maximum length"))


def error_body(error: ErrorStep) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``, as the OpenAI API answers errors."""
    default_type, default_code, default_message = _ERRORS.get(
        error.status,
        ("server_error" if error.status >= 500 else "invalid_request_error", None, "Error."),
    )
    message = error.message or default_message
    param = error.param
    if error.status == 400 and default_code is None and looks_like_context_overflow(message):
        default_code, param = "context_length_exceeded", param or "messages"
    return {
        "error": {
            "message": message,
            "type": error.type or default_type,
            "param": param,
            "code": error.code or default_code,
        }
    }


# --- chat completions ----------------------------------------------------------------------------


def _chat_usage(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        "prompt_tokens_details": {
            "cached_tokens": usage["cache_read_tokens"],
            "cache_write_tokens": usage["cache_write_tokens"],
        },
        "completion_tokens_details": {"reasoning_tokens": usage["reasoning_tokens"]},
    }


def chat_completion(answer: Answer, ex: Exchange) -> dict[str, Any]:
    """A whole ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
    if answer.text is None and not answer.calls:
        message["content"] = ""
    if answer.reasoning is not None:
        message["reasoning_content"] = answer.reasoning
    if answer.calls:
        message["tool_calls"] = [
            {
                "id": ex.call_id(call, i, "call_"),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for i, call in enumerate(answer.calls)
        ]
    return {
        "id": f"chatcmpl-fake{ex.number}",
        "object": "chat.completion",
        "created": ex.created,
        "model": ex.model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason(answer),
            }
        ],
        "usage": _chat_usage(answer.usage or {}),
    }


def chat_events(answer: Answer, ex: Exchange) -> Iterator[Event]:
    """``chat.completion.chunk`` objects, then ``[DONE]``.

    Order: a role chunk, reasoning pieces (``delta.reasoning_content``), text pieces, then each
    tool call: a first delta with ``index``, ``id``, ``type``, ``function.name`` and empty
    ``arguments``, then one delta per argument piece (``index`` and ``function.arguments``
    only); with ``chunks: 1`` a call is one delta carrying everything. Then a chunk with the
    ``finish_reason`` and, with ``stream_options.include_usage``, a chunk with empty
    ``choices`` and the ``usage`` (every other chunk then has ``"usage": null``).
    """
    options = ex.body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
        body: dict[str, Any] = {
            "id": f"chatcmpl-fake{ex.number}",
            "object": "chat.completion.chunk",
            "created": ex.created,
            "model": ex.model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            body["usage"] = None
        return None, body

    has_content = answer.text is not None or not answer.calls
    yield chunk({"role": "assistant", "content": "" if has_content else None})
    for piece in answer.pieces(answer.reasoning):
        yield chunk({"reasoning_content": piece})
    for piece in answer.pieces(answer.text):
        yield chunk({"content": piece})
    for index, call in enumerate(answer.calls):
        head: dict[str, Any] = {
            "index": index,
            "id": ex.call_id(call, index, "call_"),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        if answer.chunks == 1:
            head["function"]["arguments"] = call.arguments
            yield chunk({"tool_calls": [head]})
            continue
        yield chunk({"tool_calls": [head]})
        for piece in answer.pieces(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, finish_reason(answer))
    if include_usage:
        yield (
            None,
            {
                "id": f"chatcmpl-fake{ex.number}",
                "object": "chat.completion.chunk",
                "created": ex.created,
                "model": ex.model,
                "system_fingerprint": "fp_fake",
                "choices": [],
                "usage": _chat_usage(answer.usage or {}),
            },
        )
    yield None, "[DONE]"


# --- Responses API -------------------------------------------------------------------------------


def _responses_usage(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": usage["input_tokens"],
        "input_tokens_details": {
            "cached_tokens": usage["cache_read_tokens"],
            "cache_write_tokens": usage["cache_write_tokens"],
        },
        "output_tokens": usage["output_tokens"],
        "output_tokens_details": {"reasoning_tokens": usage["reasoning_tokens"]},
        "total_tokens": usage["input_tokens"] + usage["output_tokens"],
    }


def _status(answer: Answer) -> tuple[str, dict[str, str] | None]:
    reason = finish_reason(answer)
    if reason == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if reason == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def _response(
    answer: Answer, ex: Exchange, output: list[dict[str, Any]], *, final: bool
) -> dict[str, Any]:
    body = ex.body
    status, incomplete = _status(answer) if final else ("in_progress", None)
    return {
        "id": f"resp_fake{ex.number}",
        "object": "response",
        "created_at": ex.created,
        "status": status,
        "background": False,
        "completed_at": ex.created if status == "completed" else None,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "model": ex.model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": _responses_usage(answer.usage or {}) if final else None,
        "user": None,
    }


def _items(answer: Answer, ex: Exchange) -> list[dict[str, Any]]:
    """The finished output items: reasoning, message, function calls (in that order)."""
    items: list[dict[str, Any]] = []
    if answer.reasoning is not None:
        item: dict[str, Any] = {
            "id": f"rs_fake{ex.number}",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": answer.reasoning}],
        }
        include = ex.body.get("include") or []
        if "reasoning.encrypted_content" in include:
            item["encrypted_content"] = f"fake-encrypted-reasoning-{ex.number}"
        items.append(item)
    if answer.text is not None or not answer.calls:
        status = "incomplete" if _status(answer)[0] == "incomplete" else "completed"
        items.append(
            {
                "id": f"msg_fake{ex.number}",
                "type": "message",
                "status": status,
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": answer.text or "",
                        "annotations": [],
                        "logprobs": [],
                    }
                ],
            }
        )
    namespaces = _namespaces(ex.body)
    for index, call in enumerate(answer.calls):
        if call.name == "tool_search" and _client_search(ex.body):
            items.append(
                {
                    "id": f"ts_fake{ex.number}_{index}",
                    "type": "tool_search_call",
                    "status": "completed",
                    "execution": "client",
                    "call_id": ex.call_id(call, index, "call_"),
                    "arguments": call.input(),
                }
            )
            continue
        item = {
            "id": f"fc_fake{ex.number}_{index}",
            "type": "function_call",
            "status": "completed",
            "call_id": ex.call_id(call, index, "call_"),
            "name": call.name,
            "arguments": call.arguments,
        }
        if call.name in namespaces:
            item["namespace"] = namespaces[call.name]
        items.append(item)
    return items


def _client_search(body: dict[str, Any]) -> bool:
    """Whether the request offers a client-executed ``tool_search``: a scripted call named
    ``tool_search`` is then answered as the model's ``tool_search_call``."""
    return any(
        isinstance(t, dict) and t.get("type") == "tool_search" and t.get("execution") == "client"
        for t in body.get("tools") or []
    )


def _namespaces(body: dict[str, Any]) -> dict[str, str]:
    """The namespace of each function the request defines inside one."""
    out: dict[str, str] = {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                out[str(inner.get("name"))] = str(tool.get("name"))
    return out


def response(answer: Answer, ex: Exchange) -> dict[str, Any]:
    """A whole ``response`` object."""
    return _response(answer, ex, _items(answer, ex), final=True)


def response_events(answer: Answer, ex: Exchange) -> Iterator[Event]:
    """Typed Responses events, each with a ``sequence_number``.

    ``response.created``, ``response.in_progress``; per output item ``response.output_item.added``
    then its content events and ``response.output_item.done``: for reasoning
    ``response.reasoning_summary_part.added``, ``response.reasoning_summary_text.delta``/
    ``.done``, ``response.reasoning_summary_part.done``; for the message
    ``response.content_part.added``, ``response.output_text.delta``/``.done``,
    ``response.content_part.done``; for a function call
    ``response.function_call_arguments.delta``/``.done``. Last ``response.completed`` (or
    ``response.incomplete`` for ``length`` and ``content_filter``) with the whole response.
    """
    sequence = 0

    def event(kind: str, **data: Any) -> Event:
        nonlocal sequence
        sequence += 1
        return kind, {"type": kind, "sequence_number": sequence - 1, **data}

    yield event("response.created", response=_response(answer, ex, [], final=False))
    yield event("response.in_progress", response=_response(answer, ex, [], final=False))
    items = _items(answer, ex)
    for index, item in enumerate(items):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={"id": item["id"], "type": "reasoning", "summary": []},
            )
            text = item["summary"][0]["text"]
            part: dict[str, Any] = {"type": "summary_text", "text": ""}
            yield event("response.reasoning_summary_part.added", **at, summary_index=0, part=part)
            for piece in answer.pieces(text):
                yield event(
                    "response.reasoning_summary_text.delta", **at, summary_index=0, delta=piece
                )
            yield event("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
            part = {"type": "summary_text", "text": text}
            yield event("response.reasoning_summary_part.done", **at, summary_index=0, part=part)
        elif item["type"] == "message":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield event("response.content_part.added", **at, content_index=0, part=part)
            for piece in answer.pieces(text):
                yield event(
                    "response.output_text.delta", **at, content_index=0, delta=piece, logprobs=[]
                )
            yield event("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
            yield event(
                "response.content_part.done", **at, content_index=0, part=item["content"][0]
            )
        elif item["type"] == "tool_search_call":
            yield event("response.output_item.added", output_index=index, item=item)
        else:
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in answer.pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", **at, delta=piece)
            yield event(
                "response.function_call_arguments.done",
                **at,
                name=item["name"],
                arguments=item["arguments"],
            )
        yield event("response.output_item.done", output_index=index, item=item)
    final = _response(answer, ex, items, final=True)
    kind = "response.completed" if final["status"] == "completed" else "response.incomplete"
    yield event(kind, response=final)
