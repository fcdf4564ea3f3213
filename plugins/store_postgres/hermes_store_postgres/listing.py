"""Reading sessions: one by id, lists newest first (all, one source's, some people's), the
sessions a reference may name, a lineage's newest session, and counts by person. Each function
runs inside a transaction of the store."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from hermes_hookspecs import SessionInfo

from .connections import Connection
from .rows import session_from_row
from .schema import SESSION_SELECT
from .search import people_condition

_NEWEST = "ORDER BY started_at DESC, seq DESC"

_NEWEST_IN_LINEAGE = (
    "WITH RECURSIVE lineage(id, source) AS ("
    "SELECT id, source FROM sessions WHERE id = %s "
    "UNION SELECT s.id, s.source FROM sessions s JOIN lineage l "
    "ON s.parent_session_id = l.id AND s.source = l.source) "
    "SELECT s.id FROM lineage l JOIN sessions s ON s.id = l.id "
    "ORDER BY s.started_at DESC, s.seq DESC LIMIT 1"
)
"""The newest session of a lineage: a child continues its parent only when both have the same
source (a subagent's session, also linked to its parent, does not)."""


def get_session(conn: Connection, session_id: str) -> SessionInfo | None:
    """The session ``session_id``, or ``None``."""
    row = conn.execute(
        f"SELECT {SESSION_SELECT} FROM sessions WHERE id = %s", (session_id,)
    ).fetchone()
    return session_from_row(row) if row else None


def sessions_where(
    conn: Connection, where: str, params: list[Any], limit: int, offset: int = 0
) -> list[SessionInfo]:
    """The sessions for which ``where`` holds, newest first."""
    rows = conn.execute(
        f"SELECT {SESSION_SELECT} FROM sessions WHERE {where} {_NEWEST} LIMIT %s OFFSET %s",
        [*params, max(0, int(limit)), max(0, int(offset))],
    ).fetchall()
    return [session_from_row(row) for row in rows]


def list_sessions(
    conn: Connection, limit: int, offset: int, source: str | None
) -> list[SessionInfo]:
    """Sessions, newest first, optionally only those from ``source``."""
    if source is None:
        return sessions_where(conn, "true", [], limit, offset)
    return sessions_where(conn, "source = %s", [source], limit, offset)


def find_sessions(conn: Connection, ref: str, limit: int) -> list[SessionInfo]:
    """Sessions ``ref`` may name, newest first: the one with that exact id; else those whose
    id starts with ``ref``; else those whose title equals ``ref`` (case-insensitive)."""
    exact = get_session(conn, ref)
    if exact is not None:
        return [exact]
    pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    limit = max(1, int(limit))
    for where, value in (("id LIKE %s", pattern), ("lower(title) = lower(%s)", ref)):
        found = sessions_where(conn, where, [value], limit)
        if found:
            return found
    return []


def list_people_sessions(
    conn: Connection, people: Collection[str | None], limit: int, offset: int
) -> list[SessionInfo]:
    """The sessions of ``people`` (``None``: the owner's), newest first."""
    where, params = people_condition("person", people)
    return sessions_where(conn, where, params, limit, offset)


def people_counts(conn: Connection) -> dict[str | None, int]:
    """How many sessions each person has (``None``: the owner's)."""
    rows = conn.execute("SELECT person, COUNT(*) FROM sessions GROUP BY person").fetchall()
    return {person: int(count) for person, count in rows}


def newest_in_lineage(conn: Connection, session_id: str) -> str | None:
    """The newest session continuing ``session_id`` (itself included), or ``None`` when it is
    not stored."""
    row = conn.execute(_NEWEST_IN_LINEAGE, (session_id,)).fetchone()
    return str(row[0]) if row else None
