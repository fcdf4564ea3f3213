"""The database schema, its migrations, and the checks made when a file is opened.

``MIGRATIONS[n]`` takes a database from schema version ``n`` to ``n + 1``; a file records its
version in ``PRAGMA user_version`` and is marked as a hermes file by ``PRAGMA application_id``.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from .connections import file_state, read_only_connection
from .errors import REPAIR_HINT, SessionStoreError
from .ledger_sql import LEDGER_TABLES

log = logging.getLogger("hermes.sessions")

APPLICATION_ID = 0x4865726D  # "Herm", in the database header (PRAGMA application_id)
"""Marks a file as a hermes state database, so a foreign SQLite file is recognised."""

SESSION_FIELDS = (
    "source",
    "model",
    "provider",
    "system_prompt",
    "parent_session_id",
    "started_at",
    "ended_at",
    "end_reason",
    "title",
)
"""Columns that are fields of :class:`SessionInfo`."""

TOKEN_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
COUNTER_COLUMNS = ("message_count", "tool_call_count", *TOKEN_COLUMNS, "estimated_cost_usd")
"""Columns the store maintains; reported in ``SessionInfo.metadata`` under these names."""

SESSION_SELECT = ", ".join(("id", *SESSION_FIELDS, *COUNTER_COLUMNS, "person", "metadata"))
"""A session row as :func:`~hermes_core.session_store.codec.session_from_row` reads it."""

_V1 = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL DEFAULT 'cli',
    model TEXT NOT NULL DEFAULT '',
    provider TEXT NOT NULL DEFAULT '',
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    title TEXT,
    message_count INTEGER NOT NULL DEFAULT 0,
    tool_call_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX sessions_by_start ON sessions (started_at);
CREATE INDEX sessions_by_source ON sessions (source, started_at);
CREATE INDEX sessions_by_parent ON sessions (parent_session_id) WHERE parent_session_id IS NOT NULL;

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,    -- increasing; see search_state for why not AUTOINCREMENT
    session_id TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT '',
    content TEXT,          -- the text: a string content as is, the text parts of a list content
    content_parts TEXT,    -- JSON, when the content was a list of parts
    tool_calls TEXT,       -- JSON
    tool_call_id TEXT,
    tool_name TEXT,
    reasoning TEXT,
    finish_reason TEXT,
    timestamp REAL NOT NULL,   -- when the store received it (not returned by get_messages)
    token_count INTEGER,
    layout TEXT NOT NULL,      -- the message's keys in order (see _pack_layout)
    extra TEXT,                -- JSON object: every key without a column of its own
    calls_text TEXT,           -- searchable text of the tool calls: "name arguments" lines
    substrings TEXT            -- tokens with digits, punctuation or CJK (the trigram index)
);
CREATE INDEX messages_by_session ON messages (session_id, id);

-- Messages are indexed in batches, a little after they are committed and always before a
-- search runs: messages with id > indexed_upto are waiting. Indexing each message in its own
-- transaction costs FTS5 a segment flush per message, several times the cost of the append.
CREATE TABLE search_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_upto INTEGER NOT NULL
);
INSERT INTO search_state (id, indexed_upto) VALUES (1, 0);

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, calls_text,
    content='messages', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE messages_trigram USING fts5(
    substrings,
    content='messages', content_rowid='id',
    tokenize='trigram'
);
INSERT INTO messages_fts (messages_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)');

-- Indexed rows leave the indexes with their row; deleting the newest rows lowers the mark so
-- that a reused id is indexed again.
CREATE TRIGGER messages_after_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, calls_text)
        SELECT 'delete', old.id, old.content, old.calls_text
        WHERE old.id <= (SELECT indexed_upto FROM search_state WHERE id = 1);
    INSERT INTO messages_trigram (messages_trigram, rowid, substrings)
        SELECT 'delete', old.id, old.substrings
        WHERE old.substrings IS NOT NULL
          AND old.id <= (SELECT indexed_upto FROM search_state WHERE id = 1);
    UPDATE search_state SET indexed_upto = (SELECT COALESCE(MAX(id), 0) FROM messages)
        WHERE id = 1 AND indexed_upto > (SELECT COALESCE(MAX(id), 0) FROM messages);
END;
CREATE TRIGGER messages_after_update AFTER UPDATE OF content, calls_text, substrings ON messages
WHEN old.id <= (SELECT indexed_upto FROM search_state WHERE id = 1) BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, calls_text)
        VALUES ('delete', old.id, old.content, old.calls_text);
    INSERT INTO messages_trigram (messages_trigram, rowid, substrings)
        SELECT 'delete', old.id, old.substrings WHERE old.substrings IS NOT NULL;
    INSERT INTO messages_fts (rowid, content, calls_text)
        VALUES (new.id, new.content, new.calls_text);
    INSERT INTO messages_trigram (rowid, substrings)
        SELECT new.id, new.substrings WHERE new.substrings IS NOT NULL;
END;
"""


def _migrate_to_v1(conn: sqlite3.Connection) -> None:
    """The initial schema."""
    for statement in _split_sql(_V1):
        conn.execute(statement)


def _migrate_to_v2(conn: sqlite3.Connection) -> None:
    """``store_meta``: small facts about the store itself (e.g. the fingerprint of the Hermes
    agent's database at the last import)."""
    conn.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")


def _migrate_to_v3(conn: sqlite3.Connection) -> None:
    """``messages.body``: the whole message as JSON, so a session is read back with one value
    per message and one parse. Rows written before stay ``NULL`` and are decoded from their
    columns."""
    conn.execute("ALTER TABLE messages ADD COLUMN body TEXT")


def _migrate_to_v4(conn: sqlite3.Connection) -> None:
    """``sessions.person``: whose session it is (``NULL`` for the home's owner), indexed for
    the searches and listings kept to some people's sessions. Every earlier session is the
    owner's."""
    conn.execute("ALTER TABLE sessions ADD COLUMN person TEXT")
    conn.execute(
        "CREATE INDEX sessions_by_person ON sessions (person, started_at) WHERE person IS NOT NULL"
    )


def _migrate_to_v5(conn: sqlite3.Connection) -> None:
    """``usage_records``: one row per model call (whose, which model and key, tokens, cost)
    for spend caps and ``hermes usage``; ``key_state``: the shared state of each pooled API key
    (see :mod:`.ledger`)."""
    for statement in _split_sql(LEDGER_TABLES):
        conn.execute(statement)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migrate_to_v1,
    _migrate_to_v2,
    _migrate_to_v3,
    _migrate_to_v4,
    _migrate_to_v5,
]
"""``MIGRATIONS[n]`` takes a database from schema version ``n`` to ``n + 1``; append only."""

SCHEMA_VERSION = len(MIGRATIONS)


def _split_sql(script: str) -> list[str]:
    """Split a schema script into statements (``;`` ends one unless inside a trigger body)."""
    statements, current = [], []
    for line in script.splitlines():
        line = line.split("--", 1)[0].rstrip()
        if not line.strip():
            continue
        current.append(line)
        text = "\n".join(current)
        if text.endswith(";") and sqlite3.complete_statement(text):
            statements.append(text)
            current = []
    if current:
        statements.append("\n".join(current))
    return statements


FOREIGN_HINT = "hermes leaves another program's file as it is; move it away yourself to use it"


def preflight(path: Path) -> None:
    """Refuse another program's database before hermes opens it for writing: through a
    read-only connection, so nothing in the file changes (a read-write connection would
    checkpoint its write-ahead log when closed). A missing or empty file passes. A file that
    looks foreign while it changes (another hermes process creating its schema this moment) is
    looked at again until it holds still.

    :raises SessionStoreError: the Hermes agent's own database, another program's, or one
        written by a newer hermes.
    """
    for _ in range(40):
        reason = _foreign(path)
        if reason is None:
            return
        try:
            before = file_state(path)
            time.sleep(0.05)
            if file_state(path) == before and _foreign(path) == reason:
                break
        except OSError:
            return  # gone meanwhile: the open that follows creates it
    raise SessionStoreError(reason)


def _foreign(path: Path) -> str | None:
    """Why ``path`` is not a hermes database hermes may write, or ``None``."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
        conn = read_only_connection(path)
    except (OSError, sqlite3.Error):
        return None  # the read-write open that follows reports it
    try:
        conn.execute("BEGIN")  # one snapshot of the header and the tables
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error:
        return None  # damaged: the open that follows says so, and `hermes sessions repair` helps
    finally:
        conn.close()
    if app_id == APPLICATION_ID:
        return None
    if app_id == 0 and {"sessions", "messages", "schema_version"} <= tables:
        return (
            f"{path} is the Hermes agent's session database; hermes keeps its own sessions in "
            "another file and copies the agent's read-only: `hermes sessions import-hermes`"
        )
    if app_id != 0:
        return f"{path} belongs to another program (application id {app_id:#x}); {FOREIGN_HINT}"
    if version == 0 and tables - {"sqlite_sequence"}:
        return (
            f"{path} is not a hermes session database (it holds tables "
            f"{', '.join(sorted(tables)[:5])}); {FOREIGN_HINT}"
        )
    return None


def open_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Check that ``path`` (open as ``conn``) is a hermes database this version can use, switch it
    to WAL mode and migrate it to :data:`SCHEMA_VERSION`.

    :raises SessionStoreError: another program's file, a newer schema, or missing tables.
    """
    conn.execute("BEGIN")  # one snapshot, in case another process is creating the schema
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = sorted(
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        )
    finally:
        conn.execute("COMMIT")
    if app_id not in (0, APPLICATION_ID):
        raise SessionStoreError(
            f"{path} belongs to another program (application id {app_id:#x}); {FOREIGN_HINT}"
        )
    if version > SCHEMA_VERSION:
        raise SessionStoreError(
            f"{path} was written by a newer hermes (schema version {version}, this "
            f"version knows up to {SCHEMA_VERSION}); upgrade hermes, or move the file away "
            "to start afresh"
        )
    if version == 0 and tables:
        raise SessionStoreError(
            f"{path} is not a hermes session database (it holds tables "
            f"{', '.join(tables[:5])}); {FOREIGN_HINT}"
        )
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    if version < SCHEMA_VERSION:
        _migrate(conn, path)
    missing = {"sessions", "messages", "messages_fts", "messages_trigram", "store_meta"} - {
        name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    if missing:
        raise SessionStoreError(
            f"{path} lacks table(s) {', '.join(sorted(missing))}; {REPAIR_HINT}"
        )


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Run the migrations the file lacks, in one write transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process?
        for step in range(version, SCHEMA_VERSION):
            log.info("%s: migrating the schema to version %d", path, step + 1)
            MIGRATIONS[step](conn)
            conn.execute(f"PRAGMA user_version = {step + 1}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
