"""The OpenAI wire formats the API server answers in: chat completions (whole and as
``chat.completion.chunk`` s), Responses (whole and as stream events), model lists and errors;
and reading the requests' messages and input items."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_hookspecs import Usage


class BadRequest(ValueError):
    """A request body the API cannot serve; the message says what is wrong (and ``param``)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def error_body(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """An OpenAI error object (``{"error": {...}}``)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event (``data:``-only for chat completions, named for Responses)."""
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"{head}data: {body}\n\n".encode()


def models_body(model: str, created: int) -> dict[str, Any]:
    """The answer of ``GET /v1/models``: the one model the gateway serves."""
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": created, "owned_by": "hermes"}],
    }


# --- reading requests -----------------------------------------------------------------------


def content_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    raise BadRequest("message content must be a string or a list of content parts")


def _transcript(turns: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"{role}: {text}" for role, text in turns if text)


def split_chat_messages(messages: Any) -> tuple[str, str | None]:
    """(the prompt, extra system context) of a chat completions ``messages`` list: the last
    message must be the user's; system messages and the earlier turns become context (used
    when the request starts a new session)."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list", "messages")
    for message in messages:
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise BadRequest("every message needs a role", "messages")
    last = messages[-1]
    if last["role"] != "user":
        raise BadRequest("the last message must be the user's", "messages")
    prompt = content_text(last.get("content"))
    if not prompt.strip():
        raise BadRequest("the user message is empty", "messages")
    system = [
        content_text(m.get("content")) for m in messages if m["role"] in ("system", "developer")
    ]
    earlier = [
        (m["role"], content_text(m.get("content")))
        for m in messages[:-1]
        if m["role"] in ("user", "assistant")
    ]
    return prompt, _context(system, earlier)


def _context(system: list[str], earlier: list[tuple[str, str]]) -> str | None:
    parts = [s for s in system if s.strip()]
    if earlier:
        parts.append("The conversation so far, as the client sent it:\n" + _transcript(earlier))
    return "\n\n".join(parts) or None


def split_responses_input(value: Any, instructions: Any) -> tuple[str, str | None]:
    """(the prompt, extra system context) of a Responses ``input`` (a string or a list of
    items) and ``instructions``."""
    if instructions is not None and not isinstance(instructions, str):
        raise BadRequest("instructions must be a string", "instructions")
    system = [instructions] if instructions else []
    if isinstance(value, str):
        if not value.strip():
            raise BadRequest("input is empty", "input")
        return value, _context(system, [])
    if not isinstance(value, list) or not value:
        raise BadRequest("input must be a string or a non-empty list of items", "input")
    turns: list[tuple[str, str]] = []
    for item in value:
        if not isinstance(item, Mapping):
            raise BadRequest("every input item must be an object", "input")
        if item.get("type", "message") != "message":
            continue  # tool outputs of the client's own tools: the agent's tools run here
        role = item.get("role")
        text = content_text(item.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role in ("user", "assistant"):
            turns.append((role, text))
    if not turns or turns[-1][0] != "user" or not turns[-1][1].strip():
        raise BadRequest("the last input message must be a non-empty user message", "input")
    return turns[-1][1], _context(system, turns[:-1])


# --- chat completions ---------------------------------------------------------------------


def completion_id() -> str:
    """A fresh ``chatcmpl-…`` id."""
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def chat_usage(usage: Usage) -> dict[str, Any]:
    """Usage in the chat completions shape."""
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def chat_completion(
    cid: str, model: str, created: int, text: str, finish: str, usage: Usage
) -> dict[str, Any]:
    """A whole ``chat.completion`` object."""
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": chat_usage(usage),
    }


def chat_chunk(
    cid: str, model: str, created: int, delta: Mapping[str, Any], finish: str | None = None
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with one choice."""
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish}],
    }


def chat_usage_chunk(cid: str, model: str, created: int, usage: Usage) -> dict[str, Any]:
    """The last chunk when ``stream_options.include_usage`` is set: no choices, the usage."""
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": chat_usage(usage),
    }


# --- responses ------------------------------------------------------------------------------


def response_id() -> str:
    """A fresh ``resp_…`` id."""
    return f"resp_{uuid.uuid4().hex}"


def responses_usage(usage: Usage) -> dict[str, Any]:
    """Usage in the Responses shape."""
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def output_message(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    """An assistant ``message`` output item holding ``text``."""
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
        if status == "completed"
        else [],
    }


def response_object(
    rid: str,
    model: str,
    created: float,
    *,
    status: str,
    output: list[dict[str, Any]],
    previous: str | None,
    instructions: str | None,
    usage: Usage | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``response`` object."""
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "completed_at": time.time() if status == "completed" else None,
        "error": error,
        "incomplete_details": None,
        "instructions": instructions,
        "metadata": {},
        "model": model,
        "output": output,
        "parallel_tool_calls": False,
        "previous_response_id": previous,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": responses_usage(usage) if usage is not None else None,
    }
