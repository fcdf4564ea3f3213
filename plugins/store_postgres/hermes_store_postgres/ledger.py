"""The spend ledger and the pooled keys' shared state in PostgreSQL (schema version 2): the same
capabilities as the SQLite store's (:class:`hermes_hookspecs.UsageLedger`,
:class:`hermes_hookspecs.KeyStateStore`), so that every process on every machine sharing the
database counts one spend and agrees on each key's cooldown (compare-and-swap on a version)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import KeyState, Spent, UsageRecord, usage_row

from .connections import Connection, Connections

if TYPE_CHECKING:
    from .batches import Write

LEDGER_TABLES = """
CREATE TABLE usage_records (
    id bigserial PRIMARY KEY,
    at double precision NOT NULL,
    session_id text NOT NULL,
    person text,
    source text NOT NULL DEFAULT '',
    job text,
    model text NOT NULL DEFAULT '',
    provider text NOT NULL DEFAULT '',
    key_id text NOT NULL DEFAULT '',
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cache_read_tokens bigint NOT NULL DEFAULT 0,
    cache_write_tokens bigint NOT NULL DEFAULT 0,
    cost_usd double precision
);
CREATE INDEX usage_by_at ON usage_records (at);
CREATE INDEX usage_by_session ON usage_records (session_id, at);
CREATE INDEX usage_by_person ON usage_records (person, at);
CREATE INDEX usage_by_job ON usage_records (job, at) WHERE job IS NOT NULL;
CREATE TABLE key_state (
    provider text NOT NULL,
    key_id text NOT NULL,
    fingerprint text NOT NULL DEFAULT '',
    version bigint NOT NULL,
    cooldown_until double precision NOT NULL DEFAULT 0,
    reason text NOT NULL DEFAULT '',
    uses bigint NOT NULL DEFAULT 0,
    errors bigint NOT NULL DEFAULT 0,
    last_used double precision NOT NULL DEFAULT 0,
    extra text NOT NULL DEFAULT '{}',
    PRIMARY KEY (provider, key_id)
)
"""

_GROUPS = {
    "day": "to_char(to_timestamp(at), 'YYYY-MM-DD')",
    "model": "model",
    "user": "COALESCE(person, '(owner)')",
    "job": "COALESCE(job, '(none)')",
    "key": "provider || ':' || CASE key_id WHEN '' THEN '(unpooled)' ELSE key_id END",
}


def migrate_to_v2(conn: Connection) -> None:
    """``usage_records`` (one row per model call) and ``key_state`` (pooled keys)."""
    for statement in LEDGER_TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)


class PostgresLedger:
    """Mixed into :class:`~hermes_store_postgres.store.PostgresSessionStore`."""

    if TYPE_CHECKING:

        def _write(self, write: Write, what: str) -> None: ...

        _db: Connections

    def record_usage(self, record: UsageRecord) -> None:
        """Keep one model call's usage (in the thread's open batch when there is one)."""
        params = (
            record.at, record.session_id, record.person, record.source, record.job,
            record.model, record.provider, record.key_id, int(record.input_tokens),
            int(record.output_tokens), int(record.cache_read_tokens),
            int(record.cache_write_tokens), record.cost_usd,
        )  # fmt: skip

        def insert(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO usage_records (at, session_id, person, source, job, model, "
                "provider, key_id, input_tokens, output_tokens, cache_read_tokens, "
                "cache_write_tokens, cost_usd) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                params,
            )

        self._write(insert, "record usage")

    def spent(
        self,
        since: float,
        *,
        session_id: str | None = None,
        person: str | None = None,
        owner: bool = False,
        job: str | None = None,
    ) -> Spent:
        """Dollars and unpriced tokens of the records since ``since``, narrowed to a session, a
        person (``owner``: the owner's), or a job."""
        query = (
            "SELECT COALESCE(SUM(cost_usd), 0), COALESCE(SUM(input_tokens + output_tokens) "
            "FILTER (WHERE cost_usd IS NULL), 0) FROM usage_records WHERE at >= %s"
        )
        params: list[Any] = [since]
        if session_id is not None:
            query += " AND session_id = %s"
            params.append(session_id)
        if owner:
            query += " AND person IS NULL"
        elif person is not None:
            query += " AND person = %s"
            params.append(person)
        if job is not None:
            query += " AND job = %s"
            params.append(job)
        row = self._db.run(lambda conn: conn.execute(query, params).fetchone(), "read spend")
        usd, tokens = row if row is not None else (0.0, 0)  # an aggregate always has one
        return Spent(usd=float(usd), unpriced_tokens=int(tokens))

    def last_call_tokens(self, session_id: str) -> int:
        """Prompt and answer tokens of the session's last recorded call (0 when none)."""
        row = self._db.run(
            lambda conn: conn.execute(
                "SELECT input_tokens + output_tokens FROM usage_records WHERE session_id = %s "
                "ORDER BY at DESC, id DESC LIMIT 1",
                (session_id,),
            ).fetchone(),
            "read usage",
        )
        return int(row[0]) if row else 0

    def usage_rows(self, since: float, by: str) -> list[dict[str, Any]]:
        """Totals since ``since`` grouped ``by`` ``day``, ``model``, ``user``, ``job`` or
        ``key``."""
        group = _GROUPS.get(by)
        if group is None:
            raise ValueError(f"unknown grouping {by!r}")
        order = "grp" if by == "day" else "7 DESC, 2 DESC, grp"
        query = (
            f"SELECT {group} AS grp, COUNT(*), SUM(input_tokens), SUM(output_tokens), "
            "SUM(cache_read_tokens), SUM(cache_write_tokens), COALESCE(SUM(cost_usd), 0), "
            "COUNT(*) FILTER (WHERE cost_usd IS NULL) FROM usage_records WHERE at >= %s "
            f"GROUP BY grp ORDER BY {order}"
        )
        rows = self._db.run(lambda conn: conn.execute(query, (since,)).fetchall(), "read usage")
        return [usage_row(row) for row in rows]

    def key_states(self, provider: str) -> dict[str, KeyState]:
        """The stored state of each key of ``provider``'s pool."""
        rows = self._db.run(
            lambda conn: conn.execute(
                "SELECT key_id, fingerprint, version, cooldown_until, reason, uses, errors, "
                "last_used, extra FROM key_state WHERE provider = %s",
                (provider,),
            ).fetchall(),
            "read key state",
        )
        return {
            row[0]: KeyState(
                fingerprint=row[1],
                version=int(row[2]),
                cooldown_until=float(row[3]),
                reason=row[4],
                uses=int(row[5]),
                errors=int(row[6]),
                last_used=float(row[7]),
                extra=json.loads(row[8] or "{}"),
            )  # fmt: skip
            for row in rows
        }

    def swap_key_state(
        self, provider: str, key_id: str, expected_version: int, state: KeyState
    ) -> bool:
        """Store ``state`` if the stored version is still ``expected_version`` (0: no row)."""
        values = (
            state.fingerprint, expected_version + 1, float(state.cooldown_until), state.reason,
            int(state.uses), int(state.errors), float(state.last_used),
            json.dumps(state.extra, sort_keys=True),
        )  # fmt: skip

        def swap(conn: Connection) -> bool:
            if expected_version == 0:
                cursor = conn.execute(
                    "INSERT INTO key_state (provider, key_id, fingerprint, version, "
                    "cooldown_until, reason, uses, errors, last_used, extra) VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (provider, key_id, *values),
                )
            else:
                cursor = conn.execute(
                    "UPDATE key_state SET fingerprint = %s, version = %s, cooldown_until = %s, "
                    "reason = %s, uses = %s, errors = %s, last_used = %s, extra = %s "
                    "WHERE provider = %s AND key_id = %s AND version = %s",
                    (*values, provider, key_id, expected_version),
                )
            return bool(cursor.rowcount == 1)

        done: bool = self._db.run(swap, "update key state")
        return done

    def forget_key_states(self, provider: str, key_ids: Sequence[str] | None = None) -> int:
        """Delete the state of ``key_ids`` of ``provider`` (all of its keys when ``None``)."""

        def delete(conn: Connection) -> int:
            if key_ids is None:
                cursor = conn.execute("DELETE FROM key_state WHERE provider = %s", (provider,))
            else:
                cursor = conn.execute(
                    "DELETE FROM key_state WHERE provider = %s AND key_id = ANY(%s)",
                    (provider, list(key_ids)),
                )
            return int(cursor.rowcount)

        removed: int = self._db.run(delete, "reset key state")
        return removed
