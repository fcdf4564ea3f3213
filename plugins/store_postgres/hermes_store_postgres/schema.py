"""The tables of the PostgreSQL session store and their migrations.

Each migration has a version; the versions applied to a database are rows of the table
``hermes_schema_versions`` (version, description, when). :func:`migrate` applies the missing
ones, in order, in one transaction, holding an advisory lock so that two processes opening the
store at once never migrate together (the second waits, then finds nothing to do). It runs
when a store opens and from ``hermes store migrate``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg

from .connections import Connection, PostgresStoreError, one_line
from .ledger import migrate_to_v2

VERSIONS_TABLE = "hermes_schema_versions"
"""The table that records which migrations a database has."""

MIGRATION_LOCK = 0x4865726D65730001
"""The advisory lock (``pg_advisory_lock``) a migration holds: "Hermes" and 1."""

LOCK_WAIT = "300s"
"""How long a process waits for another one's migration before it gives up."""

OWN_TABLES = ("sessions", "messages")
"""The tables of the store; a database that has one but no version table is another
program's, and is refused."""

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
"""Columns that are fields of :class:`~hermes_hookspecs.SessionInfo`."""

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
"""A session row as :func:`hermes_store_postgres.rows.session_from_row` reads it."""

_V1 = """
CREATE TABLE sessions (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,  -- creation order, for ties of started_at
    source text NOT NULL DEFAULT 'cli',
    model text NOT NULL DEFAULT '',
    provider text NOT NULL DEFAULT '',
    system_prompt text,
    parent_session_id text,
    started_at double precision NOT NULL,
    ended_at double precision,
    end_reason text,
    title text,
    person text,
    message_count bigint NOT NULL DEFAULT 0,
    tool_call_count bigint NOT NULL DEFAULT 0,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cache_read_tokens bigint NOT NULL DEFAULT 0,
    cache_write_tokens bigint NOT NULL DEFAULT 0,
    reasoning_tokens bigint NOT NULL DEFAULT 0,
    estimated_cost_usd double precision,
    metadata text NOT NULL DEFAULT '{}'              -- JSON text: key order kept
);
CREATE INDEX sessions_by_start ON sessions (started_at DESC, seq DESC);
CREATE INDEX sessions_by_source ON sessions (source, started_at DESC, seq DESC);
CREATE INDEX sessions_by_person ON sessions (person, started_at DESC, seq DESC);
CREATE INDEX sessions_by_parent ON sessions (parent_session_id)
    WHERE parent_session_id IS NOT NULL;
CREATE INDEX sessions_by_id_prefix ON sessions (id text_pattern_ops);
CREATE INDEX sessions_by_title ON sessions (lower(title));

CREATE TABLE messages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role text NOT NULL DEFAULT '',
    timestamp double precision NOT NULL,  -- when the store received it
    body text NOT NULL,                   -- the message as JSON text, exactly as appended
    content text,                         -- its searchable text (a list content's text parts)
    calls_text text,                      -- its tool calls' searchable text
    words tsvector,                       -- content and calls cut as SQLite's unicode61 cuts
    substrings text                       -- lower-cased tokens with digits, punctuation or CJK
);
CREATE INDEX messages_by_session ON messages (session_id, id);
CREATE INDEX messages_words ON messages USING gin (words);
"""


def _statements(script: str) -> list[str]:
    """The statements of a schema script (no ``;`` inside one), without comments."""
    lines = [line.split("--", 1)[0].rstrip() for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _trigram_schema(conn: Connection) -> str:
    """The schema that holds ``pg_trgm`` (created when missing), quoted for SQL.

    :raises PostgresStoreError: the server lacks the extension, or the role may not create it.
    """
    find = "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'"
    row = conn.execute(find).fetchone()
    if row is None:
        try:
            with conn.transaction():  # a savepoint: a refusal is reported, not a dead transaction
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except psycopg.errors.InsufficientPrivilege:
            raise PostgresStoreError(
                "the PostgreSQL role may not create the extension pg_trgm, which the session "
                "store's substring search needs: have the database's owner or an administrator "
                "run CREATE EXTENSION pg_trgm in it"
            ) from None
        except (psycopg.errors.UndefinedFile, psycopg.errors.FeatureNotSupported) as exc:
            raise PostgresStoreError(
                "the PostgreSQL server lacks the extension pg_trgm (one of its contrib modules; "
                f"Debian: postgresql-contrib), which the session store needs: {one_line(exc, '')}"
            ) from None
        row = conn.execute(find).fetchone()
    assert row is not None
    return str(row[0])


def _migrate_to_v1(conn: Connection) -> None:
    """Sessions and messages, with the word index (``tsvector``) and the substring index
    (``pg_trgm``)."""
    trigrams = _trigram_schema(conn)
    for statement in _statements(_V1):
        conn.execute(statement)
    conn.execute(
        "CREATE INDEX messages_substrings ON messages "
        f"USING gin (substrings {trigrams}.gin_trgm_ops)"
    )


@dataclass(frozen=True)
class Migration:
    """One step of the schema: its version, what it does, and the function that does it
    (inside the migration's transaction)."""

    version: int
    description: str
    apply: Callable[[Connection], None]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions and messages; word (tsvector) and substring (pg_trgm) search indexes",
        _migrate_to_v1,
    ),
    Migration(
        2,
        "usage_records (one row per model call) and key_state (credential pools)",
        migrate_to_v2,
    ),
)
"""Every migration, in order; append only (a released one is never changed)."""

SCHEMA_VERSION = MIGRATIONS[-1].version
"""The newest schema version this plugin knows."""


@dataclass
class MigrationReport:
    """What :func:`migrate` found and did: the versions it applied now, and every version the
    database has (number, description, when it was applied)."""

    applied: list[int] = field(default_factory=list)
    versions: list[tuple[int, str, dt.datetime]] = field(default_factory=list)

    @property
    def current(self) -> int:
        """The database's schema version (0 for none)."""
        return max((version for version, _, _ in self.versions), default=0)


def _versions(conn: Connection) -> list[tuple[int, str, dt.datetime]] | None:
    """The versions the database records, or ``None`` when it has no version table."""
    if conn.execute("SELECT to_regclass(%s)", (VERSIONS_TABLE,)).fetchone() == (None,):
        return None
    rows = conn.execute(
        f"SELECT version, description, applied_at FROM {VERSIONS_TABLE} ORDER BY version"
    ).fetchall()
    return [(int(v), str(d), a) for v, d, a in rows]


def _check_known(versions: list[tuple[int, str, dt.datetime]], where: str) -> None:
    """Refuse a database written by a newer version of the plugin."""
    newest = max((version for version, _, _ in versions), default=0)
    if newest > SCHEMA_VERSION:
        raise PostgresStoreError(
            f"the session store at {where} has schema version {newest}, written by a newer "
            f"hermes-store-postgres (this one knows up to {SCHEMA_VERSION}); upgrade it"
        )


def _check_not_foreign(conn: Connection, where: str) -> None:
    """Refuse a database (schema) whose store tables hermes did not make."""
    for table in OWN_TABLES:
        if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() != (None,):
            raise PostgresStoreError(
                f"the database at {where} already has a table {table!r} that hermes did not "
                "make (no hermes_schema_versions); give hermes a database of its own, or a "
                "schema of its own (?options=-csearch_path%3Dhermes in store.url)"
            )


def migrate(conn: Connection, where: str) -> MigrationReport:
    """Bring the database of ``conn`` (a connection in autocommit mode) to
    :data:`SCHEMA_VERSION`: the missing migrations, in order, in one transaction, holding the
    advisory lock :data:`MIGRATION_LOCK` (a second process waits for it, then finds nothing to
    do). Nothing is done, and no lock taken, when the database is up to date; running it again
    changes nothing.

    :param where: the server, for messages (no password).
    :raises PostgresStoreError: a newer schema, another program's tables, a missing
        ``pg_trgm``, or a failed migration (nothing of it is kept).
    """
    report = MigrationReport()
    versions = _versions(conn)
    if versions is not None:
        _check_known(versions, where)
        if {v for v, _, _ in versions} >= {m.version for m in MIGRATIONS}:
            report.versions = versions
            return report
    try:
        conn.execute(f"SET lock_timeout = '{LOCK_WAIT}'")
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("RESET lock_timeout")
    except psycopg.errors.LockNotAvailable:
        raise PostgresStoreError(
            f"another process has been migrating the session store at {where} for "
            f"{LOCK_WAIT}; try again when it is done"
        ) from None
    try:
        # a transaction begun after the lock was had sees all that the process that held it
        # committed (its tables included)
        with conn.transaction():
            _apply_missing(conn, where, report)
    except psycopg.Error as exc:
        raise PostgresStoreError(
            f"the session store at {where} could not be migrated to schema version "
            f"{SCHEMA_VERSION}: {one_line(exc, '')}"
        ) from exc
    finally:
        if not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return report


def _apply_missing(conn: Connection, where: str, report: MigrationReport) -> None:
    """Apply the migrations the database lacks (inside the caller's transaction, under the
    lock), and note them and every version in ``report``."""
    versions = _versions(conn)
    if versions is None:
        _check_not_foreign(conn, where)
        conn.execute(
            f"CREATE TABLE {VERSIONS_TABLE} (version integer PRIMARY KEY, "
            "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        versions = []
    _check_known(versions, where)
    done = {v for v, _, _ in versions}
    for migration in MIGRATIONS:
        if migration.version in done:
            continue
        migration.apply(conn)
        conn.execute(
            f"INSERT INTO {VERSIONS_TABLE} (version, description) VALUES (%s, %s)",
            (migration.version, migration.description),
        )
        report.applied.append(migration.version)
    report.versions = _versions(conn) or []


def versions_of(conn: Connection) -> list[tuple[int, str, dt.datetime]]:
    """The schema versions the database of ``conn`` has (none before the first migration)."""
    return _versions(conn) or []
