"""A row's output and its two export formats.

What the run table keeps of a finished row (:func:`row_output`) is the transcript as the
session store holds it (OpenAI-format messages), the system prompt and a few facts about the
run. Export turns it into:

- the Hermes ShareGPT format (:func:`to_sharegpt`): ``conversations`` of ``from``/``value``
  (``system``, ``human``, ``gpt``, ``tool``), reasoning as ``<think>…</think>``, each tool call
  as ``<tool_call>{"name": …, "arguments": …}</tool_call>`` and each result as
  ``<tool_response>{"tool_call_id": …, "name": …, "content": …}</tool_response>``, with
  ``tool_stats``, ``toolsets_used``, ``completed``/``partial``, ``api_calls`` and ``metadata``;
- plain OpenAI chat messages (:func:`to_openai`), internal fields removed.

Nothing here depends on when or where the row ran, so a resumed run exports the same bytes as
an uninterrupted one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

ERROR_PREFIXES = ("Error", "error:", "BLOCKED:", "Unknown tool", "Tool error")
"""How a failed tool result starts (for ``tool_stats``)."""


def text_of(content: Any) -> str:
    """The text of a message's ``content`` (a string, or a list of parts whose text parts are
    joined; an image part becomes ``[image]``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, Mapping):
            if part.get("type") == "text":
                parts.append(str(part.get("text") or ""))
            elif "image" in str(part.get("type") or ""):
                parts.append("[image]")
        else:
            parts.append(str(part))
    return "\n".join(parts)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def tool_failed(content: str) -> bool:
    """Whether a tool result reads as a failure."""
    stripped = content.lstrip()
    if stripped.startswith(ERROR_PREFIXES):
        return True
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            return False
        return isinstance(value, dict) and bool(value.get("error"))
    return False


def row_output(
    *,
    messages: Sequence[Mapping[str, Any]],
    system: str | None,
    status: str,
    model: str | None,
    toolsets: Sequence[str] | None,
    seed: int,
    usage: Mapping[str, int],
    cost_usd: float,
    row: Mapping[str, Any],
    key: str,
    line: int,
) -> dict[str, Any]:
    """What the run table keeps of a finished row."""
    return {
        "id": key,
        "line": line,
        "status": status,
        "model": model,
        "system": system or "",
        "messages": [dict(m) for m in messages],
        "toolsets": list(toolsets) if toolsets is not None else None,
        "seed": seed,
        "usage": dict(usage),
        "cost_usd": round(cost_usd, 8),
        "row_metadata": row.get("metadata"),
    }


def tool_names(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The tool names the assistant called, in order, repeats kept."""
    names = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            names.append(str((call.get("function") or {}).get("name") or ""))
    return names


def tool_stats(messages: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per tool: how often it was called, how many results read as success or failure."""
    by_id: dict[str, str] = {}
    stats: dict[str, dict[str, int]] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            name = str((call.get("function") or {}).get("name") or "")
            by_id[str(call.get("id"))] = name
            stats.setdefault(name, {"count": 0, "success": 0, "failure": 0})["count"] += 1
        if message.get("role") == "tool":
            name = by_id.get(str(message.get("tool_call_id")), str(message.get("name") or ""))
            entry = stats.setdefault(name, {"count": 0, "success": 0, "failure": 0})
            entry["failure" if tool_failed(text_of(message.get("content"))) else "success"] += 1
    return dict(sorted(stats.items()))


def _gpt_value(message: Mapping[str, Any]) -> str:
    pieces = []
    reasoning = message.get("reasoning")
    if reasoning:
        pieces.append(f"<think>\n{reasoning}\n</think>")
    content = text_of(message.get("content"))
    if content:
        pieces.append(content)
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        body = {"name": function.get("name"), "arguments": _arguments(function.get("arguments"))}
        pieces.append(f"<tool_call>\n{json.dumps(body, ensure_ascii=False)}\n</tool_call>")
    return "\n".join(pieces)


def to_sharegpt(output: Mapping[str, Any]) -> dict[str, Any]:
    """The row ``output`` (see :func:`row_output`) as a Hermes ShareGPT trajectory."""
    messages: list[Mapping[str, Any]] = output["messages"]
    conversations: list[dict[str, str]] = []
    if output.get("system"):
        conversations.append({"from": "system", "value": output["system"]})
    names: dict[str, str] = {}
    pending_tool: list[str] = []

    def flush() -> None:
        if pending_tool:
            conversations.append({"from": "tool", "value": "\n".join(pending_tool)})
            pending_tool.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            body = {
                "tool_call_id": call_id,
                "name": names.get(call_id, message.get("name")),
                "content": text_of(message.get("content")),
            }
            pending_tool.append(
                f"<tool_response>\n{json.dumps(body, ensure_ascii=False)}\n</tool_response>"
            )
            continue
        flush()
        if role == "user":
            conversations.append({"from": "human", "value": text_of(message.get("content"))})
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name"))
            conversations.append({"from": "gpt", "value": _gpt_value(message)})
        elif role == "system":
            conversations.append({"from": "system", "value": text_of(message.get("content"))})
    flush()
    stats = tool_stats(messages)
    completed = output.get("status") == "completed"
    return {
        "id": output["id"],
        "prompt_index": output["line"],
        "conversations": conversations,
        "completed": completed,
        "partial": not completed,
        "api_calls": sum(1 for m in messages if m.get("role") == "assistant"),
        "toolsets_used": output.get("toolsets") or [],
        "tool_stats": stats,
        "tool_error_counts": {name: s["failure"] for name, s in stats.items()},
        "model": output.get("model"),
        "metadata": _metadata(output),
    }


def _metadata(output: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "row_id": output["id"],
        "line": output["line"],
        "status": output.get("status"),
        "seed": output.get("seed"),
        "usage": output.get("usage") or {},
        "cost_usd": output.get("cost_usd", 0.0),
        "row": output.get("row_metadata"),
    }


def openai_messages(output: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The row ``output`` as OpenAI chat messages: the system prompt first, internal fields
    (``reasoning``, ``finish_reason``, names starting with ``_``) removed."""
    messages: list[dict[str, Any]] = []
    if output.get("system"):
        messages.append({"role": "system", "content": output["system"]})
    keep = ("role", "content", "tool_calls", "tool_call_id", "name")
    for message in output["messages"]:
        messages.append({k: message[k] for k in keep if k in message})
    return messages


def to_openai(output: Mapping[str, Any]) -> dict[str, Any]:
    """The row ``output`` as one line of an OpenAI fine-tuning file (``messages`` and the
    row's ``metadata``)."""
    return {"id": output["id"], "messages": openai_messages(output), "metadata": _metadata(output)}
