"""The run table: every row of every batch run, its state, its attempts and its output.

It is the one truth about a run. A row is taken (``claim``) in one transaction that moves it
to ``running`` and opens attempt N with a new session id and a lease; the attempt's result is
written (``finish``) in one transaction that holds the output too, and only while the row is
still running attempt N. An attempt whose worker died (or whose lease ran out) is ``lost``:
its row goes back to ``pending`` and a late ``finish`` of it changes nothing. So a row is
completed exactly once, and nothing of a half-finished attempt reaches an output.

:class:`RunTable` holds the SQL (the attempts' part in :mod:`.attempts`);
:mod:`.table_sqlite` and :mod:`.table_postgres` give it a connection.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from hermes_hookspecs import HermesError

from .attempts import MAX_LOST, AttemptTable, Cursor
from .dataset import Row
from .schema import ROW_COLUMNS, Counts, RowRecord, RunInfo

__all__ = ["MAX_LOST", "Cursor", "RunTable"]

INSERT_BATCH = 500
"""Rows written per transaction while a dataset is read in."""

EARLY_FAILURES = 3
"""Rows failing alike, with none completed, after which a run stops."""


class RunTable(AttemptTable):
    """The batch runs of one store; subclasses open the connection."""

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

    def delete_run(self, name: str) -> None:
        """Remove run ``name``: its rows, attempts and outputs."""
        with self.transaction() as cur:
            for table in ("batch_attempts", "batch_rows", "batch_rates"):
                cur.execute(f"DELETE FROM {table} WHERE run = ?", (name,))
            cur.execute("DELETE FROM batch_runs WHERE name = ?", (name,))

    def update_settings(self, name: str, **changes: Any) -> dict[str, Any]:
        """Change settings of run ``name`` (``budget_usd`` on resume); returns them all."""
        with self.transaction() as cur:
            cur.execute("SELECT settings FROM batch_runs WHERE name = ?", (name,))
            settings: dict[str, Any] = {**json.loads(cur.fetchone()[0]), **changes}
            cur.execute(
                "UPDATE batch_runs SET settings = ? WHERE name = ?",
                (json.dumps(settings, sort_keys=True), name),
            )
        return settings

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
        count = 0
        chunk: list[tuple[str, str, int, str]] = []
        for row in rows:
            chunk.append((name, row.key, row.line, json.dumps(row.data, ensure_ascii=False)))
            count += 1
            if len(chunk) >= INSERT_BATCH:
                self._insert(name, chunk)
                chunk = []
        if chunk:
            self._insert(name, chunk)
        return count

    def _insert(self, name: str, chunk: list[tuple[str, str, int, str]]) -> None:
        """Insert ``chunk``; a :class:`HermesError` when an id is already another line's."""
        lines: dict[str, int] = {}
        for _run, key, line, _data in chunk:
            if lines.setdefault(key, line) != line:
                raise HermesError(f"line {line}: the id {key!r} is used by line {lines[key]}")
        with self.transaction() as cur:
            marks = ", ".join("?" for _ in lines)
            cur.execute(
                f"SELECT key, line FROM batch_rows WHERE run = ? AND key IN ({marks})",
                (name, *lines),
            )
            for key, line in cur.fetchall():
                if line != lines[key]:
                    raise HermesError(f"line {lines[key]}: the id {key!r} is used by line {line}")
            cur.executemany(
                "INSERT INTO batch_rows (run, key, line, data) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (run, key) DO NOTHING",
                chunk,
            )

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

    def take_slot(self, name: str, provider: str, interval: float) -> float:
        """The next start time of a call to ``provider`` in run ``name`` (the calls spaced
        ``interval`` seconds apart); the slot after it is kept for the next caller."""
        now = time.time()
        with self.transaction() as cur:
            cur.execute(
                "SELECT next_at FROM batch_rates WHERE run = ? AND provider = ?", (name, provider)
            )
            found = cur.fetchone()
            start = max(now, float(found[0])) if found else now
            cur.execute(
                "INSERT INTO batch_rates (run, provider, next_at) VALUES (?, ?, ?) "
                "ON CONFLICT (run, provider) DO UPDATE SET next_at = excluded.next_at",
                (name, provider, start + interval),
            )
        return start

    def early_failure(
        self, name: str, counts: Counts, threshold: int = EARLY_FAILURES
    ) -> str | None:
        """The one error every failed row of run ``name`` ended with, when ``threshold`` rows
        or more failed and none got further (a wrong model name or toolset fails every row
        alike: a run stops rather than fail a dataset's every row); else ``None``."""
        if counts["completed"] or counts["discarded"] or counts["failed"] < threshold:
            return None
        with self.transaction(write=False) as cur:
            cur.execute(
                "SELECT DISTINCT error FROM batch_rows WHERE run = ? AND state = 'failed' LIMIT 2",
                (name,),
            )
            errors = [r[0] for r in cur.fetchall()]
        return str(errors[0]) if len(errors) == 1 and errors[0] else None

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
