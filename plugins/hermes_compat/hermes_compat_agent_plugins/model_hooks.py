"""The model request hooks: ``pre_llm_call``, ``pre_api_request``, ``post_api_request``,
``transform_llm_output`` and ``post_llm_call`` of Hermes agent plugins, called from
``hermes_before_request`` and ``hermes_after_response``."""

from __future__ import annotations

import time
from typing import Any

from hermes_hookspecs import hookimpl

from . import turns
from .locate import host_of

_HISTORY_HOOKS = ("pre_api_request", "post_llm_call")
"""The hooks whose arguments hold the conversation so far."""


@hookimpl
def hermes_before_request(request: Any) -> None:
    """``pre_llm_call`` (turn context) and ``pre_api_request`` (observer)."""
    host = host_of()
    if not host.hooks:  # no Hermes agent plugin hooks anything: nothing to remember either
        return
    if turns.is_plugin_call(request.session_id):
        turns.push_request({"session_id": request.session_id})
        return
    last_user = next((m for m in reversed(request.messages) if m.get("role") == "user"), None)
    turns.set_user_message(request.session_id, last_user.get("content") if last_user else "")
    history = None
    if any(host.has_hook(name) for name in _HISTORY_HOOKS):
        history = [dict(m) for m in request.messages if m.get("role") != "system"]
    ids = turns.next_request(request.session_id, request.task_id, request.messages)
    if host.has_hook("pre_llm_call"):
        turns.inject_turn_context(host, request, ids["turn_id"])
    started = time.time()
    where = {
        "provider": request.provider,
        "base_url": request.base_url,
        "api_mode": request.api_mode,
    }
    turns.push_request(
        {
            "started_at": started,
            "session_id": request.session_id,
            "task_id": request.task_id,
            "model": request.model,
            "message_count": len(request.messages),
            "history": history or [],
            **ids,
            **where,
        }
    )
    if host.has_hook("pre_api_request"):
        host.invoke("pre_api_request", _pre_api_request(request, ids, where, history, started))


def _pre_api_request(
    request: Any,
    ids: dict[str, Any],
    where: dict[str, Any],
    history: list[dict[str, Any]] | None,
    started: float,
) -> dict[str, Any]:
    chars = sum(len(turns.text_of(m.get("content"))) for m in request.messages)
    return {
        "task_id": request.task_id,
        "turn_id": ids["turn_id"],
        "api_request_id": ids["api_request_id"],
        "session_id": request.session_id,
        "user_message": turns.user_message(request.session_id),
        "conversation_history": history,
        "platform": turns.platform_of(request.session_id),
        "model": request.model,
        **where,
        "api_call_count": ids["api_call_count"],
        "retry_count": 0,
        "request_messages": request.messages,
        "message_count": len(request.messages),
        "tool_count": len(request.tools),
        "approx_input_tokens": chars // 4,
        "request_char_count": chars,
        "max_tokens": request.max_tokens,
        "started_at": started,
        "middleware_trace": [],
        "request": {
            "model": request.model,
            "message_count": len(request.messages),
            "tools": request.tool_names,
            "max_tokens": request.max_tokens,
        },
    }


@hookimpl
def hermes_after_response(response: Any) -> None:
    """``post_api_request`` (observer); for a final answer (no tool calls) also
    ``transform_llm_output`` (the first non-empty string replaces the answer) and
    ``post_llm_call`` (observer)."""
    host = host_of()
    if not host.hooks:
        return
    pending = turns.pop_request()
    session_id = pending.get("session_id", "")
    if turns.is_plugin_call(session_id):
        return
    message = response.message
    if host.has_hook("post_api_request"):
        host.invoke("post_api_request", _post_api_request(response, pending))
    if message.get("tool_calls"):
        return
    model = pending.get("model") or response.model
    platform = turns.platform_of(session_id)
    text = turns.text_of(message.get("content"))
    if host.has_hook("transform_llm_output"):
        payload = {
            "response_text": text,
            "session_id": session_id,
            "model": model,
            "platform": platform,
        }
        for _key, replaced in host.invoke("transform_llm_output", payload):
            if isinstance(replaced, str) and replaced:
                message["content"] = text = replaced
                break
    if host.has_hook("post_llm_call"):
        host.invoke(
            "post_llm_call",
            {
                "session_id": session_id,
                "task_id": pending.get("task_id", ""),
                "turn_id": pending.get("turn_id", ""),
                "user_message": turns.user_message(session_id),
                "assistant_response": text,
                "conversation_history": [*pending.get("history", []), dict(message)],
                "model": model,
                "platform": platform,
            },
        )


def _post_api_request(response: Any, pending: dict[str, Any]) -> dict[str, Any]:
    session_id = pending.get("session_id", "")
    model = pending.get("model") or response.model
    message = response.message
    tool_calls = message.get("tool_calls") or []
    usage = response.usage
    ended = time.time()
    started = pending.get("started_at", ended)
    return {
        "task_id": pending.get("task_id", ""),
        "turn_id": pending.get("turn_id", ""),
        "api_request_id": pending.get("api_request_id", ""),
        "session_id": session_id,
        "platform": turns.platform_of(session_id),
        "model": model,
        "provider": pending.get("provider", ""),
        "base_url": pending.get("base_url", ""),
        "api_mode": pending.get("api_mode", ""),
        "api_call_count": pending.get("api_call_count", 1),
        "api_duration": ended - started,
        "started_at": started,
        "ended_at": ended,
        "finish_reason": response.finish_reason,
        "message_count": pending.get("message_count", 0),
        "response_model": response.model or model,
        "response": {
            "content": turns.text_of(message.get("content")),
            "tool_calls": [c.get("function", {}).get("name") for c in tool_calls],
            "finish_reason": response.finish_reason,
            "model": response.model or model,
        },
        "usage": {
            "prompt_tokens": usage.input_tokens,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
        },
        "assistant_message": dict(message),
        "assistant_content_chars": len(turns.text_of(message.get("content"))),
        "assistant_tool_call_count": len(tool_calls),
    }
