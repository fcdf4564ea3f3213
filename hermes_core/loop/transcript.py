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
from collections.abc import Iterator
from typing import Any

from hermes_hookspecs import CONTEXT_SUMMARY_FLAG, HermesError

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
    ids, defect = _inspect_calls(calls, None)
    if defect is not None or not ids or not isinstance(calls, (list, tuple)):
        return []
    answered = [m.get("tool_call_id") for m in messages[start:end]]
    if answered != ids[: len(answered)]:
        return []
    return [call for call in calls if call["id"] in ids[len(answered) :]]


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
    return out


def validate(messages: list[dict[str, Any]]) -> list[str]:
    """Return every problem of ``messages``, one readable line each; ``[]`` when valid."""
    return list(_scan(messages))


def ensure_valid(messages: list[dict[str, Any]]) -> None:
    """Raise :class:`TranscriptError` naming the first problem of ``messages``, if any."""
    problem = next(_scan(messages), None)
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
    if next(_scan(messages, copies), None) is None:
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
    if next(_scan(source, out, strip=True, system_first=not head), None) is None:
        return out, source
    repaired = _repair(messages, keep_system=system_prompt is None)
    out = list(head)
    problem = next(_scan(repaired, out, strip=True), None)
    if problem is not None:  # pragma: no cover - repair guarantees validity
        raise TranscriptError(f"invalid transcript after repair: {problem}")
    if head and repaired and repaired[0].get("role") == "system":
        repaired = repaired[1:]
    return out, repaired


# --- validation -------------------------------------------------------------------------------


def _scan(
    messages: list[dict[str, Any]],
    out: list[dict[str, Any]] | None = None,
    strip: bool = False,
    system_first: bool = True,
) -> Iterator[str]:
    """Yield the problems of ``messages`` in order.

    When ``out`` is given, each message is also appended to it (stripped or shallow-copied, and
    with ``""`` for the ``None`` content of a text-only assistant message), so a caller that
    stops at the first problem gets the copies of a valid transcript in one pass. With
    ``system_first`` false, a system message is a problem even at index 0.
    """
    # This runs before every model call, so the common case (results arriving in call order)
    # is checked with one comparison and the bookkeeping for diagnostics happens only on a miss.
    pending: list[str] = []  # ids of the calls whose results may come next, in call order
    answered = 0  # how many of ``pending`` were answered in order
    stray: set[str] | None = None  # ids answered once the order was broken
    last_position = -1
    opened_at = 0
    previous: str | None = None
    started = False
    for index, message in enumerate(messages):
        if type(message) is not dict and not isinstance(message, dict):
            yield f"message {index}: not a dict"
            previous = None
            continue
        role = message.get("role")
        copy: dict[str, Any] | None = None
        if out is not None:
            if strip:
                copy = {}
                if "role" in message:
                    copy["role"] = role
                if "content" in message:
                    copy["content"] = message["content"]
                if "tool_calls" in message:
                    copy["tool_calls"] = message["tool_calls"]
                if "tool_call_id" in message:
                    copy["tool_call_id"] = message["tool_call_id"]
                if "name" in message:
                    copy["name"] = message["name"]
            else:
                copy = dict(message)
            out.append(copy)

        if role == "tool":
            call_id = message.get("tool_call_id")
            if stray is None and answered < len(pending) and call_id == pending[answered]:
                answered += 1
                previous = "tool"
                continue
            if not started:
                started = True
                yield (
                    f"message {index}: the first message after the system prompt is tool, not user"
                )
            if not isinstance(call_id, str) or not call_id:
                yield f"message {index}: tool message without tool_call_id"
            elif call_id not in pending:
                yield (
                    f"message {index}: orphan tool result {call_id!r}: it does not follow the "
                    "assistant message that made the call"
                )
            else:
                if stray is None:
                    stray = set(pending[:answered])
                    last_position = answered - 1
                position = pending.index(call_id)
                if call_id in stray:
                    yield f"message {index}: tool call {call_id!r} is answered twice"
                else:
                    if position < last_position:
                        yield f"message {index}: tool result {call_id!r} is out of call order"
                    last_position = position
                    stray.add(call_id)
            previous = "tool"
            continue

        if pending:
            if stray is None:
                missing = pending[answered:]
            else:
                missing = [call_id for call_id in pending if call_id not in stray]
            for call_id in missing:
                yield f"message {opened_at}: tool call {call_id!r} is never answered"
            pending = []

        if role == "user":
            if previous == "user":
                yield f"message {index}: two user messages in a row"
            started = True
            previous = "user"
            continue
        if role == "assistant":
            if not started:
                started = True
                yield (
                    f"message {index}: the first message after the system prompt is assistant, "
                    "not user"
                )
            if previous == "assistant" or previous == "calls":
                yield f"message {index}: two assistant messages in a row"
            calls = message.get("tool_calls")
            if calls is None:
                if copy is not None:
                    # Not a problem in the history, but providers want text here.
                    if copy.get("content") is None:
                        copy["content"] = ""
                    if strip and "tool_calls" in copy:
                        del copy["tool_calls"]
                previous = "assistant"
                continue
            wire_calls: list[dict[str, Any]] | None = [] if strip and copy is not None else None
            pending, defect = _inspect_calls(calls, wire_calls)
            if defect is not None:
                yield f"message {index}: malformed tool_calls: {defect}"
            elif wire_calls is not None:
                assert copy is not None
                copy["tool_calls"] = wire_calls
            answered = 0
            stray = None
            opened_at = index
            previous = "calls" if pending else "assistant"
            continue
        if role == "system":
            if index != 0 or not system_first:
                yield f"message {index}: a system message is only allowed first"
            previous = "system"
            continue
        yield f"message {index}: unknown role {role!r}"
        previous = None

    if pending:
        if stray is None:
            missing = pending[answered:]
        else:
            missing = [call_id for call_id in pending if call_id not in stray]
        for call_id in missing:
            yield f"message {opened_at}: tool call {call_id!r} is never answered"


def _inspect_calls(
    calls: Any, wire_calls: list[dict[str, Any]] | None
) -> tuple[list[str], str | None]:
    """Return the ids of the usable calls in order, and the first defect (or ``None``).

    When ``wire_calls`` is given and there is no defect, it receives the stripped calls.
    """
    if type(calls) is list:
        ids: list[str] = []
        for call in calls:
            if type(call) is not dict:
                break
            call_id = call.get("id")
            function = call.get("function")
            if type(call_id) is not str or not call_id or call.get("type") != "function":
                break
            if type(function) is not dict:
                break
            name = function.get("name")
            arguments = function.get("arguments")
            if type(name) is not str or not name or type(arguments) is not str or call_id in ids:
                break
            ids.append(call_id)
            if wire_calls is not None:
                wire_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                )
        else:
            if ids:
                return ids, None
    if wire_calls is not None:
        wire_calls.clear()
    return _diagnose_calls(calls, wire_calls)


def _diagnose_calls(
    calls: Any, wire_calls: list[dict[str, Any]] | None
) -> tuple[list[str], str | None]:
    """The thorough version of :func:`_inspect_calls`, for lists its fast path gave up on."""
    if not isinstance(calls, list) or not calls:
        return [], "expected a non-empty list"
    ids: list[str] = []
    defect: str | None = None
    for position, call in enumerate(calls):
        if not isinstance(call, dict):
            defect = defect or f"call {position} is not an object"
            continue
        call_id = call.get("id")
        function = call.get("function")
        if not isinstance(call_id, str) or not call_id:
            problem = "has no id"
        elif call_id in ids:
            problem = f"repeats id {call_id!r}"
        elif call.get("type") != "function":
            problem = "has a type other than 'function'"
        elif (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not function["name"]
        ):
            problem = "has no function name"
        elif not isinstance(function.get("arguments"), str):
            problem = "has arguments that are not a JSON string"
        else:
            ids.append(call_id)
            if wire_calls is not None:
                wire_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": function["name"], "arguments": function["arguments"]},
                    }
                )
            continue
        defect = defect or f"call {position} {problem}"
        if isinstance(call_id, str) and call_id and call_id not in ids:
            # Still expect its result, so one defect does not also report orphans.
            ids.append(call_id)
    return ids, defect


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
    tail: str | None = None  # role of items[-1], "tool" for a batch
    seen_user = False
    index = -1
    for message in messages:
        index += 1
        if type(message) is not dict and not isinstance(message, dict):
            continue
        role = message.get("role")

        if role == "tool":
            if batch is not None:
                call_id = message.get("tool_call_id")
                # get(..., 0) tells "unknown id" (0) from "not answered yet" (None).
                if isinstance(call_id, str) and batch.get(call_id, 0) is None:
                    batch[call_id] = dict(message)
            continue

        if role == "user":
            seen_user = True
            if tail == "user":
                last = items[-1]
                last["content"] = _join(last.get("content"), message.get("content"))
                if not message.get(CONTEXT_SUMMARY_FLAG):  # no longer nothing but a summary
                    last.pop(CONTEXT_SUMMARY_FLAG, None)
            else:
                items.append(dict(message))
                tail = "user"
            continue

        if role == "assistant":
            raw_calls = message.get("tool_calls")
            if raw_calls:
                batch = None  # results after this message belong to it, or to nothing
            if not seen_user:
                continue
            new = dict(message)
            calls, ids = _repair_calls(raw_calls, index) if raw_calls else ([], [])
            if ids:
                new["tool_calls"] = calls
                if tail == "assistant":
                    # Assistant dicts at the tail never have tool calls: a batch follows those.
                    new["content"] = _join(items.pop().get("content"), new.get("content"))
                batch = _Batch(dict.fromkeys(ids))
                items.append(new)
                items.append(batch)
                tail = "tool"
                continue
            if "tool_calls" in new:
                del new["tool_calls"]
            content = new.get("content")
            if content is None:
                new["content"] = content = ""
            if tail == "assistant":
                last = items[-1]
                last["content"] = _join(last.get("content"), content)
            else:
                items.append(new)
                tail = "assistant"
            continue

        if role == "system" and index == 0 and keep_system:
            items.append(dict(message))
            tail = "system"
        # Anything else (unknown roles, misplaced system messages) is dropped.

    out: list[dict[str, Any]] = []
    for item in items:
        if type(item) is _Batch:
            for call_id, result in item.items():
                if result is None:
                    result = {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": INTERRUPTED_RESULT,
                    }
                out.append(result)
        else:
            out.append(item)
    return out


def _repair_calls(raw: Any, index: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Well-formed calls from ``raw`` (the same list if nothing needed fixing) and their ids."""
    ids, defect = _inspect_calls(raw, None)
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
