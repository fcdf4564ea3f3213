"""Searching the messages: the SQLite store's algorithm over PostgreSQL's indexes.

- Words: the ``tsvector`` of each message (its words cut as SQLite's ``unicode61`` cuts
  them, see :mod:`.words`), through a GIN index. Every term must match (a quoted one as a
  phrase); word prefixes (``connect`` finds "connection") are asked only when exact words find
  too few, and when nothing matches every term, any term may.
- Substrings: the tokens of each message that hold a digit, punctuation or CJK (URLs, paths,
  file names, error codes, CJK runs), lower-cased, through a ``pg_trgm`` GIN index: a term of
  3 characters or more is found inside them (``LIKE '%term%'``).
- The lists are merged by reciprocal rank; among very many word matches only the most recent
  :data:`RANK_WINDOW` are ranked (``ts_rank``, a tool call's words counting half).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from hermes_hookspecs import SearchHit, check_person

from .connections import Connection
from .query import QueryTerm, needles_of
from .snippets import needle_snippet, word_snippet
from .text import UNSPACED

RANK_WINDOW = 2000
"""When a query matches more messages than this, only the most recent ones are ranked."""
_RRF_K = 60
_WEIGHTS = "{1.0, 0.5, 0, 0}"
"""``ts_rank`` weights (D, C, B, A): the content's words (D) count 1, the tool calls' (C) 0.5."""


def people_condition(column: str, people: Collection[str | None]) -> tuple[str, list[Any]]:
    """An SQL condition on ``column`` (a session's person) that holds for the sessions of
    ``people`` (``None`` in it: the owner's), and its parameters; invalid ids raise."""
    named = sorted({str(check_person(p)) for p in people if p is not None})
    parts: list[str] = []
    params: list[Any] = []
    if named:
        parts.append(f"{column} = ANY(%s)")
        params.append(named)
    if None in people:
        parts.append(f"{column} IS NULL")
    return "(" + (" OR ".join(parts) or "false") + ")", params


@dataclass
class _Scope:
    """Which messages a search may return: none of one session's, and, with ``people``, only
    those of the sessions whose person is one of them."""

    exclude_session: str | None
    people: Collection[str | None] | None
    sql: str = ""
    params: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.exclude_session is not None:
            self.sql += " AND m.session_id <> %s"
            self.params.append(self.exclude_session)
        if self.people is not None:
            where, params = people_condition("s.person", self.people)
            self.sql += f" AND m.session_id IN (SELECT s.id FROM sessions s WHERE {where})"
            self.params += params


@dataclass
class _Found:
    """One ranked list of message ids and how its hits are marked: words (whole and
    prefixes) or needles."""

    ids: list[int]
    whole: set[str] = field(default_factory=set)
    prefixes: set[str] = field(default_factory=set)
    needles: list[str] | None = None


def _words_query(terms: list[QueryTerm], prefix: bool, join: str = " & ") -> str | None:
    """The ``tsquery`` of every term (``&``) or of any (``|``), or ``None`` without words."""
    parts = [q for q in (t.tsquery(prefix=prefix) for t in terms) if q]
    if not parts:
        return None
    return join.join(f"({p})" if len(parts) > 1 else p for p in parts)


def _marks(terms: list[QueryTerm], prefix: bool) -> tuple[set[str], set[str]]:
    whole: set[str] = set()
    prefixes: set[str] = set()
    for term in terms:
        w, p = term.marks(prefix)
        whole |= w
        prefixes |= p
    return whole, prefixes


def _match(conn: Connection, query: str, limit: int, scope: _Scope) -> list[int]:
    """The ids of the messages whose words match ``query``: among the most recent
    :data:`RANK_WINDOW` matches, the best ranked first."""
    rows = conn.execute(
        "SELECT id FROM (SELECT m.id, m.words FROM messages m "
        f"WHERE m.words @@ %s::tsquery{scope.sql} ORDER BY m.id DESC LIMIT %s) w "
        f"ORDER BY ts_rank('{_WEIGHTS}'::float4[], w.words, %s::tsquery, 1) DESC, w.id DESC "
        "LIMIT %s",
        [query, *scope.params, RANK_WINDOW, query, limit],
    ).fetchall()
    return [int(row[0]) for row in rows]


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _substring_ids(conn: Connection, needles: list[str], limit: int, scope: _Scope) -> list[int]:
    """The newest messages whose substring tokens contain every needle (case-insensitive)."""
    likes = " AND ".join("m.substrings LIKE %s" for _ in needles)
    patterns = ["%" + _escape_like(n.lower()) + "%" for n in needles]
    rows = conn.execute(
        f"SELECT m.id FROM messages m WHERE {likes}{scope.sql} ORDER BY m.id DESC LIMIT %s",
        [*patterns, *scope.params, limit],
    ).fetchall()
    return [int(row[0]) for row in rows]


def search_messages(
    conn: Connection,
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
    word_q = _words_query(terms, prefix=False)
    prefix_q = _words_query(terms, prefix=True)
    prefix_q = prefix_q if prefix_q != word_q else None
    needles = needles_of(terms)
    special = any(t.special for t in terms)
    unspaced = [t.text for t in terms if UNSPACED.search(t.text)]
    # Exact words first; word prefixes only when they are too few; substrings for CJK and
    # punctuation (first: they are exactly what was typed).
    ranked: list[_Found] = []

    def count() -> int:
        return len({rowid for found in ranked for rowid in found.ids})

    if word_q:
        ranked.append(_Found(_match(conn, word_q, limit, scope), *_marks(terms, False)))
    if prefix_q and count() < limit:
        ranked.append(_Found(_match(conn, prefix_q, limit, scope), *_marks(terms, True)))
    if needles and (special or count() < limit):
        found = _Found(_substring_ids(conn, needles, limit, scope), needles=needles)
        if special:
            ranked.insert(0, found)
        else:
            ranked.append(found)
    any_q = _words_query(terms, prefix=True, join=" | ")
    if not count() and any_q and sum(1 for t in terms if t.words()) > 1:
        ranked.append(_Found(_match(conn, any_q, limit, scope), *_marks(terms, True)))
    scores: dict[int, float] = {}
    how: dict[int, _Found] = {}
    for found in ranked:
        for rank, rowid in enumerate(found.ids):
            scores[rowid] = scores.get(rowid, 0.0) + 1.0 / (_RRF_K + rank + 1)
            how.setdefault(rowid, found)
    best = sorted(scores, key=lambda r: (-scores[r], -r))[:limit]
    if not best:
        return []
    details = {
        int(row[0]): row[1:]
        for row in conn.execute(
            "SELECT m.id, m.session_id, m.role, s.title, s.started_at, m.content, "
            "m.calls_text FROM messages m LEFT JOIN sessions s ON s.id = m.session_id "
            "WHERE m.id = ANY(%s)",
            [best],
        )
    }
    hits = []
    for rowid in best:
        if rowid not in details:
            continue
        session_id, role, title, started_at, content, calls = details[rowid]
        found = how[rowid]
        if found.needles is not None:
            snippet = needle_snippet(content or "", calls or "", found.needles, snippet_chars)
        elif unspaced:  # a CJK run is one word: mark just what was typed
            snippet = needle_snippet(content or "", calls or "", unspaced, snippet_chars)
        else:
            snippet = word_snippet(
                content or "", calls or "", found.whole, found.prefixes, snippet_chars
            )
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
