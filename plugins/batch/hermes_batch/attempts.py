"""Attempts of rows: how a worker takes a row, keeps it, and records how the attempt ended,
and how an attempt whose worker is gone is declared lost.

Every write names the attempt (the row's ``attempts`` counter when it was claimed): once a row
was given to another attempt, a write of the earlier one changes nothing.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .schema import Claim

MAX_LOST = 3
"""Attempts of one row that may be lost (its worker died) before the row is ``failed``: a row
that kills its worker every time must not do so for ever."""


class Cursor(Protocol):
    """What :class:`RunTable` needs of a transaction's cursor."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run ``sql`` with ``?`` placeholders."""
        ...

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> Any:
        """Run ``sql`` once per parameter tuple."""
        ...

    def fetchone(self) -> Any:
        """The next result row, or ``None``."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining result rows."""
        ...

    @property
    def rowcount(self) -> int:
        """How many rows the last statement changed."""
        ...


class AttemptTable:
    """The attempt half of the run table (:class:`~hermes_batch.table.RunTable` is the
    whole); subclasses open the connection."""

    """The batch runs of one store; subclasses open the connection."""

    where: str = ""
    """Where the table is (a file or a database URL), for messages."""

    def transaction(self, *, write: bool = True) -> AbstractContextManager[Cursor]:
        """A transaction (writes take the table's write lock at once), committed when the
        block ends without an exception."""
        raise NotImplementedError

    def claim_next_sql(self) -> str:
        """The query that picks the next pending row to claim (locking it where needed)."""
        return (
            "SELECT key, line, data FROM batch_rows WHERE run = ? AND state = 'pending' "
            "ORDER BY line LIMIT 1"
        )

    def close(self) -> None:
        """Close the connection."""

    # --- rows --------------------------------------------------------------------------------

    def claim(self, name: str, worker: str, lease: float) -> Claim | None:
        """Take the next pending row of run ``name`` for ``worker``: the row becomes
        ``running`` under a new attempt with a new session id and a lease of ``lease``
        seconds. ``None`` when no row is pending."""
        now = time.time()
        session = f"batch-{uuid.uuid4().hex}"
        with self.transaction() as cur:
            cur.execute(self.claim_next_sql(), (name,))
            row = cur.fetchone()
            if row is None:
                return None
            key, line, data = row
            cur.execute(
                "UPDATE batch_rows SET state = 'running', attempts = attempts + 1, worker = ?, "
                "session_id = ?, lease_until = ? WHERE run = ? AND key = ?",
                (worker, session, now + lease, name, key),
            )
            cur.execute("SELECT attempts FROM batch_rows WHERE run = ? AND key = ?", (name, key))
            attempt = int(cur.fetchone()[0])
            cur.execute(
                "INSERT INTO batch_attempts (run, key, attempt, session_id, worker, started_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name, key, attempt, session, worker, now),
            )
        return Claim(name, key, int(line), attempt, session, json.loads(data))

    def claimed(self, name: str, key: str, attempt: int) -> Claim | None:
        """The claim of attempt ``attempt`` of row ``key``, while the row is running it."""
        with self.transaction(write=False) as cur:
            cur.execute(
                "SELECT line, data, session_id FROM batch_rows WHERE run = ? AND key = ? "
                "AND state = 'running' AND attempts = ?",
                (name, key, attempt),
            )
            row = cur.fetchone()
        if row is None:
            return None
        line, data, session = row
        return Claim(name, key, int(line), attempt, str(session), json.loads(data))

    def adopt(self, claim: Claim, worker: str) -> bool:
        """Record that ``worker`` runs attempt ``claim`` (a row a coordinator claimed and
        handed to it); ``False`` when the row is no longer running that attempt."""
        with self.transaction() as cur:
            cur.execute(
                "UPDATE batch_rows SET worker = ? WHERE run = ? AND key = ? "
                "AND state = 'running' AND attempts = ?",
                (worker, claim.run, claim.key, claim.attempt),
            )
            if not cur.rowcount:
                return False
            cur.execute(
                "UPDATE batch_attempts SET worker = ? WHERE run = ? AND key = ? AND attempt = ?",
                (worker, claim.run, claim.key, claim.attempt),
            )
            return True

    def release(self, claim: Claim, why: str) -> bool:
        """Declare attempt ``claim`` lost (its worker died); ``False`` when the row was no
        longer running it."""
        with self.transaction() as cur:
            cur.execute(
                "SELECT key, attempts, lost FROM batch_rows WHERE run = ? AND key = ? "
                "AND state = 'running' AND attempts = ?",
                (claim.run, claim.key, claim.attempt),
            )
            return bool(self._lose(cur, claim.run, cur.fetchall(), why))

    def renew(self, claim: Claim, lease: float) -> bool:
        """Extend the lease of ``claim`` by ``lease`` seconds; ``False`` when the row is no
        longer this attempt's (it was declared lost)."""
        with self.transaction() as cur:
            cur.execute(
                "UPDATE batch_rows SET lease_until = ? WHERE run = ? AND key = ? "
                "AND state = 'running' AND attempts = ?",
                (time.time() + lease, claim.run, claim.key, claim.attempt),
            )
            return bool(cur.rowcount)

    def finish(
        self,
        claim: Claim,
        state: str,
        *,
        retry: bool = False,
        output: dict[str, Any] | None = None,
        seed: int | None = None,
        toolsets: Sequence[str] | None = None,
        usage: tuple[int, int, float] = (0, 0, 0.0),
        duration: float = 0.0,
        error: str | None = None,
        discard_reason: str | None = None,
        image: str | None = None,
    ) -> bool:
        """Record how attempt ``claim`` ended: the row becomes ``state`` (``completed``,
        ``failed`` or ``discarded``) with its output, or, with ``retry``, ``pending`` again
        (a failed attempt to be tried once more); ``image`` is the Docker image its commands
        ran in. ``False``, changing nothing, when the row is no longer this attempt's."""
        tokens_in, tokens_out, cost = usage
        now = time.time()
        row_state = "pending" if retry else state
        outcome = "retried" if retry else state
        with self.transaction() as cur:
            cur.execute(
                "UPDATE batch_rows SET state = ?, lease_until = NULL, seed = ?, toolsets = ?, "
                "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                "cost_usd = cost_usd + ?, duration = ?, error = ?, discard_reason = ?, "
                "output = ?, finished_at = ?, image = ? "
                "WHERE run = ? AND key = ? AND state = 'running' AND attempts = ?",
                (
                    row_state,
                    seed,
                    json.dumps(list(toolsets)) if toolsets is not None else None,
                    tokens_in,
                    tokens_out,
                    cost,
                    duration,
                    error,
                    discard_reason,
                    json.dumps(output, ensure_ascii=False, sort_keys=True) if output else None,
                    None if retry else now,
                    image,
                    claim.run,
                    claim.key,
                    claim.attempt,
                ),
            )
            if not cur.rowcount:
                return False
            cur.execute(
                "UPDATE batch_runs SET spent_usd = spent_usd + ? WHERE name = ?", (cost, claim.run)
            )
            cur.execute(
                "UPDATE batch_attempts SET outcome = ?, ended_at = ?, error = ?, "
                "input_tokens = ?, output_tokens = ?, cost_usd = ? "
                "WHERE run = ? AND key = ? AND attempt = ?",
                (
                    outcome,
                    now,
                    error or discard_reason,
                    tokens_in,
                    tokens_out,
                    cost,
                    claim.run,
                    claim.key,
                    claim.attempt,
                ),
            )
        return True

    def _lose(self, cur: Cursor, name: str, rows: list[Any], why: str) -> int:
        now = time.time()
        for key, attempt, lost in rows:
            dead = lost + 1 >= MAX_LOST
            cur.execute(
                "UPDATE batch_rows SET state = ?, lost = lost + 1, lease_until = NULL, "
                "error = ?, finished_at = ? WHERE run = ? AND key = ? AND attempts = ? "
                "AND state = 'running'",
                (
                    "failed" if dead else "pending",
                    f"{MAX_LOST} attempts lost ({why})" if dead else None,
                    now if dead else None,
                    name,
                    key,
                    attempt,
                ),
            )
            cur.execute(
                "UPDATE batch_attempts SET outcome = 'lost', ended_at = ?, error = ? "
                "WHERE run = ? AND key = ? AND attempt = ?",
                (now, why, name, key, attempt),
            )
        return len(rows)

    def release_worker(self, name: str, worker: str, why: str) -> int:
        """Declare lost every attempt ``worker`` is running in run ``name`` (it died); their
        rows go back to ``pending``. Returns how many."""
        with self.transaction() as cur:
            cur.execute(
                "SELECT key, attempts, lost FROM batch_rows WHERE run = ? AND state = 'running' "
                "AND worker = ?",
                (name, worker),
            )
            return self._lose(cur, name, cur.fetchall(), why)

    def release_expired(self, name: str, now: float | None = None) -> int:
        """Declare lost every running attempt of run ``name`` whose lease ran out."""
        now = time.time() if now is None else now
        with self.transaction() as cur:
            cur.execute(
                "SELECT key, attempts, lost FROM batch_rows WHERE run = ? AND state = 'running' "
                "AND lease_until < ?",
                (name, now),
            )
            return self._lose(cur, name, cur.fetchall(), "its lease ran out")

    def running_workers(self, name: str) -> list[str]:
        """The workers with a running row in run ``name``."""
        with self.transaction(write=False) as cur:
            cur.execute(
                "SELECT DISTINCT worker FROM batch_rows WHERE run = ? AND state = 'running'",
                (name,),
            )
            return [str(r[0]) for r in cur.fetchall()]
