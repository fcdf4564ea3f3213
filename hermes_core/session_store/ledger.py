"""The spend ledger and the pooled keys' shared state in the SQLite store
(:class:`hermes_hookspecs.UsageLedger` and :class:`hermes_hookspecs.KeyStateStore`).

Key state changes are compare-and-swap on a version column: a process reads a key's state,
works out the new one and writes it only if nobody changed it meanwhile, else reads again. Two
processes (a CLI and a gateway) that both see a 429 on one key therefore agree on one cooldown,
and neither overwrites the other's count.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import KeyState, Spent, UsageRecord, usage_row

from . import ledger_sql as sql
from .batches import Write


class LedgerTables:
    """Mixed into :class:`~hermes_core.session_store.SQLiteSessionStore`: the methods of the two
    capabilities over ``usage_records`` and ``key_state``."""

    if TYPE_CHECKING:  # the store's own, from SQLiteConnections and SQLiteSessionStore

        def _run(
            self, fn: Callable[[sqlite3.Connection], Any], *, write: bool, what: str
        ) -> Any: ...

        def _write(self, write: Write, what: str) -> None: ...

    # --- usage ------------------------------------------------------------------------------

    def record_usage(self, record: UsageRecord) -> None:
        """Keep one model call's usage (in the thread's open batch when there is one)."""
        params = (
            record.at,
            record.session_id,
            record.person,
            record.source,
            record.job,
            record.model,
            record.provider,
            record.key_id,
            int(record.input_tokens),
            int(record.output_tokens),
            int(record.cache_read_tokens),
            int(record.cache_write_tokens),
            record.cost_usd,
        )

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(sql.INSERT_USAGE, params)

        self._write(insert, what="record usage")

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
        query = sql.SPENT
        params: list[Any] = [since]
        if session_id is not None:
            query += " AND session_id = ?"
            params.append(session_id)
        if owner:
            query += " AND person IS NULL"
        elif person is not None:
            query += " AND person = ?"
            params.append(person)
        if job is not None:
            query += " AND job = ?"
            params.append(job)
        usd, tokens = self._run(
            lambda conn: conn.execute(query, params).fetchone(), write=False, what="read spend"
        )
        return Spent(usd=float(usd), unpriced_tokens=int(tokens))

    def last_call_tokens(self, session_id: str) -> int:
        """Prompt and answer tokens of the session's last recorded call (0 when none)."""
        row = self._run(
            lambda conn: conn.execute(sql.LAST_CALL, (session_id,)).fetchone(),
            write=False,
            what="read usage",
        )
        return int(row[0]) if row else 0

    def usage_rows(self, since: float, by: str) -> list[dict[str, Any]]:
        """Totals since ``since`` grouped ``by`` ``day``, ``model``, ``user``, ``job`` or
        ``key``."""
        group = sql.GROUPS.get(by)
        if group is None:
            raise ValueError(f"unknown grouping {by!r}")
        order = "grp" if by == "day" else "7 DESC, 2 DESC, grp"
        query = sql.USAGE_ROWS.format(group=group, order=order)
        rows = self._run(
            lambda conn: conn.execute(query, (since,)).fetchall(), write=False, what="read usage"
        )
        return [usage_row(row) for row in rows]

    # --- pooled keys ------------------------------------------------------------------------

    def key_states(self, provider: str) -> dict[str, KeyState]:
        """The stored state of each key of ``provider``'s pool."""
        rows = self._run(
            lambda conn: conn.execute(sql.KEY_STATES, (provider,)).fetchall(),
            write=False,
            what="read key state",
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
            )
            for row in rows
        }

    def swap_key_state(
        self, provider: str, key_id: str, expected_version: int, state: KeyState
    ) -> bool:
        """Store ``state`` if the stored version is still ``expected_version`` (0: no row)."""
        values = (
            state.fingerprint,
            expected_version + 1,
            float(state.cooldown_until),
            state.reason,
            int(state.uses),
            int(state.errors),
            float(state.last_used),
            json.dumps(state.extra, sort_keys=True),
        )

        def swap(conn: sqlite3.Connection) -> bool:
            if expected_version == 0:
                cursor = conn.execute(sql.INSERT_KEY_STATE, (provider, key_id, *values))
            else:
                cursor = conn.execute(
                    sql.UPDATE_KEY_STATE, (*values, provider, key_id, expected_version)
                )
            return cursor.rowcount == 1

        done: bool = self._run(swap, write=True, what="update key state")
        return done

    def forget_key_states(self, provider: str, key_ids: Sequence[str] | None = None) -> int:
        """Delete the state of ``key_ids`` of ``provider`` (all of its keys when ``None``)."""

        def delete(conn: sqlite3.Connection) -> int:
            if key_ids is None:
                cursor = conn.execute("DELETE FROM key_state WHERE provider = ?", (provider,))
                return cursor.rowcount
            count = 0
            for key_id in key_ids:
                cursor = conn.execute(
                    "DELETE FROM key_state WHERE provider = ? AND key_id = ?", (provider, key_id)
                )
                count += cursor.rowcount
            return count

        removed: int = self._run(delete, write=True, what="reset key state")
        return removed
