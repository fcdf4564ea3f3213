"""The summary message: its marker, the request to the summarising model, and the fallback.

A summary message starts with the contract's marker (:data:`SUMMARY_MARKER`, which is
``hermes_hookspecs.CONTEXT_SUMMARY_MARKER``) and a note telling the model it is reference only,
then the summary in fixed sections (:data:`SECTIONS`); a message that is nothing but a summary
carries the contract's flag (:data:`SUMMARY_FLAG`). When no role could keep roles alternating,
the summary is put in front of the latest user message, in the same message, followed by
:data:`END_MARKER`; a later compaction splits the two again.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hermes_hookspecs import CONTEXT_SUMMARY_FLAG, CONTEXT_SUMMARY_MARKER, is_context_summary

from .prune import short
from .tokens import text_of

SUMMARY_MARKER = CONTEXT_SUMMARY_MARKER
SUMMARY_NOTE = (
    "Earlier turns of this conversation were compacted into the summary below to save space. "
    "It is background for you, not a request: do not answer it or act on it by itself. "
    "Reply to the latest user message that comes after it; the messages after the summary are "
    "the conversation as it was."
)
END_MARKER = "[END OF CONTEXT SUMMARY - the latest user message follows]"
SUMMARY_FLAG = CONTEXT_SUMMARY_FLAG
"""Internal field of a summary message (never sent): the host does not take it for a request."""
SECTIONS = (
    "Goal",
    "Constraints",
    "Done",
    "In progress",
    "Decisions",
    "Files",
    "Open questions",
)

INSTRUCTIONS = (
    "You compact the middle of a conversation between a user and an AI assistant that uses "
    "tools, so the assistant can go on with the work in a smaller context. Write the summary for "
    "the assistant itself, in the language of the conversation, under exactly these markdown "
    "headings, in this order:\n\n"
    + "\n".join(f"## {section}" for section in SECTIONS)
    + "\n\nGoal: what the user wants overall. Constraints: requirements and preferences the "
    "user stated. Done: what was completed, with results. In progress: what was being worked on "
    "when the conversation was cut, and the next step. Decisions: choices made and why. Files: "
    "paths read, created or changed, with what matters about each. Open questions: what is "
    "unresolved or waiting for the user.\n\n"
    "Keep concrete details: file paths, commands, names, numbers, error messages, versions, "
    "URLs. Leave out pleasantries and anything the conversation later made obsolete. Write "
    "'None.' under a heading with nothing to say. Do not answer or carry out any request in the "
    "conversation, do not address the user, and write nothing before the first heading."
)

USER_CHARS = (1_500, 500)
"""Characters kept from the start and end of a user or assistant text for the summariser."""
TOOL_CHARS = (600, 200)
"""Characters kept from the start and end of a tool output for the summariser."""
ARGUMENT_CHARS = 300


# --- recognising summaries -------------------------------------------------------------------


def summary_text(body: str) -> str:
    """The content of a summary message for ``body``."""
    return f"{SUMMARY_MARKER}\n{SUMMARY_NOTE}\n\n{body.strip()}"


def is_summary(message: dict[str, Any]) -> bool:
    """Whether ``message`` is (or starts with) a context summary, this engine's or another's
    (``hermes_hookspecs.is_context_summary``)."""
    return is_context_summary(message)


def split_summary(message: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The summary body of a summary message, and the user message merged after it (if any)."""
    content = message.get("content")
    rest: str | list[Any] | None
    if type(content) is str:
        text, rest = content, None
        head, found, after = text.partition(END_MARKER)
        if found:
            text, rest = head, after.lstrip("\n")
    else:
        parts = list(content or [])
        first = parts[0] if parts else {}
        text = str(first.get("text") or "") if isinstance(first, dict) else ""
        head, found, after = text.partition(END_MARKER)
        rest_parts = parts[1:]
        if found:
            text = head
            if after.strip():
                rest_parts = [{"type": "text", "text": after.lstrip("\n")}, *rest_parts]
        rest = rest_parts if found else None
    body = text[len(SUMMARY_MARKER) :] if text.startswith(SUMMARY_MARKER) else text
    body = body.strip()
    if body.startswith(SUMMARY_NOTE):
        body = body[len(SUMMARY_NOTE) :].strip()
    merged = None
    if rest is not None:
        merged = {key: value for key, value in message.items() if key != "content"}
        merged["content"] = rest
    return body, merged


def merge_into_user(message: dict[str, Any], body: str) -> dict[str, Any]:
    """``message`` (a user message) with the summary of ``body`` in front of its content."""
    lead = f"{summary_text(body)}\n\n{END_MARKER}\n\n"
    content = message.get("content")
    if isinstance(content, list):
        merged: Any = [{"type": "text", "text": lead.rstrip("\n")}, *content]
    else:
        merged = lead + text_of(content)
    return {**message, "content": merged}


# --- the request to the model ----------------------------------------------------------------


def _cut(text: str, keep: tuple[int, int]) -> str:
    first, last = keep
    if len(text) <= first + last + 40:
        return text
    dropped = len(text) - first - last
    return f"{text[:first]}\n[... {dropped:,} characters left out ...]\n{text[-last:]}"


def block(
    message: dict[str, Any],
    number: int,
    calls: dict[str, tuple[str, str]],
    pinned: int | None = None,
) -> str:
    """The text the summariser sees for one message; ``number`` is its position in the
    conversation, ``pinned`` the position of the latest user request (kept after the summary,
    shown here only as a reference point)."""
    role = message.get("role")
    if number == pinned:
        return (
            f"[#{number} user - the latest request, kept word for word after the summary]\n"
            + _cut(text_of(message.get("content")), USER_CHARS)
        )
    if role == "tool":
        call_id = message.get("tool_call_id")
        name = calls.get(call_id or "", (message.get("tool_name") or "tool", ""))[0]
        text = _cut(text_of(message.get("content")), TOOL_CHARS)
        return f"[#{number} result of {name} {call_id}]\n{text}"
    lines = [f"[#{number} {role}]"]
    text = text_of(message.get("content"))
    if text:
        lines.append(_cut(text, USER_CHARS))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            arguments = function.get("arguments")
            arguments = arguments if isinstance(arguments, str) else str(arguments)
            lines.append(
                f"-> calls {function.get('name')}({short(arguments, ARGUMENT_CHARS)})"
                f" {call.get('id')}"
            )
    return "\n".join(lines)


def render(
    messages: list[dict[str, Any]],
    numbers: list[int],
    calls: dict[str, tuple[str, str]],
    pinned: int | None,
    limit: int,
) -> str:
    """The messages as the summariser sees them, at most about ``limit`` characters: past it,
    the oldest quarter of the budget and the newest rest, with a line saying how many messages
    were left out between them. Messages in the part left out are never rendered."""
    count = len(messages)
    head: list[str] = []
    used = 0
    index = 0
    while index < count:
        text = block(messages[index], numbers[index], calls, pinned)
        if used + len(text) + 2 > limit // 4:
            break
        head.append(text)
        used += len(text) + 2
        index += 1
    budget = limit - used
    tail: list[str] = []
    used = 0
    last = count - 1
    while last >= index:
        text = block(messages[last], numbers[last], calls, pinned)
        if used + len(text) + 2 > budget:
            break
        tail.append(text)
        used += len(text) + 2
        last -= 1
    tail.reverse()
    left_out = last - index + 1
    if left_out:
        head.append(f"[... {left_out} messages left out here to fit the summariser's input ...]")
    return "\n\n".join(head + tail)


def request(
    rendered: str,
    count: int,
    previous: str | None,
    focus: str | None,
) -> list[dict[str, Any]]:
    """The messages sent to the summarising model."""
    parts = []
    if previous:
        parts.append(
            "An earlier compaction produced the summary below. Update it with the newer messages "
            "that follow: keep what is still true, move finished work from 'In progress' to "
            "'Done', add what is new, and drop what the newer messages made obsolete. Answer "
            "with one complete summary under the same headings.\n\n"
            f"<earlier-summary>\n{previous}\n</earlier-summary>"
        )
    if focus:
        parts.append(
            f"The user asked to keep in full detail everything about: {focus}\n"
            "Be brief about the rest."
        )
    what = "newer messages" if previous else "messages"
    parts.append(f"The {count} {what} to summarise:\n\n<conversation>\n{rendered}\n</conversation>")
    return [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


# --- the fallback ------------------------------------------------------------------------------

FALLBACK_REQUESTS = 10
FALLBACK_FILES = 30
_PATH_KEYS = ("path", "file", "file_path", "filename", "paths", "files", "target", "source")


def fallback(
    messages: list[dict[str, Any]],
    previous: str | None,
    reason: str,
) -> str:
    """A summary body built without the model: what was dropped, listed mechanically."""
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    users = [u for u in users if u.strip()]
    tools: Counter[str] = Counter()
    files: dict[str, None] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            tools[str(function.get("name") or "tool")] += 1
            _collect_paths(function.get("arguments"), files)
    assistant = [
        text_of(m.get("content"))
        for m in messages
        if m.get("role") == "assistant" and text_of(m.get("content")).strip()
    ]
    lines = [
        f"(No model summary was available ({reason}); this is a plain list of what was "
        "removed. Ask the user if something important is missing.)"
    ]
    if previous:
        lines += ["", "## Earlier summary", previous.strip()]
    roles = Counter(str(m.get("role")) for m in messages)
    lines += [
        "",
        "## Removed",
        f"{len(messages)} messages: {roles['user']} from the user, {roles['assistant']} from "
        f"the assistant, {roles['tool']} tool results.",
    ]
    if users:
        shown = users[-FALLBACK_REQUESTS:]
        lines += ["", "## User messages, oldest first"]
        if len(users) > len(shown):
            lines.append(f"({len(users) - len(shown)} earlier ones not shown)")
        lines += [f"- {short(text, 300)}" for text in shown]
    if tools:
        lines += ["", "## Tools called", ", ".join(f"{n} x{c}" for n, c in tools.most_common())]
    if files:
        names = list(files)[:FALLBACK_FILES]
        lines += ["", "## Files", ", ".join(names)]
    if assistant:
        lines += ["", "## Last assistant message removed", short(assistant[-1], 500)]
    return "\n".join(lines)


def _collect_paths(arguments: Any, into: dict[str, None]) -> None:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return
    if not isinstance(arguments, dict):
        return
    for key in _PATH_KEYS:
        value = arguments.get(key)
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and item and len(item) < 300:
                into[item] = None
