"""The run table: every row of every batch run, its state, its attempts and its output.

It is the one truth about a run. A row is taken (``claim``) in one transaction that moves it
to ``running`` and opens attempt N with a new session id and a lease; the attempt's result is
written (``finish``) in one transaction that holds the output too, and only while the row is
still running attempt N. An attempt whose worker died (or whose lease ran out) is ``lost``:
its row goes back to ``pending`` and a late ``finish`` of it changes nothing. So a row is
completed exactly once, and nothing of a half-finished attempt reaches an output.

:class:`RunTable` holds the SQL; :mod:`.table_sqlite` and :mod:`.table_postgres` give it a
connection.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from hermes_hookspecs import HermesError

from .dataset import Row
from .schema import ROW_COLUMNS, Claim, Counts, RowRecord, RunInfo

MAX_LOST = 3
"""Attempts of one row that may be lost (its worker died) before the row is ``failed``: a row
that kills its worker every time must not do so for ever."""

INSERT_BATCH = 500
"""Rows written per transaction while a dataset is read in."""


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


class RunTable:
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

    # --- runs --------------------------------------------------------------------------------

    def create_run(self, name: str, dataset: str, digest: str, settings: dict[str, Any]) -> None:
        """Record a new run (state ``loading``); a :class:`HermesError` when ``name`` exists."""
        with self.transaction() as cur:
            cur.execute("SELECT 1 FROM batch_runs WHERE name = ?", (name,))
            if cur.fetchone() is not None:
                raise HermesError(
                    f"a batch run named {name!r} exists already: `hermes batch resume {name}` "
                    "continues it, or choose another --name"
                )
            cur.execute(
                "INSERT INTO batch_runs (name, dataset, dataset_hash, settings, created_at, "
                "state) VALUES (?, ?, ?, ?, ?, 'loading')",
                (name, dataset, digest, json.dumps(settings, sort_keys=True), time.time()),
            )

    def get_run(self, name: str) -> RunInfo | None:
        """The run named ``name``, or ``None``."""
        with self.transaction(write=False) as cur:
            cur.execute("SELECT * FROM batch_runs WHERE name = ?", (name,))
            row = cur.fetchone()
        return RunInfo.from_row(tuple(row)) if row is not None else None

    def run(self, name: str) -> RunInfo:
        """The run named ``name``; a one-line :class:`HermesError` when there is none."""
        found = self.get_run(name)
        if found is None:
            raise HermesError(f"no batch run named {name!r} in {self.where}")
        return found

    def list_runs(self) -> list[RunInfo]:
        """Every run, oldest first."""
        with self.transaction(write=False) as cur:
            cur.execute("SELECT * FROM batch_runs ORDER BY created_at")
            return [RunInfo.from_row(tuple(r)) for r in cur.fetchall()]

    def set_run(self, name: str, **fields: Any) -> None:
        """Change the given columns of run ``name``."""
        names = sorted(fields)
        with self.transaction() as cur:
            cur.execute(
                f"UPDATE batch_runs SET {', '.join(f'{n} = ?' for n in names)} WHERE name = ?",
                (*(fields[n] for n in names), name),
            )

    def take_coordinator(self, name: str, who: str, alive: Any) -> str | None:
        """Make ``who`` the coordinator of run ``name`` unless ``alive(coordinator,
        heartbeat_at)`` says the present one still runs; ``None`` when taken, else the
        present coordinator."""
        with self.transaction() as cur:
            cur.execute("SELECT coordinator, heartbeat_at FROM batch_runs WHERE name = ?", (name,))
            present, beat = cur.fetchone()
            if present and present != who and alive(present, beat):
                return str(present)
            cur.execute(
                "UPDATE batch_runs SET coordinator = ?, heartbeat_at = ? WHERE name = ?",
                (who, time.time(), name),
            )
            return None

    def add_rows(self, name: str, rows: Iterable[Row]) -> int:
        """Add ``rows`` to run ``name`` as ``pending`` (rows it has already are left as they
        are: reading a dataset again after an interrupted load adds only what is missing);
        returns how many rows were read."""
        sql = (
            "INSERT INTO batch_rows (run, key, line, data) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (run, key) DO NOTHING"
        )
        count = 0
        chunk: list[tuple[str, str, int, str]] = []
        for row in rows:
            chunk.append((name, row.key, row.line, json.dumps(row.data, ensure_ascii=False)))
            count += 1
            if len(chunk) >= INSERT_BATCH:
                with self.transaction() as cur:
                    cur.executemany(sql, chunk)
                chunk = []
        if chunk:
            with self.transaction() as cur:
                cur.executemany(sql, chunk)
        return count

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
    ) -> bool:
        """Record how attempt ``claim`` ended: the row becomes ``state`` (``completed``,
        ``failed`` or ``discarded``) with its output, or, with ``retry``, ``pending`` again
        (a failed attempt to be tried once more). ``False``, changing nothing, when the row is
        no longer this attempt's."""
        tokens_in, tokens_out, cost = usage
        now = time.time()
        row_state = "pending" if retry else state
        outcome = "retried" if retry else state
        with self.transaction() as cur:
            cur.execute(
                "UPDATE batch_rows SET state = ?, lease_until = NULL, seed = ?, toolsets = ?, "
                "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                "cost_usd = cost_usd + ?, duration = ?, error = ?, discard_reason = ?, "
                "output = ?, finished_at = ? "
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

    def requeue(self, name: str, states: Sequence[str]) -> int:
        """Put the rows of run ``name`` in ``states`` (``failed``, ``discarded``) back to
        ``pending``, their output cleared; returns how many."""
        if not states:
            return 0
        marks = ", ".join("?" for _ in states)
        with self.transaction() as cur:
            cur.execute(
                "UPDATE batch_rows SET state = 'pending', output = NULL, error = NULL, "
                "discard_reason = NULL, finished_at = NULL, lost = 0 "
                f"WHERE run = ? AND state IN ({marks})",
                (name, *states),
            )
            return int(cur.rowcount)

    def counts(self, name: str) -> Counts:
        """The rows of run ``name`` by state, and the tokens and cost of their attempts."""
        counts = Counts()
        with self.transaction(write=False) as cur:
            cur.execute(
                "SELECT state, COUNT(*), COALESCE(SUM(input_tokens), 0), "
                "COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_usd), 0), "
                "COALESCE(SUM(lost), 0) FROM batch_rows WHERE run = ? GROUP BY state",
                (name,),
            )
            for state, n, tin, tout, cost, lost in cur.fetchall():
                counts.states[str(state)] = int(n)
                counts.input_tokens += int(tin)
                counts.output_tokens += int(tout)
                counts.cost_usd += float(cost)
                counts.lost_attempts += int(lost)
        return counts

    def rows(
        self, name: str, states: Sequence[str] | None = None, batch: int = 200
    ) -> Iterator[RowRecord]:
        """The rows of run ``name`` (in ``states`` when given) in dataset order, read
        ``batch`` at a time so that a large run is never all in memory."""
        after = -1
        where = ""
        if states:
            where = f" AND state IN ({', '.join('?' for _ in states)})"
        while True:
            with self.transaction(write=False) as cur:
                cur.execute(
                    f"SELECT {ROW_COLUMNS} FROM batch_rows WHERE run = ? AND line > ?{where} "
                    f"ORDER BY line LIMIT {int(batch)}",
                    (name, after, *(states or ())),
                )
                found = [RowRecord.from_row(tuple(r)) for r in cur.fetchall()]
            yield from found
            if len(found) < batch:
                return
            after = found[-1].line

    def attempts(self, name: str, key: str) -> list[dict[str, Any]]:
        """The attempts of row ``key`` of run ``name``, first first."""
        with self.transaction(write=False) as cur:
            cur.execute(
                "SELECT attempt, session_id, worker, started_at, ended_at, outcome, error, "
                "input_tokens, output_tokens, cost_usd FROM batch_attempts "
                "WHERE run = ? AND key = ? ORDER BY attempt",
                (name, key),
            )
            names = (
                "attempt",
                "session_id",
                "worker",
                "started_at",
                "ended_at",
                "outcome",
                "error",
                "input_tokens",
                "output_tokens",
                "cost_usd",
            )
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
