"""Messages and sessions to rows and back: every message dict comes back exactly as appended.

A row holds the whole message as JSON (``body``), and its well-known keys in columns; every
other key also goes to the ``extra`` JSON object and ``layout`` keeps the key order, so a row
without a body (written before the column existed) decodes exactly too. Encoding also derives
what the search indexes hold (the text of the content and tool calls, and the ``substrings``
for the trigram index) and a session's title.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from hermes_hookspecs import SessionInfo

from .errors import SessionStoreError
from .schema import COUNTER_COLUMNS, SESSION_FIELDS
from .surrogates import replace_surrogates

TITLE_CHARS = 60

UNSPACED = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff]"
)
"""Scripts written without spaces (CJK, kana, hangul): searched as substrings."""

_TEXT_COLUMNS = ("tool_call_id", "tool_name", "reasoning", "finish_reason")
_NULLABLE = frozenset(("tool_calls", *_TEXT_COLUMNS, "token_count"))
"""Keys whose ``None`` is a ``NULL`` column (a ``None`` role is kept in ``extra``)."""
_MESSAGE_SELECT = (
    "role, content, content_parts, tool_calls, tool_call_id, tool_name, reasoning, "
    "finish_reason, token_count, layout, extra, NULL"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_LAYOUT_SEP = "\x1f"
_SUBSTRINGS_MAX = 65_536
_SUBSTRING_TOKEN_MAX = 300
_LEADING_PUNCT = "([{<'\"`“‘"
_TRAILING_PUNCT = ".,;:!?)]}>'\"`”’"


def strip_token(token: str) -> str:
    """A token without the punctuation of the sentence around it (``(see config.yaml).``)."""
    return token.lstrip(_LEADING_PUNCT).rstrip(_TRAILING_PUNCT)


def _encodable(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8 (lone surrogates cannot)."""
    return text.isascii() or _SURROGATE.search(text) is None


def _clean(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def dump_json(value: Any, what: str) -> str:
    """``value`` as compact JSON for a column; a :class:`SessionStoreError` naming ``what`` when
    it is not JSON."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise SessionStoreError(f"cannot store {what}: {exc}") from None
    if not _encodable(text):
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def _pack_layout(keys: list[str]) -> str:
    """The keys joined by a unit separator, or JSON when a key could be misread."""
    if any(_LAYOUT_SEP in k or k.startswith("[") for k in keys) or not all(map(_encodable, keys)):
        return json.dumps(keys)
    return _LAYOUT_SEP.join(keys)


def _unpack_layout(text: str) -> list[str]:
    if text.startswith("["):
        keys: list[str] = json.loads(text)
        return keys
    return text.split(_LAYOUT_SEP) if text else []


def _parts_text(parts: list[Any]) -> str:
    """The searchable text of a list content: its text parts, one per line."""
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            value = part.get("text")
            if isinstance(value, str):
                texts.append(value)
    return "\n".join(texts)


def _calls_text(calls: list[Any]) -> str | None:
    """The searchable text of tool calls: one ``name arguments`` line per call."""
    lines = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, arguments = function.get("name"), function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False) if arguments else ""
            lines.append(f"{name or ''} {arguments}".strip())
    return _clean("\n".join(lines)) if lines else None


def substrings_of(text: str) -> str | None:
    """What the trigram index holds for ``text``: its tokens that contain a digit, punctuation
    or CJK (URLs, paths, file names, error codes, numbers, CJK runs), once each. Plain words are
    left to the word index, which keeps the trigram index and its cost small."""
    kept: dict[str, None] = {}
    size = 0
    for raw in text.split():
        if raw.isalpha() and raw.isascii():  # most words: left to the word index
            continue
        token = strip_token(raw)
        if len(token) < 3 or token in kept:
            continue
        if UNSPACED.search(token) is None and (
            token.isalpha() or len(token) > _SUBSTRING_TOKEN_MAX
        ):
            continue
        kept[token] = None
        size += len(token) + 1
        if size > _SUBSTRINGS_MAX:
            break
    return "\n".join(kept) if kept else None


@dataclass
class EncodedMessage:
    """A message as the store writes it: its ``messages`` row, the text a session's title may
    come from (a user message's), and how many tool calls it makes."""

    row: tuple[Any, ...]
    text: str
    tool_call_count: int


def encode_message(session_id: str, message: Mapping[str, Any], now: float) -> EncodedMessage:
    """Turn a message dict into a ``messages`` row that :func:`_decode_message` turns back."""
    if not isinstance(message, Mapping):
        raise SessionStoreError(f"a message must be a dict, not {type(message).__name__}")
    extra: dict[str, Any] = {}
    role = content = parts = tool_calls = calls_text = token_count = None
    texts: dict[str, str] = {}
    for key, value in message.items():
        if key == "role" and type(value) is str and _encodable(value):
            role = value
        elif key == "content" and value is not None:
            if type(value) is str:
                if _encodable(value):
                    content = value
                else:  # kept exactly in extra; a cleaned copy is indexed
                    extra[key] = value
                    content = _clean(value)
            elif isinstance(value, list):
                parts = dump_json(value, "the message content")
                content = _clean(_parts_text(value))
            else:
                extra[key] = value
        elif key == "tool_calls" and isinstance(value, list):
            tool_calls = dump_json(value, "the tool calls")
            calls_text = _calls_text(value)
        elif key in _TEXT_COLUMNS and type(value) is str and _encodable(value):
            texts[key] = value
        elif key == "token_count" and type(value) is int and abs(value) < 2**63:
            token_count = value
        elif value is not None or key not in _NULLABLE:
            if type(key) is not str:
                raise SessionStoreError(f"cannot store a message key that is not text: {key!r}")
            extra[key] = value
    searchable = f"{content}\n{calls_text}" if content and calls_text else content or calls_text
    calls = message.get("tool_calls")
    return EncodedMessage(
        row=(
            session_id,
            role or "",
            content,
            parts,
            tool_calls,
            texts.get("tool_call_id"),
            texts.get("tool_name"),
            texts.get("reasoning"),
            texts.get("finish_reason"),
            now,
            token_count,
            _pack_layout(list(message)),
            dump_json(extra, f"message field(s) {', '.join(map(repr, extra))}") if extra else None,
            calls_text,
            substrings_of(searchable) if searchable else None,
            _body(message),
        ),
        text=content or "" if role == "user" else "",
        tool_call_count=len(calls) if isinstance(calls, list) else 0,
    )


def _body(message: Mapping[str, Any]) -> str | None:
    """The whole message as JSON, which :func:`parse_bodies` turns back into an equal dict;
    ``None`` when its text is not encodable (lone surrogates): such a message is read from its
    columns, where the store can give it back both exactly and cleaned."""
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # reported by the columns' own encoding
        return None
    return text if _encodable(text) else None


def parse_bodies(bodies: list[str]) -> list[dict[str, Any]]:
    """The messages of ``bodies`` (``messages.body`` values), in one parse."""
    messages: list[dict[str, Any]] = json.loads("[" + ",".join(bodies) + "]")
    return messages


_BODIES_ARRAY = (
    # An aggregate over a subquery with ORDER BY: SQLite does not flatten it, so the subquery
    # runs as a co-routine and feeds group_concat its rows in order.
    "SELECT count(*) = count(body), '[' || group_concat(body, ',') || ']' "
    "FROM (SELECT body FROM messages WHERE session_id = ? ORDER BY id)"
)


def message_bodies(
    conn: sqlite3.Connection, session_id: str
) -> tuple[str | None, list[str | None], list[tuple[Any, ...]]]:
    """A session's messages as stored, from one snapshot: the JSON array of every message's
    ``body`` when each row has one; else each row's ``body`` (or ``None``) in order, with the
    ``_MESSAGE_SELECT`` rows of those that have none, in order.

    The array comes from SQLite as one string, which spares a Python string per row and
    their join. A session begun before the column existed is read as every row's columns, in
    one pass, as it was before; a row without a body among rows with one (lone surrogates
    make those) is read again afterwards."""
    conn.execute("BEGIN")
    try:
        first = conn.execute(
            "SELECT body IS NULL FROM messages WHERE session_id = ? ORDER BY id LIMIT 1",
            (session_id,),
        ).fetchone()
        if first is None:
            return "[]", [], []
        if not first[0]:
            complete, array = conn.execute(_BODIES_ARRAY, (session_id,)).fetchone()
            if complete:
                return array, [], []
        rows = conn.execute(
            f"SELECT {_MESSAGE_SELECT}, body FROM messages WHERE session_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()
        bodies = [row[-1] for row in rows]  # the body last: each row is a _MESSAGE_SELECT row
        return None, bodies, [row for row in rows if row[-1] is None]
    finally:
        conn.execute("COMMIT")


INSERT_MESSAGE_SQL = (
    # The statement the rows of encode_message (and iter_message_rows) go to.
    "INSERT INTO messages (session_id, role, content, content_parts, tool_calls, tool_call_id, "
    "tool_name, reasoning, finish_reason, timestamp, token_count, layout, extra, calls_text, "
    "substrings, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


_COLUMN_OF = {
    "role": 0,
    "content": 1,
    "tool_calls": 3,
    "tool_call_id": 4,
    "tool_name": 5,
    "reasoning": 6,
    "finish_reason": 7,
    "token_count": 8,
}
"""The position in a ``_MESSAGE_SELECT`` row of each key that has a column of its own."""
_NO_COLUMN = 11
"""The position of the ``NULL`` that ends every ``_MESSAGE_SELECT`` row: the value of a key
that has neither a column nor a place in ``extra``."""
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""In JSON text: the escape of a surrogate (written for text that was not encodable)."""

_Picker = Callable[[Sequence[Any]], tuple[Any, ...]]


def _picker(columns: list[int]) -> _Picker:
    """A function giving the values at ``columns`` of a row, as a tuple."""
    if len(columns) > 1:
        return itemgetter(*columns)
    if columns:
        index = columns[0]
        return lambda row: (row[index],)
    return lambda row: ()


@functools.lru_cache(maxsize=512)
def _plan(layout: str) -> tuple[tuple[str, ...], _Picker]:
    """The keys of a message with ``layout``, in order, and the function that picks their
    values out of a row."""
    keys = tuple(_unpack_layout(layout))
    return keys, _picker([_COLUMN_OF.get(key, _NO_COLUMN) for key in keys])


def _decode_message(
    row: Sequence[Any], parts: Any = None, calls: Any = None, extra: Any = None
) -> dict[str, Any]:
    """The message dict a row of ``_MESSAGE_SELECT`` holds, given its JSON columns (content
    parts, tool calls, extra) parsed."""
    keys, pick = _plan(row[9])
    if parts is not None or calls is not None:
        row = list(row)
        if parts is not None:
            row[1] = parts
        if calls is not None:
            row[3] = calls
    message = dict(zip(keys, pick(row), strict=True))
    if extra:
        for key, value in extra.items():
            if key in message:
                message[key] = value
    return message


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection while the block runs (unless another thread allows it again).

    Reading a long session makes hundreds of thousands of objects that either live on (the
    messages) or are freed by their reference counts (the rows); none forms a cycle. With the
    collector running, every few thousand of them it would walk all that were made so far;
    paused, the objects still alive at the end are walked once, by the next collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode_messages(rows: list[tuple[Any, ...]], clean: bool = False) -> list[dict[str, Any]]:
    """The messages of ``rows`` (of ``_MESSAGE_SELECT``), equal to the dicts that were
    appended; with ``clean``, their text made encodable (see :func:`replace_surrogates`).

    The JSON of all rows is parsed in one go per column, which is several times faster than a
    parse per value for a long session. Only JSON text can bring back a lone surrogate (the
    other columns hold encodable text), so cleaning looks at a row only when the text of its
    columns has the escape of one."""
    parsed = [_parse_column([row[index] for row in rows]) for index in (2, 3, 10)]
    messages = list(map(_decode_message, rows, *(values for values, _ in parsed)))
    if clean and any(dirty for _, dirty in parsed):
        for index, row in enumerate(rows):
            if any(text and _SURROGATE_ESCAPE.search(text) for text in (row[2], row[3], row[10])):
                messages[index] = replace_surrogates(messages[index])
    return messages


def _parse_column(texts: list[str | None]) -> tuple[list[Any], bool]:
    """Each JSON text of ``texts`` parsed (``None`` for a missing one), in one parse; and
    whether any of them holds the escape of a surrogate."""
    present = [text for text in texts if text]
    if not present:
        return [None] * len(texts), False
    joined = "[" + ",".join(present) + "]"
    try:
        values = iter(json.loads(joined))
    except ValueError:  # one damaged value: parse each, so the error is that value's own
        values = iter([json.loads(text) for text in present])
    dirty = _SURROGATE_ESCAPE.search(joined) is not None
    return [next(values) if text else None for text in texts], dirty


def session_from_row(row: tuple[Any, ...]) -> SessionInfo:
    """The session of a ``sessions`` row (selected with the store's session columns)."""
    n = len(SESSION_FIELDS)
    values = dict(zip(SESSION_FIELDS, row[1 : 1 + n], strict=True))
    counters = dict(zip(COUNTER_COLUMNS, row[1 + n : 1 + n + len(COUNTER_COLUMNS)], strict=True))
    metadata = json.loads(row[-1] or "{}")
    metadata.update(counters)
    return SessionInfo(id=row[0], metadata=metadata, person=row[-2], **values)


def make_title(text: str, width: int = TITLE_CHARS) -> str:
    """A one-line title of at most ``width`` characters from the start of ``text``."""
    line = " ".join(text.split())
    if len(line) <= width:
        return line
    cut = line[: width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:-") + "…"


def iter_message_rows(
    messages: Iterable[Mapping[str, Any]], session_id: str, now: float | None = None
) -> Iterable[tuple[Any, ...]]:
    """Rows for ``INSERT`` into ``messages`` (for bulk loading, e.g. imports and benchmarks)."""
    stamp = time.time() if now is None else now
    for message in messages:
        yield encode_message(session_id, message, stamp).row


def message_row(message: Mapping[str, Any], session_id: str, timestamp: float) -> tuple[Any, ...]:
    """The ``messages`` row of one message received at ``timestamp`` (for copying messages
    another store kept, with their own times)."""
    return encode_message(session_id, message, timestamp).row
