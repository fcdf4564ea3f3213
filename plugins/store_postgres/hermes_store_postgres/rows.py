r"""Messages and sessions to rows and back.

A message is kept whole as JSON text (``messages.body``): parsing it gives back a dict equal to
the one appended, every key (``_``-prefixed ones included) in its order; lone surrogates are
written as JSON ``\u`` escapes, so they come back too. Beside it the row holds what search needs:
the searchable text of the content and of the tool calls, their words (a ``tsvector``) and the
tokens for the substring index.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import SessionInfo

from .connections import PostgresStoreError
from .schema import COUNTER_COLUMNS, SESSION_FIELDS
from .text import (
    calls_text,
    column_text,
    dump_json,
    parts_text,
    replace_surrogates,
    substrings_of,
)
from .words import tsvector

INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, role, timestamp, body, content, calls_text, words, "
    "substrings) VALUES (%s, %s, %s, %s, %s, %s, %s::tsvector, %s)"
)
"""The statement the rows of :func:`encode_message` go to."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""In JSON text: the escape of a surrogate (written for text that was not encodable)."""


@dataclass
class EncodedMessage:
    """A message as the store writes it: its ``messages`` row (after the session id), the text
    a session's title may come from (a user message's), and how many tool calls it makes."""

    row: tuple[Any, ...]
    text: str
    tool_call_count: int


def _unstorable(message: Mapping[str, Any]) -> list[str]:
    """The keys of ``message`` whose values are not JSON."""
    bad = []
    for key, value in message.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            bad.append(repr(key))
    return bad


def encode_message(message: Mapping[str, Any], now: float) -> EncodedMessage:
    """The row of one message received at ``now``.

    :raises PostgresStoreError: ``message`` is not a dict, has a key that is not text, or a
        value that is not JSON.
    """
    if not isinstance(message, Mapping):
        raise PostgresStoreError(f"a message must be a dict, not {type(message).__name__}")
    for key in message:
        if type(key) is not str:
            raise PostgresStoreError(f"cannot store a message key that is not text: {key!r}")
    try:
        body = dump_json(dict(message))
    except (TypeError, ValueError) as exc:
        fields = ", ".join(_unstorable(message)) or "the message"
        raise PostgresStoreError(f"cannot store message field(s) {fields}: {exc}") from None
    given = message.get("role")
    role = column_text(given) if type(given) is str else ""
    value = message.get("content")
    content: str | None = None
    if type(value) is str:
        content = column_text(value)
    elif isinstance(value, list):
        content = column_text(parts_text(value))
    calls = message.get("tool_calls")
    calls_searchable = calls_text(calls) if isinstance(calls, list) else None
    searchable = (
        f"{content}\n{calls_searchable}"
        if content and calls_searchable
        else content or calls_searchable
    )
    substrings = substrings_of(searchable) if searchable else None
    return EncodedMessage(
        row=(
            role,
            now,
            body,
            content,
            calls_searchable,
            tsvector(content, calls_searchable),
            substrings.lower() if substrings else None,
        ),
        text=content or "" if role == "user" else "",
        tool_call_count=len(calls) if isinstance(calls, list) else 0,
    )


def decode_bodies(bodies: list[str], clean_text: bool = False) -> list[dict[str, Any]]:
    """The messages of ``bodies`` (``messages.body`` values, in order), in one parse; with
    ``clean_text``, the text of those holding lone surrogates replaced (U+FFFD)."""
    messages: list[dict[str, Any]] = json.loads("[" + ",".join(bodies) + "]")
    if clean_text:
        for index, body in enumerate(bodies):
            if _SURROGATE_ESCAPE.search(body):
                messages[index] = replace_surrogates(messages[index])
    return messages


def session_from_row(row: tuple[Any, ...]) -> SessionInfo:
    """The session of a ``sessions`` row (selected with ``SESSION_SELECT``): its metadata is
    the stored JSON plus the counters."""
    n = len(SESSION_FIELDS)
    values = dict(zip(SESSION_FIELDS, row[1 : 1 + n], strict=True))
    counters = dict(zip(COUNTER_COLUMNS, row[1 + n : 1 + n + len(COUNTER_COLUMNS)], strict=True))
    metadata = json.loads(row[-1] or "{}")
    metadata.update(counters)
    return SessionInfo(id=row[0], metadata=metadata, person=row[-2], **values)


def session_json(value: Any, what: str) -> str:
    """``value`` as JSON text for a session column.

    :raises PostgresStoreError: it is not JSON (naming ``what``).
    """
    try:
        return dump_json(value)
    except (TypeError, ValueError) as exc:
        raise PostgresStoreError(f"cannot store {what}: {exc}") from None
