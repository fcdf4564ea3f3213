"""The PostgreSQL session store: :class:`PostgresSessionStore`.

It keeps what the SQLite store keeps, behind the same contract
(:class:`~hermes_hookspecs.PersonalSessionStore`, ``batch()``, ``get_clean_messages``, listing,
lineage, usage, deletion, pruning and statistics), for several processes on several machines,
and holds one turn per session at a time among all of them
(:class:`~hermes_hookspecs.LockingSessionStore`, an advisory lock: see :mod:`.session_locks`):

- ``sessions``: one row per conversation (model, provider, the system prompt replayed byte for
  byte, the parent it continues after compression, whose it is, counters, a JSON ``metadata``
  object for everything else);
- ``messages``: one row per message: the message as JSON text (``body``, which
  :meth:`~PostgresSessionStore.get_messages` parses back to the dict that was appended), and
  what search reads (see :mod:`.search`);
- ``hermes_schema_versions``: the migrations applied (see :mod:`.schema`).

Every call is one short transaction on a connection of the process's pool, or joins the one of
its thread's :meth:`~PostgresSessionStore.batch`. A message is indexed for search in the
transaction that appends it: a search sees every committed message.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from typing import Any

from hermes_hookspecs import SearchHit, SessionInfo, check_person

from . import listing
from .batches import Appends, Batch, Write, run_all, unknown_session
from .connections import Connection, Connections, PostgresStoreError
from .ledger import PostgresLedger
from .query import parse_query
from .rows import decode_bodies, encode_message, session_json
from .schema import COUNTER_COLUMNS, SESSION_FIELDS, TOKEN_COLUMNS, MigrationReport, migrate
from .search import search_messages
from .session_locks import SessionLocks
from .text import column_text, replace_surrogates

_TEXT_FIELDS = frozenset(
    ("source", "model", "provider", "system_prompt", "parent_session_id", "end_reason", "title")
)


def _storable(value: Any) -> Any:
    """``value``, with lone surrogates and NUL replaced (U+FFFD) when it is text: a column
    cannot hold them."""
    return column_text(replace_surrogates(value)) if isinstance(value, str) else value


class PostgresSessionStore(PostgresLedger):
    """Sessions and messages in a PostgreSQL database, with search (implements
    :class:`hermes_hookspecs.PersonalSessionStore` and
    :class:`hermes_hookspecs.LockingSessionStore`, and the spend ledger and pooled keys' state,
    :class:`hermes_hookspecs.UsageLedger` and :class:`hermes_hookspecs.KeyStateStore`).

    Safe to share between threads (a pool of connections) and between processes and machines
    (each call is a transaction; a forked child makes its own connections). Opening it checks
    the server and brings the schema up to date (see :func:`.schema.migrate`).

    :param url: a libpq URL: ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE`` (or
        ``postgres://``; libpq's query options, e.g. ``?sslmode=require``, are honoured).
    :param timeout: seconds a call waits for a free connection before it fails.
    :param max_connections: the most connections this process keeps open to the server for
        its calls.
    :param max_held_sessions: the most sessions this process holds at once
        (:meth:`hold_session`); each held one keeps a connection of its own, beside those of
        the calls.
    :raises PostgresStoreError: the server cannot be reached (the message names it, never the
        password), the schema is newer than this plugin, or the database holds another
        program's tables.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 30.0,
        max_connections: int = 8,
        max_held_sessions: int = 64,
    ) -> None:
        self._db = Connections(
            url, timeout=timeout, max_connections=max_connections, max_held=max_held_sessions
        )
        self._locks = SessionLocks(self._db)
        self._local = threading.local()
        conn = self._db.connect()
        try:
            self.migration: MigrationReport = migrate(conn, self._db.where)
        finally:
            conn.close()

    @property
    def where(self) -> str:
        """The server and database, without the password (for messages)."""
        return self._db.where

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self.where!r})"

    def __enter__(self) -> PostgresSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections of this process; the store cannot be used afterwards."""
        self._db.close()

    # --- the SessionStore protocol ----------------------------------------------------------

    def create_session(self, session: SessionInfo) -> None:
        """Record a new session; its ``metadata`` is stored as JSON (counter names such as
        ``message_count`` go to their columns). An existing id is an error."""
        if not isinstance(session.id, str) or not session.id:
            raise PostgresStoreError(f"a session id must be a non-empty string, not {session.id!r}")
        values = {name: _storable(getattr(session, name)) for name in SESSION_FIELDS}
        values["started_at"] = session.started_at or time.time()
        values["person"] = check_person(session.person)
        metadata = dict(session.metadata or {})
        counters = {k: metadata.pop(k) for k in COUNTER_COLUMNS if k in metadata}
        names = ["id", *values, *counters, "metadata"]
        params = [session.id, *values.values(), *counters.values()]
        params.append(session_json(metadata, "the session metadata"))
        sql = (
            f"INSERT INTO sessions ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))}) "
            "ON CONFLICT (id) DO NOTHING"
        )

        def insert(conn: Connection) -> None:
            if conn.execute(sql, params).rowcount == 0:
                raise PostgresStoreError(f"session {session.id!r} already exists")

        self._write(insert, what="create a session")

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session, or ``None`` when unknown. ``metadata`` holds the stored metadata plus
        the counters (``message_count``, ``tool_call_count``, token counts,
        ``estimated_cost_usd``)."""
        return self._db.run(
            functools.partial(listing.get_session, session_id=session_id), "read a session"
        )

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change fields of a session. Columns (``system_prompt``, ``ended_at``, ``title``,
        token counters...) are set; anything else (``fallbacks``, ``todo``...) goes into the
        metadata JSON, and a ``metadata`` dict is merged into it.

        :raises PostgresStoreError: the session is unknown, or its id or person was given.
        """
        if "id" in fields or "person" in fields:
            raise PostgresStoreError("a session's id and person cannot be changed")
        columns = {
            k: _storable(v) if k in _TEXT_FIELDS else v
            for k, v in fields.items()
            if k in SESSION_FIELDS or k in COUNTER_COLUMNS
        }
        extra = {k: v for k, v in fields.items() if k not in columns and k != "metadata"}
        merged = fields.get("metadata")
        if merged is not None and not isinstance(merged, Mapping):
            raise PostgresStoreError("metadata must be a dict")
        if merged:
            extra = {**merged, **extra}
        if "started_at" in columns and columns["started_at"] is None:
            raise PostgresStoreError("started_at cannot be empty")
        if extra:
            session_json(extra, "the session metadata")  # not JSON: fails now, not at commit

        def update(conn: Connection) -> None:
            found = conn.execute(
                "SELECT metadata FROM sessions WHERE id = %s FOR UPDATE", (session_id,)
            ).fetchone()
            if found is None:
                raise unknown_session(session_id)
            sets = [f"{name} = %s" for name in columns]
            params = list(columns.values())
            if extra:
                metadata = json.loads(found[0] or "{}")
                metadata.update(extra)
                sets.append("metadata = %s")
                params.append(session_json(metadata, "the session metadata"))
            if sets:
                conn.execute(
                    f"UPDATE sessions SET {', '.join(sets)} WHERE id = %s", [*params, session_id]
                )

        self._write(update, what="update a session")

    def append_message(self, session_id: str, message: dict[str, Any]) -> None:
        """Persist one completed message, exactly (every key, ``_`` ones included, in order),
        in its own transaction (or its :meth:`batch`'s). The first user message of an
        untitled session gives it its title.

        :raises PostgresStoreError: the session is unknown, a value is not JSON, or the write
            failed.
        """
        encoded = encode_message(message, time.time())
        pending = self._pending()
        if pending is not None:  # joins the messages appended just before it, if any
            self._appends_in(pending, session_id).add(encoded)
            return
        appends = Appends(session_id)
        appends.add(encoded)
        self._db.run(appends, "save a message")

    def get_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order, equal to the dicts that were appended."""
        return decode_bodies(self._bodies(session_id))

    def get_clean_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order, as a conversation replays them: equal to the
        dicts that were appended, except that text UTF-8 cannot carry (lone surrogates) is
        replaced by U+FFFD."""
        return decode_bodies(self._bodies(session_id), clean_text=True)

    def _bodies(self, session_id: str) -> list[str]:
        """The ``body`` of every message of a session, in order."""

        def read(conn: Connection) -> list[str]:
            rows = conn.execute(
                "SELECT body FROM messages WHERE session_id = %s ORDER BY id", (session_id,)
            ).fetchall()
            return [row[0] for row in rows]

        return self._db.run(read, "read messages")

    # --- one turn at a time (hermes_hookspecs.LockingSessionStore) --------------------------

    def hold_session(
        self, session_id: str, cancel: threading.Event
    ) -> AbstractContextManager[bool]:
        """Hold the lock of one turn of ``session_id`` while the block runs, against every
        process and machine using this database; wait for its holder. The block gets
        ``False`` (holding nothing) when ``cancel`` is set while waiting.

        The lock is a session-level advisory lock on a connection kept for the block (see
        :mod:`.session_locks`): it ends with the connection when the holder's process dies.

        :raises PostgresStoreError: the server cannot be reached or fails, or no connection
            to hold it on came in time (one line).
        """
        return self._locks.hold(session_id, cancel)

    # --- writes together --------------------------------------------------------------------

    def batch(self) -> Batch:
        """A block (``with store.batch(): ...``) whose writes by this thread
        (:meth:`create_session`, :meth:`update_session`, :meth:`append_message`,
        :meth:`add_usage`, :meth:`set_title`) are committed together, in one transaction,
        when it ends: all of them or, when one fails, none. Messages appended one after the
        other go in with one update of the session's counters.

        Errors a call can see at once (a value that is not JSON) are raised by the call; the
        others (an unknown session, a failed write) when the block ends, as
        :class:`PostgresStoreError`, nothing of the block written. A block that raises writes
        nothing. Nested blocks join the outermost one. Reads inside a block do not see its
        writes yet.
        """
        return Batch(self._local, self._commit)

    def _commit(self, writes: list[Write]) -> None:
        self._db.run(functools.partial(run_all, writes=writes), "save a step")

    def _pending(self) -> list[Write] | None:
        """The writes of this thread's open :meth:`batch`, or ``None`` outside one."""
        pending: list[Write] | None = getattr(self._local, "batch", None)
        return pending

    @staticmethod
    def _appends_in(pending: list[Write], session_id: str) -> Appends:
        """The batch's last write when it can take messages or usage for ``session_id``, else
        a new one added to the batch."""
        last = pending[-1] if pending else None
        if not (isinstance(last, Appends) and last.open_to(session_id)):
            last = Appends(session_id)
            pending.append(last)
        return last

    def _write(self, write: Write, what: str) -> None:
        """Run ``write`` in a transaction of its own, or add it to this thread's batch."""
        pending = self._pending()
        if pending is None:
            self._db.run(write, what)
        else:
            pending.append(write)

    def set_title(self, session_id: str, title: str | None) -> None:
        """Set (or with ``None`` clear) a session's title, on one line.

        :raises PostgresStoreError: the session is unknown.
        """
        value = " ".join(title.split()) if title is not None else None
        self.update_session(session_id, title=value or None)

    def add_usage(
        self, session_id: str, usage: Mapping[str, Any] | Any, cost_usd: float | None = None
    ) -> None:
        """Add token counts (``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
        ``cache_write_tokens``, ``reasoning_tokens``; other keys are ignored) and, when known,
        a cost to the session's totals.

        :raises PostgresStoreError: the session is unknown.
        """
        if hasattr(usage, "as_dict"):
            usage = usage.as_dict()
        counts = [int(usage.get(name) or 0) for name in TOKEN_COLUMNS]
        cost = None if cost_usd is None else float(cost_usd)
        pending = self._pending()
        if pending is not None:  # joins the messages of its step, if they were just appended
            self._appends_in(pending, session_id).add_usage(counts, cost)
            return
        write = Appends(session_id)
        write.add_usage(counts, cost)
        self._db.run(write, "save token usage")

    # --- listing and lineage ----------------------------------------------------------------

    def list_sessions(
        self, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionInfo]:
        """Sessions, newest first, optionally only those from ``source`` (``cli``...)."""
        return self._db.run(
            functools.partial(listing.list_sessions, limit=limit, offset=offset, source=source),
            "list sessions",
        )

    def find_sessions(self, ref: str, limit: int = 10) -> list[SessionInfo]:
        """Sessions ``ref`` may name, newest first: the one with that exact id; else those whose
        id starts with ``ref``; else those whose title equals ``ref`` (case-insensitive)."""
        return self._db.run(
            functools.partial(listing.find_sessions, ref=ref, limit=limit), "find sessions"
        )

    def latest_session_id(self, source: str | None = None) -> str | None:
        """The id of the most recently started session (from ``source``), or ``None``."""
        found = self.list_sessions(limit=1, source=source)
        return found[0].id if found else None

    def newest_in_lineage(self, session_id: str) -> str:
        """The newest session that continues ``session_id`` through compression (children
        point to their parent with ``parent_session_id``, possibly over several generations);
        ``session_id`` itself when nothing continues it, or when it is not stored (yet). Only
        a child of the parent's own source continues it: a subagent's session does not."""
        newest: str | None = self._db.run(
            functools.partial(listing.newest_in_lineage, session_id=session_id),
            "follow a session's lineage",
        )
        return newest or session_id

    # --- people -----------------------------------------------------------------------------

    def list_people_sessions(
        self, people: Collection[str | None], limit: int = 50, offset: int = 0
    ) -> list[SessionInfo]:
        """The sessions of ``people`` (``None``: the owner's), newest first."""
        return self._db.run(
            functools.partial(
                listing.list_people_sessions, people=people, limit=limit, offset=offset
            ),
            "list sessions",
        )

    def people_counts(self) -> dict[str | None, int]:
        """How many sessions each person has (``None``: the owner's)."""
        return self._db.run(listing.people_counts, "count sessions by person")

    def forget_person(self, person: str) -> int:
        """Delete every session of ``person`` with its messages (and their search entries), in
        one transaction; returns how many sessions were deleted."""
        check_person(person)

        def delete(conn: Connection) -> int:
            return conn.execute("DELETE FROM sessions WHERE person = %s", (person,)).rowcount

        return self._db.run(delete, "forget a person")

    # --- search -----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 20,
        snippet_chars: int = 160,
        *,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """Messages matching ``query``, best first, as the SQLite store finds them.

        ``query`` is plain text, not a query language: words match word prefixes
        (``connect`` finds "connection"), ``"quoted text"`` matches a phrase, and a term with
        CJK characters, digits or punctuation (``数据库``, ``example.com/path``,
        ``config.yaml``, ``E1234``) also matches inside longer tokens (at least 3
        characters). All terms must match; when nothing does, any term may.

        :param limit: at most this many hits (1..200).
        :param snippet_chars: the length of each snippet (40..2000).
        :param exclude_session: leave out this session's messages (e.g. the current one).
        """
        return self._search(query, limit, snippet_chars, exclude_session, None)

    def search_people(
        self,
        people: Collection[str | None],
        query: str,
        *,
        limit: int = 20,
        snippet_chars: int = 160,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """:meth:`search` over the sessions of ``people`` only (``None``: the owner's)."""
        if not people:
            return []
        return self._search(query, limit, snippet_chars, exclude_session, people)

    def _search(
        self,
        query: str,
        limit: int,
        snippet_chars: int,
        exclude_session: str | None,
        people: Collection[str | None] | None,
    ) -> list[SearchHit]:
        terms = parse_query(query or "")
        if not terms:
            return []
        if people is not None:
            people = [check_person(p) for p in people]
        limit = max(1, min(int(limit), 200))
        snippet_chars = max(40, min(int(snippet_chars), 2000))
        return self._db.run(
            functools.partial(
                search_messages,
                terms=terms,
                limit=limit,
                snippet_chars=snippet_chars,
                exclude_session=exclude_session,
                people=people,
            ),
            "search",
        )

    # --- maintenance ------------------------------------------------------------------------

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages (and their search entries); ``False`` when it did
        not exist. Sessions that continued it keep their own messages."""

        def delete(conn: Connection) -> bool:
            return conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,)).rowcount > 0

        return self._db.run(delete, "delete a session")

    def prune(self, older_than_days: float) -> int:
        """Delete sessions that started more than ``older_than_days`` ago and have had no
        message since; returns how many."""
        if older_than_days < 0:
            raise PostgresStoreError("older_than_days must not be negative")
        cutoff = time.time() - float(older_than_days) * 86400

        def delete(conn: Connection) -> int:
            return conn.execute(
                "DELETE FROM sessions s WHERE s.started_at < %s AND COALESCE(("
                "SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), 0) < %s",
                (cutoff, cutoff),
            ).rowcount

        return self._db.run(delete, "prune old sessions")

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: ``sessions``, ``messages``, ``db_size_bytes`` (the store's tables
        and indexes), ``oldest`` and ``newest`` session start (UNIX time or ``None``),
        ``schema_version``, ``url`` (without the password) and ``waiting_for_index`` (always
        0: a message is indexed when it is appended)."""

        def read(conn: Connection) -> tuple[Any, ...]:
            row = conn.execute(
                "SELECT (SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM messages), "
                "(SELECT MIN(started_at) FROM sessions), (SELECT MAX(started_at) FROM sessions), "
                "pg_total_relation_size('sessions') + pg_total_relation_size('messages'), "
                "(SELECT MAX(version) FROM hermes_schema_versions)"
            ).fetchone()
            assert row is not None
            return tuple(row)

        sessions, messages, oldest, newest, size, version = self._db.run(read, "read statistics")
        return {
            "url": self.where,
            "sessions": int(sessions),
            "messages": int(messages),
            "db_size_bytes": int(size),
            "oldest": oldest,
            "newest": newest,
            "schema_version": int(version),
            "waiting_for_index": 0,
        }
