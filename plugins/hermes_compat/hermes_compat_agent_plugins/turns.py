"""What the hooks remember between calls about each session's turns, as the Hermes agent's hook
arguments need it: the platform of each session, the current turn's ids and user message, the
``pre_llm_call`` context of each turn, and the model requests under way."""

from __future__ import annotations

import threading
import uuid
from collections import deque
from collections.abc import Mapping
from typing import Any

PLUGIN_SOURCE = "plugin"
"""The session source of ``ctx.llm`` completions."""

_lock = threading.Lock()
_platforms: dict[str, str] = {}
_turn_context: dict[tuple[str, int, int], str] = {}
_turn_user: dict[str, Any] = {}
_pending: deque[dict[str, Any]] = deque(maxlen=64)
_turns: dict[str, dict[str, Any]] = {}


def text_of(content: Any) -> str:
    """The text of a message's ``content`` (a string, or the text parts of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def started(session_id: str, platform: str) -> None:
    """Remember the platform (the session's source) of a session that started."""
    with _lock:
        _platforms[session_id] = platform


def ended(session_id: str) -> None:
    """Forget everything about a session that ended."""
    with _lock:
        _platforms.pop(session_id, None)
        _turn_user.pop(session_id, None)
        _turns.pop(session_id, None)
        for key in [k for k in _turn_context if k[0] == session_id]:
            del _turn_context[key]


def platform_of(session_id: str) -> str:
    """The platform of the session (``cli`` when it is not known)."""
    return _platforms.get(session_id, "cli")


def is_plugin_call(session_id: str) -> bool:
    """Whether the session is a ``ctx.llm`` completion: like the Hermes agent's auxiliary calls,
    those fire no turn or request hooks."""
    return _platforms.get(session_id) == PLUGIN_SOURCE


def next_request(session_id: str, task_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``turn_id``, ``api_request_id`` and ``api_call_count`` of a new model request, made
    as the Hermes agent makes them: a turn starts with a new user message, its id is
    ``<session>:<task>:<8 hex>``, and its requests are ``<turn_id>:api:<n>``."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    last = users[-1] if users else -1
    key = (last, hash(text_of(messages[last].get("content"))) if users else 0)
    with _lock:
        turn = _turns.get(session_id)
        if turn is None or turn["key"] != key:
            turn_id = f"{session_id or 'session'}:{task_id}:{uuid.uuid4().hex[:8]}"
            turn = _turns[session_id] = {"key": key, "turn_id": turn_id, "calls": 0}
        turn["calls"] += 1
        turn["api_request_id"] = f"{turn['turn_id']}:api:{turn['calls']}"
        return {
            "turn_id": turn["turn_id"],
            "api_request_id": turn["api_request_id"],
            "api_call_count": turn["calls"],
        }


def turn_ids(session_id: str) -> dict[str, str]:
    """The ``turn_id`` and the last ``api_request_id`` of the session's current turn."""
    with _lock:
        turn = _turns.get(session_id) or {}
    return {"turn_id": turn.get("turn_id", ""), "api_request_id": turn.get("api_request_id", "")}


def set_user_message(session_id: str, content: Any) -> None:
    """Remember the content of the user message the session's current turn answers."""
    with _lock:
        _turn_user[session_id] = content


def user_message(session_id: str) -> Any:
    """The content of the user message the session's current turn answers (``""``)."""
    return _turn_user.get(session_id, "")


def push_request(request: dict[str, Any]) -> None:
    """Remember a model request that was sent, until its response arrives."""
    with _lock:
        _pending.append(request)


def pop_request() -> dict[str, Any]:
    """The model request whose response arrived (the last one sent), or ``{}``."""
    with _lock:
        return _pending.pop() if _pending else {}


def _with_context(message: dict[str, Any], extra: str) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [*content, {"type": "text", "text": extra}]}
    return {**message, "content": f"{content or ''}\n\n{extra}"}


def inject_turn_context(host: Any, request: Any, turn_id: str) -> None:
    """``pre_llm_call``: once per turn, when the request ends with a new user message; what the
    callbacks return is appended to that user message in this and every later request of the
    session (the stored transcript keeps the clean message)."""
    messages = request.messages
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        return
    index = users[-1]
    message = messages[index]
    key = (request.session_id, index, hash(text_of(message.get("content"))))
    with _lock:
        known = _turn_context.get(key)
    if known is None:
        if index != len(messages) - 1:
            return
        known = _ask_turn_context(host, request, message, len(users) == 1, turn_id)
        with _lock:
            _turn_context[key] = known
    if known:
        request.messages = [
            *messages[:index],
            _with_context(message, known),
            *messages[index + 1 :],
        ]


def _ask_turn_context(
    host: Any, request: Any, message: dict[str, Any], first: bool, turn_id: str
) -> str:
    """What the ``pre_llm_call`` callbacks add to the turn's user message."""
    history = [dict(m) for m in request.messages if m.get("role") != "system"]
    payload = {
        "session_id": request.session_id,
        "task_id": request.task_id,
        "turn_id": turn_id,
        "user_message": message.get("content"),
        "conversation_history": history,
        "is_first_turn": first,
        "model": request.model,
        "platform": platform_of(request.session_id),
        "parent_session_id": "",
        "sender_id": "",
    }
    parts = []
    for _plugin, result in host.invoke("pre_llm_call", payload):
        text = result.get("context") if isinstance(result, Mapping) else result
        if isinstance(text, str) and text.strip():
            parts.append(text.strip())
    return "\n\n".join(parts)
