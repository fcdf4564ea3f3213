"""Context summaries: how a message that stands for compacted turns is recognised.

A context engine that replaces earlier turns with a summary marks the summary message so that
the host and other engines can tell it from what the user wrote: its text starts with
:data:`CONTEXT_SUMMARY_MARKER`, and the message carries the internal field
:data:`CONTEXT_SUMMARY_FLAG` (internal fields are stored with the session but never sent to a
model, so a transcript that came back from the wire has the marker only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CONTEXT_SUMMARY_MARKER = "[CONTEXT SUMMARY - REFERENCE ONLY]"
"""The first text of a summary message's content."""

CONTEXT_SUMMARY_FLAG = "_context_summary"
"""The internal field (``True``) of a message that is nothing but a summary: the host never takes
it for the user's request."""


def starts_with_context_summary(content: Any) -> bool:
    """Whether message ``content`` (a string, or a list of parts whose first is text) starts with
    :data:`CONTEXT_SUMMARY_MARKER`."""
    if isinstance(content, str):
        return content.startswith(CONTEXT_SUMMARY_MARKER)
    if isinstance(content, list) and content:
        first = content[0]
        return (
            isinstance(first, Mapping)
            and isinstance(first.get("text"), str)
            and first["text"].startswith(CONTEXT_SUMMARY_MARKER)
        )
    return False


def is_context_summary(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` holds a context summary: it carries :data:`CONTEXT_SUMMARY_FLAG`, or its
    content starts with :data:`CONTEXT_SUMMARY_MARKER` (a summary an engine put in front of the
    user's latest message, in the same message, is one too; only a flagged message is nothing
    but a summary)."""
    if not isinstance(message, Mapping):
        return False
    return bool(message.get(CONTEXT_SUMMARY_FLAG)) or starts_with_context_summary(
        message.get("content")
    )


__all__ = ["CONTEXT_SUMMARY_FLAG", "CONTEXT_SUMMARY_MARKER", "is_context_summary"]
