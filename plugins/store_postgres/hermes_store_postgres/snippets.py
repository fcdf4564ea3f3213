"""Snippets of search hits: a one-line excerpt around the first match, each match marked
``[`` ... ``]`` (cut as the SQLite store cuts them)."""

from __future__ import annotations

import re
from collections.abc import Collection

from .words import tokens

_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"


def cut(marked: str, chars: int) -> str:
    """A one-line excerpt of about ``chars`` characters of ``marked`` (text whose matches are
    between the control characters STX and ETX) around its first match, the matches in brackets."""
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    start = -1
    position = 0
    for piece in re.split(f"([{_MARK_OPEN}{_MARK_CLOSE}])", marked):
        if piece == _MARK_OPEN:
            start = position
        elif piece == _MARK_CLOSE:
            if start >= 0:
                spans.append((start, position))
            start = -1
        else:
            plain.append(piece)
            position += len(piece)
    text = "".join(plain)
    first = spans[0][0] if spans else 0
    lead = min(chars // 4, 40)
    begin = max(0, first - lead)
    end = min(len(text), begin + chars)
    begin = max(0, end - chars)
    out = []
    opens = {max(a, begin) for a, b in spans if b > begin and a < end}
    closes = {min(b, end) for a, b in spans if b > begin and a < end}
    for i in range(begin, end + 1):
        if i in closes:
            out.append("]")
        if i in opens:
            out.append("[")
        if i < end:
            out.append(text[i])
    result = " ".join("".join(out).split())
    return ("…" if begin > 0 else "") + result + ("…" if end < len(text) else "")


def _mark_words(text: str, whole: Collection[str], prefixes: Collection[str]) -> tuple[str, int]:
    """``text`` with each word that is one of ``whole`` or begins with one of ``prefixes``
    marked, and how many were."""
    pieces: list[str] = []
    done = 0
    found = 0
    for start, end, word in tokens(text):
        if word in whole or any(word.startswith(p) for p in prefixes):
            pieces += [text[done:start], _MARK_OPEN, text[start:end], _MARK_CLOSE]
            done = end
            found += 1
    pieces.append(text[done:])
    return "".join(pieces), found


def word_snippet(
    content: str, calls: str, whole: Collection[str], prefixes: Collection[str], chars: int
) -> str:
    """The snippet of a word hit: the content with the query's words marked, or, when only
    the tool calls hold them, ``tool call:`` and the calls."""
    marked, found = _mark_words(content, whole, prefixes)
    if found:
        return cut(marked, chars)
    marked_calls, found = _mark_words(calls, whole, prefixes)
    if found:
        return "tool call: " + cut(marked_calls, chars)
    return cut(content, chars)


def needle_snippet(content: str, calls: str, needles: list[str], chars: int) -> str:
    """The snippet of a substring hit: every case-insensitive occurrence of ``needles``
    marked, in the content or else in the tool calls."""
    if not needles:
        return cut(content or calls, chars)
    longest_first = sorted(needles, key=len, reverse=True)
    pattern = re.compile("|".join(map(re.escape, longest_first)), re.IGNORECASE)
    for text, prefix in ((content, ""), (calls, "tool call: ")):
        marked, found = pattern.subn(lambda m: f"{_MARK_OPEN}{m.group(0)}{_MARK_CLOSE}", text)
        if found:
            return prefix + cut(marked, chars)
    return cut(content or calls, chars)
