"""Full-text search over the messages: query parsing, the two FTS5 indexes (words and
trigrams), ranking, snippets, and the batched indexing of new messages. The hits are the
contract's :class:`~hermes_hookspecs.SearchHit`."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import SearchHit as SearchHit  # also this module's name, for old imports
from hermes_hookspecs import check_person

from .codec import UNSPACED, strip_token

INDEXED_UPTO = "SELECT indexed_upto FROM search_state WHERE id = 1"
INDEX_STEP = 2000


_WORD = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s")
_TERM = re.compile(r'"([^"]*)"|(\S+)')
_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"
_RRF_K = 60


@dataclass
class QueryTerm:
    """One term of a search query: its text, whether it was quoted, its word tokens, and
    whether it holds CJK or punctuation (which the trigram index finds best)."""

    text: str
    quoted: bool
    tokens: list[str]
    special: bool  # CJK or punctuation inside: the trigram index finds it best

    def word_expr(self, prefix: bool = False) -> str | None:
        """The term for the word index: a phrase of its tokens; with ``prefix`` the last token
        may also begin a longer word (not for quoted terms nor very short tokens)."""
        if not self.tokens:
            return None
        last = self.tokens[-1]
        prefix = (
            prefix
            and not self.quoted
            and (len(last) >= 3 or (len(last) >= 2 and bool(UNSPACED.search(last))))
        )
        return '"' + " ".join(self.tokens) + '"' + (" *" if prefix else "")


def parse_query(query: str) -> list[QueryTerm]:
    """The terms of a search query: quoted phrases and words, in order (never FTS syntax)."""
    terms = []
    for match in _TERM.finditer(query):
        quoted = match.group(1) is not None
        text = match.group(1) if quoted else match.group(2)
        text = " ".join(text.split()) if quoted else strip_token(text)
        if not text:
            continue
        special = bool(UNSPACED.search(text)) or not _WORD.fullmatch(text)
        terms.append(QueryTerm(text, quoted, _WORD.findall(text), special))
    return terms


def _snippet(marked: str, chars: int) -> str:
    """Cut a one-line excerpt of about ``chars`` characters around the first match."""
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


def search_messages(
    conn: sqlite3.Connection,
    terms: list[QueryTerm],
    limit: int,
    snippet_chars: int,
    exclude_session: str | None,
    people: Collection[str | None] | None = None,
) -> list[SearchHit]:
    """The messages matching the parsed ``terms``, best first: at most ``limit`` hits with
    snippets of about ``snippet_chars`` characters, none from ``exclude_session``; with
    ``people``, only from those people's sessions (``None`` in it: the owner's)."""
    scope = _Scope(exclude_session, people)
    word_exprs = [e for e in (t.word_expr() for t in terms) if e]
    prefix_exprs = [e for e in (t.word_expr(prefix=True) for t in terms) if e]
    needles = [t.text for t in terms if len(t.text) >= 3 and not _SPACE.search(t.text)]
    special = any(t.special for t in terms)
    unspaced = [t.text for t in terms if UNSPACED.search(t.text)]
    word_q = " AND ".join(word_exprs) if word_exprs else None
    prefix_q = " AND ".join(prefix_exprs) if prefix_exprs != word_exprs else None
    # Exact words first; word prefixes only when they are too few (a common prefix
    # merges the postings of every word it begins); substrings for CJK and punctuation.
    ranked: list[tuple[str, str, list[int]]] = []

    def add(kind: str, table: str, expr: str) -> None:
        ranked.append((kind, expr, _match(conn, table, expr, limit, scope)))

    def count() -> int:
        return len({rowid for _, _, ids in ranked for rowid in ids})

    if word_q:
        add("word", _WORDS, word_q)
    if prefix_q and count() < limit:
        add("word", _WORDS, prefix_q)
    if needles and (special or count() < limit):
        found = _substring_ids(conn, needles, limit, scope)
        if special:  # substring hits first: they are exactly what was typed
            ranked.insert(0, ("substring", "", found))
        else:
            ranked.append(("substring", "", found))
    if not count() and len(prefix_exprs) > 1:
        add("word", _WORDS, " OR ".join(prefix_exprs))
    scores: dict[int, float] = {}
    how: dict[int, tuple[str, str]] = {}
    for kind, expr, ids in ranked:
        for rank, rowid in enumerate(ids):
            scores[rowid] = scores.get(rowid, 0.0) + 1.0 / (_RRF_K + rank + 1)
            how.setdefault(rowid, (kind, expr))
    best = sorted(scores, key=lambda r: (-scores[r], -r))[:limit]
    if not best:
        return []
    marks = ",".join("?" * len(best))
    details = {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT m.id, m.session_id, m.role, s.title, s.started_at, m.content, "
            "m.calls_text FROM messages m LEFT JOIN sessions s ON s.id = m.session_id "
            f"WHERE m.id IN ({marks})",
            best,
        )
    }
    hits = []
    for rowid in best:
        if rowid not in details:
            continue
        session_id, role, title, started_at, content, calls = details[rowid]
        kind, expr = how[rowid]
        if kind == "word" and not unspaced:
            snippet = _highlight(conn, expr, rowid, snippet_chars)
        elif kind == "word":  # a CJK run is one word: mark just what was typed
            snippet = _mark_needles(content or "", calls or "", unspaced, snippet_chars)
        else:
            snippet = _mark_needles(content or "", calls or "", needles, snippet_chars)
        hits.append(
            SearchHit(
                session_id=session_id,
                title=title,
                started_at=started_at or 0.0,
                role=role,
                snippet=snippet,
                message_id=rowid,
                score=round(scores[rowid] * 1000, 4),
            )
        )
    return hits


def people_condition(column: str, people: Collection[str | None]) -> tuple[str, list[str]]:
    """An SQL condition on ``column`` (a session's person) that holds for the sessions of
    ``people`` (``None`` in it: the owner's), and its parameters; invalid ids raise."""
    named = sorted({str(check_person(p)) for p in people if p is not None})
    parts = [f"{column} IN ({', '.join('?' * len(named))})"] if named else []
    if None in people:
        parts.append(f"{column} IS NULL")
    return "(" + (" OR ".join(parts) or "0") + ")", named


RANK_WINDOW = 2000
"""When a query matches more messages than this, only the most recent ones are ranked (so a
common word costs the same over a million messages as over ten thousand)."""
_WORDS, _TRIGRAMS = "messages_fts", "messages_trigram"


class _Scope:
    """Which messages a search may return: none of one session's, and, with ``people``, only
    those of the sessions whose person the condition holds for."""

    def __init__(self, exclude_session: str | None, people: Collection[str | None] | None) -> None:
        self.exclude_session = exclude_session
        self.people = None if people is None else people_condition("person", people)
        self.sql = ""
        self.params: list[Any] = []
        if exclude_session is not None:
            self.sql += " AND rowid NOT IN (SELECT id FROM messages WHERE session_id = ?)"
            self.params.append(exclude_session)
        if people is not None:
            where, params = people_condition("s.person", people)
            self.sql += (
                " AND rowid IN (SELECT m.id FROM sessions s JOIN messages m "
                f"ON m.session_id = s.id WHERE {where})"
            )
            self.params += params
        self._allowed: set[str] | None = None

    def allows(self, conn: sqlite3.Connection, session_id: str) -> bool:
        """Whether a message of ``session_id`` may be returned."""
        if session_id == self.exclude_session:
            return False
        if self.people is None:
            return True
        if self._allowed is None:
            self._allowed = {
                row[0]
                for row in conn.execute(
                    f"SELECT id FROM sessions WHERE {self.people[0]}", self.people[1]
                )
            }
        return session_id in self._allowed


def _match(conn: sqlite3.Connection, table: str, expr: str, limit: int, scope: _Scope) -> list[int]:
    params: list[Any] = [expr, *scope.params, RANK_WINDOW, limit]
    exclude = scope.sql
    return [
        row[0]
        for row in conn.execute(
            f"SELECT rowid FROM (SELECT rowid, rank FROM {table} WHERE {table} MATCH ? {exclude} "
            "ORDER BY rowid DESC LIMIT ?) ORDER BY rank, rowid DESC LIMIT ?",
            params,
        )
    ]


SUBSTRING_CANDIDATES = 2000
"""How many messages holding a substring query's trigrams are checked at most."""


def _trigrams(needle: str) -> list[str]:
    """Non-overlapping trigrams covering ``needle`` (the last one may overlap)."""
    found = [needle[i : i + 3] for i in range(0, len(needle) - 2, 3)]
    if (len(needle) - 3) % 3:
        found.append(needle[-3:])
    return found


def _substring_ids(
    conn: sqlite3.Connection, needles: list[str], limit: int, scope: _Scope
) -> list[int]:
    """The newest messages whose substrings contain every needle (case-insensitive).

    Asking the trigram index for the whole needle as a phrase makes FTS5 intersect every
    overlapping trigram with positions, which costs tens of milliseconds for a long URL over a
    million messages; a third of them without positions finds the candidates, then each is
    checked here.
    """
    parts = list(dict.fromkeys(t.lower() for n in needles for t in _trigrams(n)))
    expr = " AND ".join('"' + t.replace('"', '""') + '"' for t in parts)
    lowered = [n.lower() for n in needles]
    cursor = conn.execute(
        f"SELECT rowid FROM {_TRIGRAMS} WHERE {_TRIGRAMS} MATCH ? ORDER BY rowid DESC LIMIT ?",
        (expr, SUBSTRING_CANDIDATES),
    )
    found: list[int] = []
    while len(found) < limit:
        batch = [row[0] for row in cursor.fetchmany(100)]
        if not batch:
            break
        rows = conn.execute(
            "SELECT id, session_id, substrings FROM messages "
            f"WHERE id IN ({','.join('?' * len(batch))}) ORDER BY id DESC",
            batch,
        )
        for rowid, session_id, substrings in rows:
            if not substrings or not scope.allows(conn, session_id):
                continue
            text = substrings.lower()
            if all(n in text for n in lowered):
                found.append(rowid)
    return found[:limit]


def index_step(conn: sqlite3.Connection, count: int) -> int:
    """Add up to ``count`` waiting messages to both indexes (inside a write transaction)."""
    upto = conn.execute(INDEXED_UPTO).fetchone()[0]
    row = conn.execute(
        "SELECT MAX(id), COUNT(*) FROM (SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT ?)",
        (upto, count),
    ).fetchone()
    last, found = row
    if not found:
        return 0
    conn.execute(
        f"INSERT INTO {_WORDS} (rowid, content, calls_text) "
        "SELECT id, content, calls_text FROM messages WHERE id > ? AND id <= ?",
        (upto, last),
    )
    conn.execute(
        f"INSERT INTO {_TRIGRAMS} (rowid, substrings) SELECT id, substrings FROM messages "
        "WHERE id > ? AND id <= ? AND substrings IS NOT NULL",
        (upto, last),
    )
    conn.execute("UPDATE search_state SET indexed_upto = ? WHERE id = 1", (last,))
    return int(found)


def _highlight(conn: sqlite3.Connection, expr: str, rowid: int, chars: int) -> str:
    row = conn.execute(
        f"SELECT highlight({_WORDS}, 0, char(2), char(3)), highlight({_WORDS}, 1, char(2), "
        f"char(3)) FROM {_WORDS} WHERE {_WORDS} MATCH ? AND rowid = ?",
        (expr, rowid),
    ).fetchone()
    if row is None:
        return ""
    content, calls = row[0] or "", row[1] or ""
    if _MARK_OPEN not in content and _MARK_OPEN in calls:
        return "tool call: " + _snippet(calls, chars)
    return _snippet(content, chars)


def _mark_needles(content: str, calls: str, needles: list[str], chars: int) -> str:
    """Mark every case-insensitive occurrence of ``needles`` (the substring hits)."""
    if not needles:
        return _snippet(content or calls, chars)
    longest_first = sorted(needles, key=len, reverse=True)
    pattern = re.compile("|".join(map(re.escape, longest_first)), re.IGNORECASE)
    for text, prefix in ((content, ""), (calls, "tool call: ")):
        marked, found = pattern.subn(lambda m: f"{_MARK_OPEN}{m.group(0)}{_MARK_CLOSE}", text)
        if found:
            return prefix + _snippet(marked, chars)
    return _snippet(content or calls, chars)
