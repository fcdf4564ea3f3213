"""Words for PostgreSQL's full-text search, cut the way SQLite's ``unicode61`` tokenizer cuts
them (``remove_diacritics 2``), so that a word search finds in PostgreSQL what it finds in the
SQLite store.

PostgreSQL's own parser is not used: it keeps ``config.yaml`` or ``user@example.com`` as one
word, needs a locale to see CJK as letters, and stems with most configurations. Instead the
store cuts the text here and hands PostgreSQL a ready ``tsvector`` (and ``tsquery``) in their
text form: a token is a run of letters, digits and private-use characters (``_``, punctuation,
symbols and combining marks separate), lower-cased, with the diacritics of Latin letters
removed (``Café`` is ``cafe``); a CJK run without spaces is one token, as in SQLite.

Where this differs from SQLite (its tables are of Unicode 6.1): characters assigned since then
(newer emoji and symbols, marks of some scripts) are letters to SQLite and separators here, and
a few Latin letters with two diacritics (``ǡ``) keep them in SQLite. The parity tests compare
the two tokenizers on text of many scripts.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

_DIACRITICS = (
    "\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u0309\u030a\u030b\u030c\u030f"
    "\u0311\u031b\u0323\u0324\u0325\u0326\u0327\u0328\u032d\u032e\u0330\u0331"
)
"""The combining marks ``remove_diacritics 2`` drops: from decomposed text, and from the
precomposed Latin letters that carry them."""
_TOKEN = re.compile(f"(?:[^\\W_]|[{_DIACRITICS}\ue000-\uf8ff\U000f0000-\U0010fffd])+")
"""A token: letters and digits (``\\w`` without ``_``), private-use characters, and the
diacritics that are dropped from inside a word."""
_DROPPED = re.compile(f"[{_DIACRITICS}]")
_SPECIAL_FOLDS = {"µ": "μ", "ſ": "s", "ẞ": "ß", "İ": "i", "K": "k", "Ω": "ω", "Å": "a"}
"""Letters SQLite's tokenizer folds otherwise than ``str.lower`` does."""

MAX_POSITION = 16383
"""The last position a ``tsvector`` records; later tokens all get this one."""
MAX_POSITIONS = 255
"""At most this many positions are kept per word (PostgreSQL keeps 256)."""
MAX_WORD_BYTES = 2046
"""The longest word a ``tsvector`` holds, in UTF-8 bytes; longer tokens are not indexed."""
MAX_VECTOR_BYTES = 900_000
"""About the largest ``tsvector`` made for one message (PostgreSQL refuses one over 1 MiB):
the words of a longer text past this are not indexed."""


@functools.lru_cache(maxsize=4096)
def _fold_letter(letter: str) -> str:
    """One non-ASCII character as the index keeps it: lower case and, for a Latin letter
    whose every diacritic is one ``remove_diacritics`` drops, without them."""
    if letter in _SPECIAL_FOLDS:
        return _SPECIAL_FOLDS[letter]
    lower = letter.lower()
    if len(lower) != 1:
        return lower
    parts = unicodedata.normalize("NFD", lower)
    if len(parts) > 1 and ord(parts[0]) < 0x250 and all(m in _DIACRITICS for m in parts[1:]):
        return parts[0]
    return lower


def fold(token: str) -> str:
    """``token`` as the index keeps it: lower case, Latin diacritics removed."""
    if token.isascii():
        return token.lower()
    return "".join(_fold_letter(c) for c in _DROPPED.sub("", token))


def tokens(text: str) -> Iterator[tuple[int, int, str]]:
    """Each token of ``text``: its start, its end and its folded form."""
    for match in _TOKEN.finditer(text):
        word = fold(match.group())
        if word:
            yield match.start(), match.end(), word


def words_of(text: str) -> list[str]:
    """The folded tokens of ``text``, in order."""
    return [word for _, _, word in tokens(text)]


def quote(word: str) -> str:
    """``word`` as a quoted lexeme of a ``tsvector`` or ``tsquery`` literal."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(*texts: str | None) -> str | None:
    """The ``tsvector`` literal of ``texts`` (a message's content, then its tool calls), each
    text a gap of one position after the one before, so that no phrase spans two of them; the
    second text's words are marked with weight ``C``, which ranking counts half. ``None``
    when there are no words."""
    positions: dict[str, list[str]] = {}
    size = 0
    position = 0
    for index, text in enumerate(texts):
        if not text:
            continue
        position += 1 if position else 0
        label = "C" if index else ""
        for word in words_of(text):
            position = min(position + 1, MAX_POSITION)
            kept = positions.get(word)
            if kept is None:
                cost = len(word.encode("utf-8", "replace")) + 8
                if cost > MAX_WORD_BYTES + 8 or size + cost > MAX_VECTOR_BYTES:
                    continue
                size += cost
                positions[word] = kept = []
            if len(kept) < MAX_POSITIONS:
                kept.append(f"{position}{label}")
                size += 2
    if not positions:
        return None
    return " ".join(f"{quote(word)}:{','.join(at)}" for word, at in positions.items())


def phrase(words: list[str], prefix: bool = False) -> str:
    """The ``tsquery`` literal of ``words`` one after the other; with ``prefix``, the last
    may also begin a longer word."""
    parts = [quote(word) for word in words]
    if prefix:
        parts[-1] += ":*"
    return "(" + " <-> ".join(parts) + ")" if len(parts) > 1 else parts[0]
