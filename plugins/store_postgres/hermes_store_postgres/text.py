"""What a message's text gives the store: its searchable text, the tokens the substring index
holds, a session's title, and text UTF-8 cannot carry (lone surrogates) made storable.

These rules are the SQLite store's (``hermes_core.session_store.codec``), written again here
because a plugin never imports the core; the parity tests run both stores over the same data,
so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import json
import re
from typing import Any

TITLE_CHARS = 60
"""The longest title taken from a first user message."""

UNSPACED = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff]"
)
"""Scripts written without spaces (CJK, kana, hangul): searched as substrings."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SUBSTRINGS_MAX = 65_536
_SUBSTRING_TOKEN_MAX = 300
_LEADING_PUNCT = "([{<'\"`“‘"
_TRAILING_PUNCT = ".,;:!?)]}>'\"`”’"


def strip_token(token: str) -> str:
    """``token`` without the punctuation of the sentence around it (``(see config.yaml).``)."""
    return token.lstrip(_LEADING_PUNCT).rstrip(_TRAILING_PUNCT)


def encodable(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8 (lone surrogates cannot)."""
    return text.isascii() or _SURROGATE.search(text) is None


def clean(text: str) -> str:
    """``text`` with every lone surrogate replaced by ``?`` (as the SQLite store cleans the
    text it indexes)."""
    return text if encodable(text) else text.encode("utf-8", "replace").decode("utf-8")


def column_text(text: str) -> str:
    """``text`` as a PostgreSQL text column can hold it: lone surrogates replaced as
    :func:`clean` does, and NUL characters (which no PostgreSQL text can hold) by U+FFFD."""
    text = clean(text)
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def replace_surrogates(value: Any) -> Any:
    """A copy of ``value`` (a message, or any JSON value) with every lone surrogate in its text
    replaced by U+FFFD and surrogate pairs joined into their character."""
    if isinstance(value, str):
        if encodable(value):
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_surrogates(item) for item in value]
    return value


def dump_json(value: Any) -> str:
    """``value`` as compact JSON text that PostgreSQL can hold: lone surrogates (and NUL, as
    always) are written as JSON escapes, so that parsing it gives ``value`` back exactly.

    :raises TypeError, ValueError: ``value`` is not JSON.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if not encodable(text):
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def parts_text(parts: list[Any]) -> str:
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


def calls_text(calls: list[Any]) -> str | None:
    """The searchable text of tool calls: one ``name arguments`` line per call."""
    lines = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, arguments = function.get("name"), function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False) if arguments else ""
            lines.append(f"{name or ''} {arguments}".strip())
    return column_text("\n".join(lines)) if lines else None


def substrings_of(text: str) -> str | None:
    """What the substring index holds for ``text``: its tokens that contain a digit,
    punctuation or CJK (URLs, paths, file names, error codes, numbers, CJK runs), once each,
    one per line. Plain words are left to the word index."""
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
