"""Transcript invariants: strip internal fields, repair, validate, and build what goes on the wire.

A transcript is a list of OpenAI-format message dicts. Internally messages may carry extra fields
(``reasoning``, ``finish_reason``, ``timestamp``, ``token_count``, ``tool_name``, anything starting
with ``_``); only :data:`WIRE_FIELDS` ever reach a provider.

A transcript is valid when an optional system message comes first, the first other message is a
user message, user and assistant messages never repeat back to back, every assistant tool call is
answered exactly once by a tool result placed right after it (in call order), and no tool result
stands anywhere else.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hermes_hookspecs import CONTEXT_SUMMARY_FLAG, HermesError

from .scan import inspect_calls, scan, wire_function
from .text import clean_text, clean_value

__all__ = [
    "INTERRUPTED_RESULT",
    "WIRE_FIELDS",
    "TranscriptError",
    "clean_text",
    "clean_value",
    "dangling_calls",
    "ensure_valid",
    "repair",
    "strip_internal",
    "validate",
    "wire_messages",
]

WIRE_FIELDS: frozenset[str] = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
"""The only message fields a provider ever sees."""

INTERRUPTED_RESULT = (
    "Error: this tool call was not completed (interrupted or lost); no result is available."
)
"""Content of the synthetic result :func:`repair` gives a tool call that has none."""

# A fixed key order keeps the wire bytes identical from call to call (prompt caching).
_WIRE_ORDER = ("role", "content", "tool_calls", "tool_call_id", "name")
_CALL_FIELDS = ("id", "type", "function")
_FUNCTION_FIELDS = ("name", "arguments")


class TranscriptError(HermesError):
    """A transcript breaks an invariant; the message names the first problem in one line."""


def dangling_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of the last assistant message that have no result after it, in call
    order, when the transcript ends with that message and some of its results (what a process
    killed during a tool batch leaves in the store); ``[]`` otherwise.

    Calls are returned only when appending their results in this order gives a valid ending:
    the results present must answer a prefix of the calls, in order.
    """
    end = len(messages)
    start = end
    while start > 0 and isinstance(messages[start - 1], dict):
        if messages[start - 1].get("role") != "tool":
            break
        start -= 1
    if start == 0:
        return []
    opener = messages[start - 1]
    if not isinstance(opener, dict) or opener.get("role") != "assistant":
        return []
    calls = opener.get("tool_calls")
    ids, defect = inspect_calls(calls, None)
    if defect is not None or not ids or not isinstance(calls, (list, tuple)):
        return []
    answered = [m.get("tool_call_id") for m in messages[start:end]]
    if answered != ids[: len(answered)]:
        return []
    return [call for call in calls if call["id"] in ids[len(answered) :]]


def open_turn_of(messages: list[dict[str, Any]], content: Any) -> bool:
    """Whether ``messages`` end inside an unanswered turn whose user message is ``content``:
    the last user message is ``content`` and no final answer (an assistant message without
    tool calls) follows it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return messages[index].get("content") == content and not any(
                m.get("role") == "assistant" and not m.get("tool_calls")
                for m in messages[index + 1 :]
            )
    return False


def strip_internal(message: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``message`` holding only wire fields.

    Inside ``tool_calls`` only ``id``, ``type`` and ``function`` (with ``name`` and
    ``arguments``) are kept; an empty or ``None`` ``tool_calls`` is left out.
    """
    out = {key: message[key] for key in _WIRE_ORDER if key in message}
    calls = out.get("tool_calls")
    if calls and isinstance(calls, list):
        out["tool_calls"] = [_strip_call(call) for call in calls]
    elif "tool_calls" in out:
        del out["tool_calls"]
    return out


def _strip_call(call: Any) -> Any:
    """A copy of one tool call holding only wire fields; anything but a dict is returned as is."""
    if not isinstance(call, dict):
        return call
    out = {key: call[key] for key in _CALL_FIELDS if key in call}
    function = out.get("function")
    if isinstance(function, dict):
        out["function"] = {key: function[key] for key in _FUNCTION_FIELDS if key in function}
        name, arguments = out["function"].get("name"), out["function"].get("arguments")
        if isinstance(name, str) and isinstance(arguments, str):
            out["function"] = wire_function(call, name, arguments)
    return out


def validate(messages: list[dict[str, Any]]) -> list[str]:
    """Return every problem of ``messages``, one readable line each; ``[]`` when valid."""
    return list(scan(messages))


def ensure_valid(messages: list[dict[str, Any]]) -> None:
    """Raise :class:`TranscriptError` naming the first problem of ``messages``, if any."""
    problem = next(scan(messages), None)
    if problem is not None:
        raise TranscriptError(f"invalid transcript: {problem}")


def repair(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return a new transcript built from ``messages`` that :func:`validate` accepts.

    The input list and its dicts are never modified. Every returned message is a new dict; nested
    values (content parts, unchanged ``tool_calls``) may be shared with the input. A valid input
    comes back equal to itself, except for the ``None`` content rule below. The rules:

    - a system message is kept only at index 0;
    - messages with an unknown role, and assistant or tool messages before the first user
      message, are dropped;
    - a tool result belongs to the nearest preceding assistant message with ``tool_calls``; it
      is dropped when it answers none of that message's calls or a call already answered;
    - results are placed right after their assistant message in call order, and a call without
      a result gets one saying it was not completed (:data:`INTERRUPTED_RESULT`);
    - tool calls get a stable id when they have none (or repeat one in the same message),
      ``type`` ``"function"``, and JSON-string arguments (``"{}"`` for ``None``); calls without
      a function name are dropped;
    - consecutive user messages, and consecutive assistant messages without tool calls, are
      merged (text joined with a blank line, content-part lists concatenated; a context summary
      merged with what the user wrote loses :data:`~hermes_hookspecs.CONTEXT_SUMMARY_FLAG`); an
      assistant text message followed by an assistant message with tool calls is merged into the
      latter;
    - an assistant message without tool calls and with ``None`` content gets ``""``.
    """
    copies: list[dict[str, Any]] = []
    if next(scan(messages, copies), None) is None:
        return copies
    return _repair(messages, keep_system=True)


def wire_messages(
    messages: list[dict[str, Any]], system_prompt: str | None
) -> list[dict[str, Any]]:
    """Return the messages the loop sends to a provider: repaired, validated and stripped.

    When ``system_prompt`` is not ``None`` it becomes the first message and every system message
    of ``messages`` is dropped; when it is ``None`` a system message at index 0 of ``messages``
    is kept.
    """
    return wire_and_source(messages, system_prompt)[0]


def wire_and_source(
    messages: list[dict[str, Any]], system_prompt: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Like :func:`wire_messages`, and also the unstripped messages the wire list was made from
    (internal fields kept), aligned with it: ``wire[i + len(wire) - len(source)]`` was made
    from ``source[i]``."""
    head: list[dict[str, Any]] = []
    source = messages
    if system_prompt is not None:
        head.append({"role": "system", "content": system_prompt})
        if source and isinstance(source[0], dict) and source[0].get("role") == "system":
            source = source[1:]
    out = list(head)
    if next(scan(source, out, strip=True, system_first=not head), None) is None:
        return out, source
    repaired = _repair(messages, keep_system=system_prompt is None)
    out = list(head)
    problem = next(scan(repaired, out, strip=True), None)
    if problem is not None:  # pragma: no cover - repair guarantees validity
        raise TranscriptError(f"invalid transcript after repair: {problem}")
    if head and repaired and repaired[0].get("role") == "system":
        repaired = repaired[1:]
    return out, repaired


# --- repair -----------------------------------------------------------------------------------


class _Batch(dict[str, dict[str, Any] | None]):
    """The results that follow an assistant message with tool calls.

    Maps each call id, in call order, to its result message (``None`` until one is found).
    """

    __slots__ = ()


def _repair(messages: list[dict[str, Any]], keep_system: bool) -> list[dict[str, Any]]:
    """The rules of :func:`repair`, applied in one pass; ``keep_system`` keeps a leading system."""
    items: list[dict[str, Any]] = []  # messages, and a _Batch after each one with tool calls
    batch: _Batch | None = None
    seen_user = False
    for index, message in enumerate(messages):
        if type(message) is not dict and not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "tool":
            if batch is not None:
                call_id = message.get("tool_call_id")
                # get(..., 0) tells "unknown id" (0) from "not answered yet" (None).
                if isinstance(call_id, str) and batch.get(call_id, 0) is None:
                    batch[call_id] = dict(message)
        elif role == "user":
            seen_user = True
            _add_user(items, message)
        elif role == "assistant":
            if message.get("tool_calls"):
                batch = None  # results after this message belong to it, or to nothing
            if seen_user:
                batch = _add_assistant(items, message, index) or batch
        elif role == "system" and index == 0 and keep_system:
            items.append(dict(message))
        # Anything else (unknown roles, misplaced system messages) is dropped.
    return _flatten(items)


def _tail(items: list[dict[str, Any]]) -> str | None:
    """The role of the last item (``tool`` for a batch of results)."""
    if not items:
        return None
    last = items[-1]
    return "tool" if type(last) is _Batch else last.get("role")


def _add_user(items: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """Add a user message to ``items``, merged into a user message just before it."""
    if _tail(items) != "user":
        items.append(dict(message))
        return
    last = items[-1]
    last["content"] = _join(last.get("content"), message.get("content"))
    if not message.get(CONTEXT_SUMMARY_FLAG):  # no longer nothing but a summary
        last.pop(CONTEXT_SUMMARY_FLAG, None)


def _add_assistant(
    items: list[dict[str, Any]], message: dict[str, Any], index: int
) -> _Batch | None:
    """Add an assistant message to ``items`` (merged as :func:`repair` says); the batch that
    waits for its results when it has usable tool calls."""
    new = dict(message)
    raw_calls = message.get("tool_calls")
    calls, ids = _repair_calls(raw_calls, index) if raw_calls else ([], [])
    tail = _tail(items)
    if ids:
        new["tool_calls"] = calls
        if tail == "assistant":
            # Assistant dicts at the tail never have tool calls: a batch follows those.
            new["content"] = _join(items.pop().get("content"), new.get("content"))
        batch = _Batch(dict.fromkeys(ids))
        items.append(new)
        items.append(batch)
        return batch
    new.pop("tool_calls", None)
    if new.get("content") is None:
        new["content"] = ""
    if tail == "assistant":
        items[-1]["content"] = _join(items[-1].get("content"), new["content"])
    else:
        items.append(new)
    return None


def _flatten(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of ``items``, each batch replaced by its results in call order (a call
    without one gets :data:`INTERRUPTED_RESULT`)."""
    out: list[dict[str, Any]] = []
    for item in items:
        if type(item) is not _Batch:
            out.append(item)
            continue
        for call_id, result in item.items():
            if result is None:
                result = {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT}
            out.append(result)
    return out


def _repair_calls(raw: Any, index: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Well-formed calls from ``raw`` (the same list if nothing needed fixing) and their ids."""
    ids, defect = inspect_calls(raw, None)
    if defect is None:
        return raw, ids
    if not isinstance(raw, (list, tuple)):
        return [], []
    fixed: list[dict[str, Any]] = []
    ids = []
    for position, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            continue
        assert isinstance(call, dict) and isinstance(function, dict)
        given_id = call.get("id")
        usable = isinstance(given_id, str) and bool(given_id) and given_id not in ids
        call_id: str | None = given_id if usable else None
        arguments = function.get("arguments")
        if call_id is not None and call.get("type") == "function" and isinstance(arguments, str):
            ids.append(call_id)
            fixed.append(call)
            continue
        if not isinstance(arguments, str):
            if arguments is None:
                arguments = "{}"
            else:
                arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        if call_id is None:
            call_id = _generated_id(index, position, name, arguments)
        ids.append(call_id)
        function = {**function, "arguments": arguments}
        fixed.append({**call, "id": call_id, "type": "function", "function": function})
    return fixed, ids


def _generated_id(index: int, position: int, name: str, arguments: str) -> str:
    """An id that is the same every time the same transcript is repaired."""
    seed = json.dumps([index, position, name, arguments], ensure_ascii=False)
    return "call_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:24]


def _join(first: Any, second: Any) -> Any:
    """Merge two message contents: texts joined by a blank line, content-part lists concatenated."""
    if isinstance(first, list) or isinstance(second, list):
        return _parts(first) + _parts(second)
    texts = [text if isinstance(text, str) else str(text) for text in (first, second) if text]
    if not texts:
        return first if first is not None else second
    return "\n\n".join(texts)


def _parts(content: Any) -> list[Any]:
    """Message content as a list of content parts."""
    if isinstance(content, list):
        return list(content)
    if not content:
        return []
    return [{"type": "text", "text": content if isinstance(content, str) else str(content)}]
