"""Which session each conversation is in, shared by every front end of a team: the same
answers as the gateway's ``sessions.json`` (:class:`hermes_gateway.routes.RouteStore`), kept in
the queue's database so that a conversation whose messages reach different front ends (behind a
load balancer, or after a front end moved to another machine) stays in one session."""

from __future__ import annotations

import json
import threading
from collections.abc import Collection
from typing import Any

from hermes_gateway.routes import MAX_RESPONSE_IDS

TABLES = """
CREATE TABLE IF NOT EXISTS hermes_gateway_routes (
    key text PRIMARY KEY,
    platform text NOT NULL,
    chat_id text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS hermes_gateway_routes_session ON hermes_gateway_routes (session_id);
CREATE TABLE IF NOT EXISTS hermes_gateway_responses (
    response_id text PRIMARY KEY,
    session_id text NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS hermes_gateway_responses_at ON hermes_gateway_responses (at);
"""


class PostgresRoutes:
    """The conversations' sessions in the database at ``url`` (one connection, made on first
    use and again after it broke).

    :param url: a ``postgresql://`` URL.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._conn: Any = None

    def _run(self, query: str, arguments: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
                try:
                    cursor = self._conn.execute(query, arguments)
                    return cursor.fetchall() if cursor.description else []
                except psycopg.OperationalError:
                    self._conn.close()
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def session_of(self, key: str) -> str | None:
        """The session the conversation ``key`` is in, if any."""
        rows = self._run("SELECT session_id FROM hermes_gateway_routes WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def assign(self, key: str, session_id: str) -> None:
        """Put the conversation ``key`` in ``session_id``."""
        platform, chat, user = (str(part) for part in json.loads(key))
        self._run(
            "INSERT INTO hermes_gateway_routes (key, platform, chat_id, user_id, session_id) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE "
            "SET session_id = EXCLUDED.session_id, updated_at = now()",
            (key, platform, chat, user, session_id),
        )

    def forget(self, key: str) -> str | None:
        """Take the conversation out of its session; the session it was in."""
        rows = self._run(
            "DELETE FROM hermes_gateway_routes WHERE key = %s RETURNING session_id", (key,)
        )
        return str(rows[0][0]) if rows else None

    def session_of_response(self, response_id: str) -> str | None:
        """The session that produced a Responses API ``response_id``."""
        rows = self._run(
            "SELECT session_id FROM hermes_gateway_responses WHERE response_id = %s",
            (response_id,),
        )
        return str(rows[0][0]) if rows else None

    def remember_response(self, response_id: str, session_id: str) -> None:
        """Record that ``response_id`` was an answer in ``session_id`` (the oldest ids beyond
        :data:`~hermes_gateway.routes.MAX_RESPONSE_IDS` are forgotten)."""
        self._run(
            "INSERT INTO hermes_gateway_responses (response_id, session_id) VALUES (%s, %s) "
            "ON CONFLICT (response_id) DO UPDATE SET session_id = EXCLUDED.session_id",
            (response_id, session_id),
        )
        self._run(
            "DELETE FROM hermes_gateway_responses WHERE response_id IN (SELECT response_id "
            "FROM hermes_gateway_responses ORDER BY at DESC OFFSET %s)",
            (MAX_RESPONSE_IDS,),
        )

    def chats_of(self, platform: str, user_ids: Collection[str]) -> set[str]:
        """The chats of ``platform`` in which one of ``user_ids`` has a conversation."""
        rows = self._run(
            "SELECT DISTINCT chat_id FROM hermes_gateway_routes "
            "WHERE platform = %s AND user_id = ANY(%s)",
            (platform, list(user_ids)),
        )
        return {str(r[0]) for r in rows}

    def leading_to(self, session_ids: Collection[str]) -> int:
        """How many conversations and response ids lead to one of ``session_ids``."""
        wanted = list(session_ids)
        rows = self._run(
            "SELECT (SELECT count(*) FROM hermes_gateway_routes WHERE session_id = ANY(%s)) + "
            "(SELECT count(*) FROM hermes_gateway_responses WHERE session_id = ANY(%s))",
            (wanted, wanted),
        )
        return int(rows[0][0])

    def forget_sessions(self, session_ids: Collection[str]) -> int:
        """Forget every conversation and response id leading to one of ``session_ids``; how
        many were forgotten."""
        wanted = list(session_ids)
        rows = self._run(
            "WITH a AS (DELETE FROM hermes_gateway_routes WHERE session_id = ANY(%s) "
            "RETURNING 1), b AS (DELETE FROM hermes_gateway_responses WHERE session_id = "
            "ANY(%s) RETURNING 1) SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b)",
            (wanted, wanted),
        )
        return int(rows[0][0])
