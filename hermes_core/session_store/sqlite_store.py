"""The embedded session store: SQLite in WAL mode with full-text search.

``SQLiteSessionStore(path)`` implements :class:`hermes_hookspecs.SessionStore` and adds listing,
lineage, search, deletion, pruning, statistics and one turn per session at a time
(:meth:`~SQLiteSessionStore.hold_session`, lock files beside the database, see
:mod:`.session_locks`). One file (``$HERMES_HOME/state.db``) holds:

- ``sessions``: one row per conversation (model, provider, the system prompt replayed byte for
  byte, the parent it continues after compression, token counters, a ``metadata`` JSON object for
  everything else, e.g. ``fallbacks`` or a ``todo`` list);
- ``messages``: one row per message: the whole message as JSON (``body``, what
  :meth:`get_messages` reads: one value per message, one parse for a whole session), and its
  well-known keys in columns so they can be queried. Every other key (notably ``_``-prefixed
  provider replay data) is also kept in the ``extra`` JSON object, and ``layout`` records the
  message's keys in order, so a row without a ``body`` (written before schema version 3, or
  holding lone surrogates) decodes to exactly the dict that was appended;
- two FTS5 indexes (external content, so the text is stored once): ``unicode61`` over the
  content and the tool calls (words, prefixes, phrases, BM25), and ``trigram`` over each
  message's ``substrings``, its tokens with digits, punctuation or CJK (CJK text, URLs, paths,
  file names, error codes). Deletes and edits reach the indexes through triggers at once; new
  messages are added in batches (every ``index_batch`` appends, and before every search, so a
  search always sees every committed message): FTS5 pays a segment flush per transaction,
  which would cost several times the append itself.

Every write is one short ``BEGIN IMMEDIATE`` transaction, or joins the one of its thread's
:meth:`~SQLiteSessionStore.batch` (the agent commits each step's writes together); while
another connection holds the write lock, a call waits (short ``busy_timeout`` waits, retried
with random backoff) for up to ``timeout`` seconds, then raises :class:`SessionStoreError`: a
failure is never swallowed.
With ``synchronous=NORMAL`` in WAL mode a committed write survives the process being killed
(SIGKILL); pass ``synchronous="FULL"`` to survive power loss too.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hermes_hookspecs import SessionInfo, check_person

from .batches import Appends, Write, run_all, unknown_session
from .codec import (
    collector_paused,
    decode_messages,
    dump_json,
    encode_message,
    message_bodies,
    parse_bodies,
    session_from_row,
)
from .connections import SQLiteConnections, check_header, make_private
from .errors import SessionStoreError
from .ledger import LedgerTables
from .schema import (
    COUNTER_COLUMNS,
    SCHEMA_VERSION,
    SESSION_FIELDS,
    SESSION_SELECT,
    TOKEN_COLUMNS,
    open_schema,
    preflight,
)
from .search import (
    INDEX_STEP,
    INDEXED_UPTO,
    SearchHit,
    index_step,
    parse_query,
    people_condition,
    search_messages,
)
from .session_locks import SessionLockFiles

log = logging.getLogger("hermes.sessions")

_DELETE_STEP = 2000
_NEWEST_IN_LINEAGE = (
    "WITH RECURSIVE lineage(id) AS (SELECT ? UNION "
    "SELECT s.id FROM sessions s JOIN lineage l ON s.parent_session_id = l.id "
    "JOIN sessions p ON p.id = l.id WHERE +s.source = p.source) "
    "SELECT s.id FROM lineage l JOIN sessions s ON s.id = l.id "
    "ORDER BY s.started_at DESC, s.rowid DESC LIMIT 1"
)
"""The newest session of a lineage. ``+s.source``: each step finds children through the parent
index; through the source index it would walk every session of that source (a gateway's
thousands), on every turn."""


class SQLiteSessionStore(SQLiteConnections, LedgerTables):
    """Sessions and messages in one SQLite file, with full-text search (implements
    ``hermes_hookspecs.PersonalSessionStore`` and ``hermes_hookspecs.LockingSessionStore``), and
    the spend ledger and pooled keys' state (``UsageLedger``, ``KeyStateStore``, see
    :mod:`.ledger`).

    Safe to share between threads (one connection per thread) and between processes (WAL,
    ``BEGIN IMMEDIATE`` writes, busy timeout and bounded retries).

    :param path: the database file (``$HERMES_HOME/state.db``); created when missing.
    :param timeout: seconds a call keeps trying while another connection holds the write lock
        (short waits inside SQLite, then retries after a random backoff of up to 5 ms, which
        keeps the wait fair between many writers); after that :class:`SessionStoreError`.
    :param synchronous: ``NORMAL`` (committed writes survive a killed process) or ``FULL``
        (they also survive power loss, at some cost in write speed).
    :param index_batch: after this many appends through this store, the messages waiting
        for the search indexes (from any process) are added in one transaction; a search adds
        the waiting ones first, so it always sees every committed message. Indexing each
        message in its own transaction would cost FTS5 several times the append itself.
    :raises SessionStoreError: the file is corrupt, belongs to another program, or was written
        by a newer hermes.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        synchronous: str = "NORMAL",
        index_batch: int = 1000,
    ) -> None:
        path = Path(path)
        index_batch = max(1, int(index_batch))
        super().__init__(path, timeout=timeout, synchronous=synchronous)
        self.index_batch = index_batch
        self._appended = 0  # appends since this store last indexed
        self.session_locks = SessionLockFiles(Path(f"{self.path}.locks"))
        """The lock files of :meth:`hold_session`, beside the database (made on first use)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        check_header(self.path)
        preflight(self.path)
        if not self.path.exists():
            make_private(self.path)  # created empty, readable by its owner only
        # another program's file is recognised (and refused) before anything is changed in it,
        # its mode included; only then is a file hermes wrote made private
        self._run(lambda conn: open_schema(conn, self.path), write=False, what="open")
        make_private(self.path)

    def __enter__(self) -> SQLiteSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    # --- the SessionStore protocol ----------------------------------------------------------

    def create_session(self, session: SessionInfo) -> None:
        """Record a new session; its ``metadata`` is stored as JSON (counter names such as
        ``message_count`` go to their columns). An existing id is an error."""
        if not isinstance(session.id, str) or not session.id:
            raise SessionStoreError(f"a session id must be a non-empty string, not {session.id!r}")
        values = {name: getattr(session, name) for name in SESSION_FIELDS}
        values["started_at"] = session.started_at or time.time()
        values["person"] = check_person(session.person)
        metadata = dict(session.metadata or {})
        counters = {k: metadata.pop(k) for k in COUNTER_COLUMNS if k in metadata}
        names = ["id", *values, *counters, "metadata"]
        params = [session.id, *values.values(), *counters.values()]
        params.append(dump_json(metadata, "the session metadata"))
        sql = f"INSERT INTO sessions ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"

        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(sql, params)
            except sqlite3.IntegrityError:
                raise SessionStoreError(f"session {session.id!r} already exists") from None

        self._write(insert, what="create a session")

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session, or ``None`` when unknown. ``metadata`` holds the stored metadata plus
        the counters (``message_count``, ``tool_call_count``, token counts,
        ``estimated_cost_usd``)."""
        row = self._run(
            lambda c: c.execute(
                f"SELECT {SESSION_SELECT} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone(),
            write=False,
            what="read a session",
        )
        return session_from_row(row) if row else None

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change fields of a session. Columns (``system_prompt``, ``ended_at``, ``title``,
        token counters...) are set; anything else (``fallbacks``, ``todo``...) goes into the
        metadata JSON, and a ``metadata`` dict is merged into it.

        :raises SessionStoreError: the session is unknown.
        """
        if "id" in fields or "person" in fields:
            raise SessionStoreError("a session's id and person cannot be changed")
        columns = {k: v for k, v in fields.items() if k in SESSION_FIELDS or k in COUNTER_COLUMNS}
        extra = {k: v for k, v in fields.items() if k not in columns and k != "metadata"}
        merged = fields.get("metadata")
        if merged is not None and not isinstance(merged, Mapping):
            raise SessionStoreError("metadata must be a dict")
        if merged:
            extra = {**merged, **extra}
        if "started_at" in columns and columns["started_at"] is None:
            raise SessionStoreError("started_at cannot be empty")

        def update(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT metadata FROM sessions WHERE id = ?", (session_id,))
            found = row.fetchone()
            if found is None:
                raise unknown_session(session_id)
            sets = [f"{name} = ?" for name in columns]
            params = list(columns.values())
            if extra:
                metadata = json.loads(found[0] or "{}")
                metadata.update(extra)
                sets.append("metadata = ?")
                params.append(dump_json(metadata, "the session metadata"))
            if sets:
                conn.execute(
                    f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*params, session_id)
                )

        self._write(update, what="update a session")

    def append_message(self, session_id: str, message: dict[str, Any]) -> None:
        """Persist one completed message, exactly (every key, ``_`` ones included), in its own
        transaction (or its :meth:`batch`'s). The first user message of an untitled session
        gives it its title.

        :raises SessionStoreError: the session is unknown, a value is not JSON, or the write
            failed after the retries.
        """
        encoded = encode_message(session_id, message, time.time())
        pending = self._pending()
        if pending is not None:  # joins the messages appended just before it, if any
            self._appends_in(pending, session_id).add(encoded)
            self._local.appended += 1
            return
        appends = Appends(session_id)
        appends.add(encoded)
        self._run(appends, write=True, what="save a message")
        self._count_appends(1)

    # --- one turn at a time (hermes_hookspecs.LockingSessionStore) --------------------------

    def hold_session(
        self, session_id: str, cancel: threading.Event
    ) -> AbstractContextManager[bool]:
        """Hold the lock of one turn of ``session_id`` while the block runs, against every
        thread and process of this machine using this database; wait for its holder. The
        block gets ``False`` (holding nothing) when ``cancel`` is set while waiting.

        The lock is a ``flock`` on a file in ``<database>.locks/`` (private), which exists
        only while the session is held: the kernel releases it when its process dies.

        :raises SessionStoreError: the lock file cannot be made or opened.
        """
        return self.session_locks.hold(session_id, cancel)

    def batch(self) -> _Batch:
        """A block (``with store.batch(): ...``) whose writes by this thread
        (:meth:`create_session`, :meth:`update_session`, :meth:`append_message`,
        :meth:`add_usage`) are committed together, in one transaction, when it ends: all of
        them or, when one fails, none. Messages appended one after the other go in with one
        update of the session's counters.

        Errors a call can see at once (a value that is not JSON) are raised by the call; the
        others (an unknown session, a failed write) when the block ends, as
        :class:`SessionStoreError`, nothing of the block written. A block that raises writes
        nothing. Nested blocks join the outermost one.
        """
        return _Batch(self)

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
            self._run(write, write=True, what=what)
        else:
            pending.append(write)

    def _count_appends(self, count: int) -> None:
        """Note ``count`` committed appends; index the waiting messages every ``index_batch``."""
        if not count:
            return
        with self._lock:
            self._appended += count
            due = self._appended >= self.index_batch
            if due:
                self._appended = 0
        if due:
            self._index_quietly()

    def index_pending(self, limit: int | None = None) -> int:
        """Add messages not yet in the search indexes to them (in transactions of at most
        2,000 messages); returns how many. Appends do this every ``index_batch`` messages and
        :meth:`search` before it runs, so callers rarely need to."""
        done = 0
        while limit is None or done < limit:
            step = INDEX_STEP if limit is None else min(INDEX_STEP, limit - done)
            count = self._run(
                functools.partial(index_step, count=step),
                write=True,
                what="index messages for search",
            )
            done += count
            if count < step:
                break
        return done

    def _index_quietly(self) -> None:
        """Index waiting messages after an append; the message is already saved, so a failure
        here is logged and left to the next append or search."""
        try:
            self.index_pending()
        except SessionStoreError as exc:
            log.warning("search indexing deferred: %s", exc)

    def get_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order, equal to the dicts that were appended."""
        return self._read_messages(session_id, clean=False)

    def get_clean_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order, as a conversation replays them: equal to the
        dicts that were appended, except that text UTF-8 cannot carry (lone surrogates, from
        sessions written before text was cleaned where it entered) is replaced by U+FFFD."""
        return self._read_messages(session_id, clean=True)

    def _read_messages(self, session_id: str, clean: bool) -> list[dict[str, Any]]:
        """The messages of a session: each row's ``body`` (the message's JSON, always
        encodable), all parsed at once; rows without one (written before the column existed,
        or holding lone surrogates) decoded from their columns, in the same snapshot."""
        with collector_paused():
            array, bodies, old_rows = self._run(
                functools.partial(message_bodies, session_id=session_id),
                write=False,
                what="read messages",
            )
            if array is not None:
                messages: list[dict[str, Any]] = json.loads(array)
                return messages
            if len(old_rows) == len(bodies):  # written before messages had a body
                return decode_messages(old_rows, clean=clean)
            old = iter(decode_messages(old_rows, clean=clean))
            parsed = iter(parse_bodies([body for body in bodies if body is not None]))
            return [next(parsed) if body is not None else next(old) for body in bodies]

    # --- listing and lineage ----------------------------------------------------------------

    def list_sessions(
        self, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionInfo]:
        """Sessions, newest first, optionally only those from ``source`` (``cli``...)."""
        where = ("source = ?", [source]) if source is not None else ("1", [])
        return self._listed(where, limit, offset)

    def _listed(self, where: tuple[str, list[Any]], limit: int, offset: int) -> list[SessionInfo]:
        """The sessions one condition (and its parameters) holds for, newest first."""
        condition, params = where
        rows = self._run(
            lambda c: c.execute(
                f"SELECT {SESSION_SELECT} FROM sessions WHERE {condition} "
                "ORDER BY started_at DESC, rowid DESC LIMIT ? OFFSET ?",
                (*params, max(0, int(limit)), max(0, int(offset))),
            ).fetchall(),
            write=False,
            what="list sessions",
        )
        return [session_from_row(row) for row in rows]

    def find_sessions(self, ref: str, limit: int = 10) -> list[SessionInfo]:
        """Sessions ``ref`` may name, newest first: the one with that exact id; else those whose
        id starts with ``ref``; else those whose title equals ``ref`` (case-insensitive)."""
        exact = self.get_session(ref)
        if exact is not None:
            return [exact]
        pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        for where, value in (("id LIKE ? ESCAPE '\\'", pattern), ("lower(title) = lower(?)", ref)):
            rows = self._run(
                functools.partial(_sessions_where, where=where, value=value, limit=limit),
                write=False,
                what="find sessions",
            )
            if rows:
                return [session_from_row(row) for row in rows]
        return []

    def list_people_sessions(
        self, people: Collection[str | None], limit: int = 50, offset: int = 0
    ) -> list[SessionInfo]:
        """The sessions of ``people`` (``None``: the owner's), newest first."""
        condition, params = people_condition("person", people)
        return self._listed((condition, list(params)), limit, offset)

    def people_counts(self) -> dict[str | None, int]:
        """How many sessions each person has (``None``: the owner's)."""
        rows = self._run(
            lambda c: c.execute("SELECT person, COUNT(*) FROM sessions GROUP BY person").fetchall(),
            write=False,
            what="count sessions by person",
        )
        return {person: count for person, count in rows}

    def forget_person(self, person: str) -> int:
        """Delete every session of ``person`` with its messages; how many were deleted."""
        check_person(person)
        ids = self._run(
            lambda c: [
                row[0] for row in c.execute("SELECT id FROM sessions WHERE person = ?", (person,))
            ],
            write=False,
            what="find a person's sessions",
        )
        return sum(self.delete_session(session_id) for session_id in ids)

    def latest_session_id(self, source: str | None = None) -> str | None:
        """The id of the most recently started session (from ``source``), or ``None``."""
        found = self.list_sessions(limit=1, source=source)
        return found[0].id if found else None

    def newest_in_lineage(self, session_id: str) -> str:
        """The newest session that continues ``session_id`` through compression (children
        point to their parent with ``parent_session_id``, possibly over several generations);
        ``session_id`` itself when nothing continues it, or when it is not stored (yet), so a
        caller may pass a new id. Only a child of the parent's own source continues it: a
        subagent's session (source ``subagent``), also linked to its parent, does not."""

        def newest(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(_NEWEST_IN_LINEAGE, (session_id,)).fetchone()
            return row[0] if row else None

        return self._run(newest, write=False, what="follow a session's lineage") or session_id

    # --- search -----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 20,
        snippet_chars: int = 160,
        *,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """Messages matching ``query``, best first (BM25), then most recent.

        ``query`` is plain text, not FTS syntax: words match word prefixes (``connect`` finds
        "connection"), ``"quoted text"`` matches a phrase, and a term with CJK characters,
        digits or punctuation (``数据库``, ``example.com/path``, ``config.yaml``, ``E1234``)
        also matches inside longer tokens (at least 3 characters). All terms must match; when
        nothing does, any term may. Among very many matches, the most recent
        :data:`RANK_WINDOW` are ranked.

        :param limit: at most this many hits (1..200).
        :param snippet_chars: the length of each snippet (40..2000).
        :param exclude_session: leave out this session's messages (e.g. the current one).
        """
        terms = parse_query(query or "")
        if not terms:
            return []
        limit = max(1, min(int(limit), 200))
        snippet_chars = max(40, min(int(snippet_chars), 2000))
        self._index_for_search()
        return self._run(
            lambda conn: search_messages(conn, terms, limit, snippet_chars, exclude_session),
            write=False,
            what="search",
        )

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
        terms = parse_query(query or "")
        if not terms or not people:
            return []
        limit = max(1, min(int(limit), 200))
        snippet_chars = max(40, min(int(snippet_chars), 2000))
        self._index_for_search()
        return self._run(
            lambda conn: search_messages(
                conn, terms, limit, snippet_chars, exclude_session, people=people
            ),
            write=False,
            what="search",
        )

    def _index_for_search(self) -> None:
        try:
            self.index_pending()
        except SessionStoreError as exc:  # e.g. a read-only file: search what is indexed
            if "readonly" not in str(exc) and "read-only" not in str(exc):
                raise
            log.warning("searching without indexing the newest messages: %s", exc)

    # --- maintenance ------------------------------------------------------------------------

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages (and their search entries); ``False`` when it did
        not exist. Sessions that continued it keep their own messages. A long session goes in
        several short transactions, newest messages first, the session row last."""

        def delete_some(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id = ? "
                "ORDER BY id DESC LIMIT ?)",
                (session_id, _DELETE_STEP),
            ).rowcount

        while self._run(delete_some, write=True, what="delete messages") >= _DELETE_STEP:
            pass

        def delete(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

        return self._run(delete, write=True, what="delete a session")

    def prune(self, older_than_days: float) -> int:
        """Delete sessions that started more than ``older_than_days`` ago and have had no
        message since; returns how many. Each session is deleted in its own transaction."""
        if older_than_days < 0:
            raise SessionStoreError("older_than_days must not be negative")
        cutoff = time.time() - float(older_than_days) * 86400

        def candidates(conn: sqlite3.Connection) -> list[str]:
            return [
                row[0]
                for row in conn.execute(
                    "SELECT s.id FROM sessions s WHERE s.started_at < ? AND COALESCE(("
                    "SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), 0) < ?",
                    (cutoff, cutoff),
                )
            ]

        deleted = 0
        for session_id in self._run(candidates, write=False, what="find old sessions"):
            deleted += self.delete_session(session_id)
        return deleted

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: ``sessions``, ``messages``, ``db_size_bytes`` (file and WAL),
        ``oldest`` and ``newest`` session start (UNIX time or ``None``), ``schema_version``,
        ``path``, and ``waiting_for_index`` (messages the next search or batch will index)."""

        def read(conn: sqlite3.Connection) -> tuple[Any, ...]:
            sessions, oldest, newest = conn.execute(
                "SELECT COUNT(*), MIN(started_at), MAX(started_at) FROM sessions"
            ).fetchone()
            messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
            waiting = conn.execute(
                f"SELECT COUNT(*) FROM messages WHERE id > ({INDEXED_UPTO})"
            ).fetchone()[0]
            return sessions, messages, oldest, newest, waiting

        sessions, messages, oldest, newest, waiting = self._run(
            read, write=False, what="read statistics"
        )
        size = 0
        for suffix in ("", "-wal"):
            try:
                size += os.path.getsize(f"{self.path}{suffix}")
            except OSError:
                pass
        return {
            "path": str(self.path),
            "sessions": sessions,
            "messages": messages,
            "db_size_bytes": size,
            "oldest": oldest,
            "newest": newest,
            "schema_version": SCHEMA_VERSION,
            "waiting_for_index": waiting,
        }

    def set_title(self, session_id: str, title: str | None) -> None:
        """Set (or with ``None`` clear) a session's title.

        :raises SessionStoreError: the session is unknown.
        """
        value = " ".join(title.split()) if title is not None else None
        self.update_session(session_id, title=value or None)

    def add_usage(
        self, session_id: str, usage: Mapping[str, Any] | Any, cost_usd: float | None = None
    ) -> None:
        """Add token counts (``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
        ``cache_write_tokens``, ``reasoning_tokens``; other keys are ignored) and, when known,
        a cost to the session's totals.

        :raises SessionStoreError: the session is unknown.
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
        self._run(write, write=True, what="save token usage")


class _Batch:
    """The block of :meth:`SQLiteSessionStore.batch`."""

    __slots__ = ("store", "outer")

    def __init__(self, store: SQLiteSessionStore) -> None:
        self.store = store
        self.outer = False

    def __enter__(self) -> None:
        local = self.store._local
        if getattr(local, "batch", None) is None:
            self.outer = True
            local.batch = []
            local.appended = 0

    def __exit__(self, kind: object, *rest: object) -> None:
        if not self.outer:
            return
        local = self.store._local
        pending: list[Write] = local.batch
        local.batch = None
        if kind is None and pending:
            self.store._run(
                functools.partial(run_all, writes=pending), write=True, what="save a step"
            )
            self.store._count_appends(local.appended)


def _sessions_where(conn: sqlite3.Connection, where: str, value: str, limit: int) -> list[Any]:
    """The rows of the sessions matching one ``where`` clause (one ``?``), newest first."""
    return conn.execute(
        f"SELECT {SESSION_SELECT} FROM sessions WHERE {where} "
        "ORDER BY started_at DESC, rowid DESC LIMIT ?",
        (value, max(1, int(limit))),
    ).fetchall()
