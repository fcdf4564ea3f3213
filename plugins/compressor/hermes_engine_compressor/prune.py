"""The first pass, without the model: shrink old tool output.

- A tool output that appears again, word for word, later in the protected tail is replaced by a
  pointer to that later copy (the text is still there once).
- Every other tool output before the protected tail that is longer than ``min_chars`` is replaced
  by one line: which tool, with which arguments, how big the output was, its exit code when it
  reported one, and its first line.

Messages are never removed here and roles never change, so the transcript stays as valid as it
was; only the ``content`` of tool messages changes (in new dicts: the input is not modified).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .tokens import text_of

PRUNED_PREFIX = "[old tool output pruned"
DUPLICATE_PREFIX = "[identical to the output of"
DUPLICATE_MIN_CHARS = 200
"""Shorter outputs are not worth a pointer."""
ARGUMENT_CHARS = 120
FIRST_LINE_CHARS = 80

_EXIT_RE = re.compile(r"(?i)\bexit[ _-]?(?:code|status)\W{0,3}(-?\d+)")
_EXIT_SCAN = 400
"""Characters at each end of an output searched for an exit code."""


def call_index(messages: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Tool call id -> (tool name, JSON arguments), for every call in ``messages``."""
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            if isinstance(function, dict) and isinstance(call.get("id"), str):
                arguments = function.get("arguments")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments, ensure_ascii=False, default=str)
                calls[call["id"]] = (str(function.get("name") or "tool"), arguments)
    return calls


def short(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def exit_code(text: str) -> str | None:
    """The exit code an output reports (``exit code 2``, ``"exit_code": 0``...), if any."""
    for part in (text[:_EXIT_SCAN], text[-_EXIT_SCAN:] if len(text) > _EXIT_SCAN else ""):
        if "xit" in part or "XIT" in part:
            found = _EXIT_RE.search(part)
            if found:
                return found.group(1)
    return None


def one_line(name: str, arguments: str, text: str) -> str:
    """The line that replaces an old tool output."""
    parts = [f"{PRUNED_PREFIX}: {name}({short(arguments, ARGUMENT_CHARS)}) returned"]
    parts.append(f" {len(text):,} characters")
    code = exit_code(text)
    if code is not None:
        parts.append(f", exit code {code}")
    first = next((line for line in text[:400].splitlines() if line.strip()), "")
    if first:
        parts.append(f'; first line: "{short(first, FIRST_LINE_CHARS)}"')
    parts.append("]")
    return "".join(parts)


def is_pruned(text: str) -> bool:
    """Whether a tool output is already a pruned line or a pointer."""
    return text.startswith(PRUNED_PREFIX) or text.startswith(DUPLICATE_PREFIX)


def prune(
    messages: list[dict[str, Any]],
    tail_start: int,
    min_chars: int,
    calls: dict[str, tuple[str, str]] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Return ``messages`` with old tool output shrunk, and how many characters that saved.

    ``messages[tail_start:]`` is the protected tail: its outputs are kept, except earlier copies
    of an output that appears again later in the tail.
    """
    calls = call_index(messages) if calls is None else calls
    # The last position of every tool output in the tail long enough to be worth a pointer.
    latest: dict[str, int] = {}
    for index in range(tail_start, len(messages)):
        message = messages[index]
        content = message.get("content")
        if (
            message.get("role") == "tool"
            and type(content) is str
            and len(content) >= DUPLICATE_MIN_CHARS
        ):
            latest[content] = index

    out = list(messages)
    saved = 0
    for index, message in enumerate(messages):
        if message.get("role") != "tool":
            continue
        content = message.get("content")
        text = content if type(content) is str else text_of(content)
        if len(text) < DUPLICATE_MIN_CHARS or is_pruned(text):
            continue
        call_id = message.get("tool_call_id")
        name, arguments = calls.get(call_id or "", (message.get("tool_name") or "tool", "{}"))
        later = latest.get(text) if type(content) is str else None
        replacement: str | None = None
        if later is not None and later > index:
            later_id = messages[later].get("tool_call_id")
            replacement = (
                f"{DUPLICATE_PREFIX} the later {name} call {later_id}: "
                f"{len(text):,} characters, shown there]"
            )
        elif index < tail_start and len(text) >= min_chars:
            replacement = one_line(name, arguments, text)
        if replacement is not None and len(replacement) < len(text):
            out[index] = {**message, "content": replacement}
            saved += len(text) - len(replacement)
    return out, saved
