"""The tables of the queue: procrastinate's own (its schema, made once) and the turns' events
(what a worker sends back to the front end that waits), made under an advisory lock so that
processes starting together make them once."""

from __future__ import annotations

from typing import Any

from .routes import TABLES as ROUTES_TABLES

SCHEMA_LOCK = 0x68657271756575
"""The advisory lock key held while the tables are made ("herqueu")."""
CHANNEL = "hermes_turn_events"
"""The NOTIFY channel a worker signals a turn's new events on (the payload is the turn id)."""

EVENTS_TABLE = """
CREATE TABLE IF NOT EXISTS hermes_turn_events (
    turn_id text NOT NULL,
    seq integer NOT NULL,
    kind text NOT NULL,
    data jsonb NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (turn_id, seq)
);
CREATE INDEX IF NOT EXISTS hermes_turn_events_at ON hermes_turn_events (at);
"""
WAKE_ON_UNLOCK = """
CREATE OR REPLACE FUNCTION hermes_wake_on_unlock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(
        'procrastinate_queue_v1#' || OLD.queue_name,
        json_build_object('type', 'job_inserted', 'job_id', OLD.id)::text
    );
    RETURN NULL;
END;
$$;
CREATE OR REPLACE TRIGGER hermes_wake_on_unlock_update
    AFTER UPDATE OF status ON procrastinate_jobs FOR EACH ROW
    WHEN (OLD.status = 'doing' AND NEW.status <> 'doing' AND OLD.lock IS NOT NULL)
    EXECUTE FUNCTION hermes_wake_on_unlock();
CREATE OR REPLACE TRIGGER hermes_wake_on_unlock_delete
    AFTER DELETE ON procrastinate_jobs FOR EACH ROW
    WHEN (OLD.status = 'doing' AND OLD.lock IS NOT NULL)
    EXECUTE FUNCTION hermes_wake_on_unlock();
"""
"""Procrastinate wakes its workers when a job is queued, not when a job's lock comes free:
without this, the next turn of a session that was waiting behind a running one would start at
the workers' next poll. Each finished job that held a lock wakes the workers of its queue."""


async def ensure_schema(app: Any, url: str) -> bool:
    """Make procrastinate's schema when the database has none, and the events table; whether
    procrastinate's schema was made now. The advisory lock is held on a connection of its own
    (a pool's connections change between statements)."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_LOCK,))
        try:
            cursor = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
            row = await cursor.fetchone()
            made = not (row and row[0])
            if made:
                await app.schema_manager.apply_schema_async()
            await conn.execute(EVENTS_TABLE)
            await conn.execute(WAKE_ON_UNLOCK)
            await conn.execute(ROUTES_TABLES)
            return made
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK,))
