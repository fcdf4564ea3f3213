"""The run table's schema and the records read from it: one SQL text for SQLite and
PostgreSQL (``?`` placeholders; the PostgreSQL table turns them into ``%s``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

STATES = ("pending", "running", "completed", "failed", "discarded")
"""A row's states: ``pending → running → completed | failed | discarded``."""

FINAL_STATES = ("completed", "failed", "discarded")
"""The states a row stays in (until ``resume --retry-failed`` / ``--retry-discarded``)."""

ATTEMPT_OUTCOMES = ("running", "completed", "failed", "discarded", "retried", "lost")
"""How an attempt ended: ``retried`` is a failed attempt of a row that was tried again,
``lost`` one whose worker died or went silent (its session is never part of any output)."""

TABLES = (
    """CREATE TABLE IF NOT EXISTS batch_runs (
        name TEXT PRIMARY KEY,
        dataset TEXT NOT NULL,
        dataset_hash TEXT NOT NULL,
        settings TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        state TEXT NOT NULL,
        coordinator TEXT,
        heartbeat_at DOUBLE PRECISION,
        stop_reason TEXT,
        total_rows INTEGER NOT NULL DEFAULT 0,
        spent_usd DOUBLE PRECISION NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS batch_rows (
        run TEXT NOT NULL,
        key TEXT NOT NULL,
        line INTEGER NOT NULL,
        data TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        lost INTEGER NOT NULL DEFAULT 0,
        worker TEXT,
        session_id TEXT,
        lease_until DOUBLE PRECISION,
        seed BIGINT,
        toolsets TEXT,
        input_tokens BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0,
        cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
        duration DOUBLE PRECISION NOT NULL DEFAULT 0,
        error TEXT,
        discard_reason TEXT,
        output TEXT,
        finished_at DOUBLE PRECISION,
        image TEXT,
        PRIMARY KEY (run, key)
    )""",
    "CREATE INDEX IF NOT EXISTS batch_rows_state ON batch_rows (run, state, line)",
    """CREATE TABLE IF NOT EXISTS batch_attempts (
        run TEXT NOT NULL,
        key TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        worker TEXT NOT NULL,
        started_at DOUBLE PRECISION NOT NULL,
        ended_at DOUBLE PRECISION,
        outcome TEXT NOT NULL DEFAULT 'running',
        error TEXT,
        input_tokens BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0,
        cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
        PRIMARY KEY (run, key, attempt)
    )""",
    """CREATE TABLE IF NOT EXISTS batch_rates (
        run TEXT NOT NULL,
        provider TEXT NOT NULL,
        next_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (run, provider)
    )""",
)


ADDED_COLUMNS = (("batch_rows", "image", "TEXT"),)
"""Columns added since the tables were first made: ``(table, column, type)``, added to an
older table when it is opened."""


@dataclass
class RunInfo:
    """A run as the table holds it.

    :param name: the run's name.
    :param dataset: the dataset's path, as given when the run was made.
    :param dataset_hash: the dataset's SHA-256 then (a changed file is refused on resume).
    :param settings: the run's settings (model, toolsets, sampling, seed, limits, executor).
    :param state: ``loading`` (rows being read in), ``ready``, ``running``, ``finished``,
        ``stopped`` (the budget ran out, or the person interrupted it).
    :param coordinator: ``host:pid`` of the coordinator that runs it, while it runs.
    :param heartbeat_at: when that coordinator last said it was alive.
    """

    name: str
    dataset: str
    dataset_hash: str
    settings: dict[str, Any]
    created_at: float
    state: str
    coordinator: str | None = None
    heartbeat_at: float | None = None
    stop_reason: str | None = None
    total_rows: int = 0
    spent_usd: float = 0.0

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> RunInfo:
        """The run of a ``SELECT *`` row of ``batch_runs``."""
        name, dataset, digest, settings, created, state, coord, beat, reason, total, spent = row
        return cls(
            name,
            dataset,
            digest,
            json.loads(settings),
            created,
            state,
            coord,
            beat,
            reason,
            total,
            spent,
        )


@dataclass
class Claim:
    """A row a worker took: run attempt ``attempt`` of it, in session ``session_id``.

    A worker's writes about the row name the attempt: once the row was given to another
    attempt (this one was declared lost) they change nothing.
    """

    run: str
    key: str
    line: int
    attempt: int
    session_id: str
    data: dict[str, Any]


@dataclass
class Counts:
    """Where a run stands: rows by state and what the finished attempts used."""

    states: dict[str, int] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    lost_attempts: int = 0

    @property
    def total(self) -> int:
        """How many rows the run has."""
        return sum(self.states.values())

    def __getitem__(self, state: str) -> int:
        return self.states.get(state, 0)


ROW_COLUMNS = (
    "key, line, data, state, attempts, lost, worker, session_id, seed, toolsets, input_tokens, "
    "output_tokens, cost_usd, duration, error, discard_reason, output, finished_at, image"
)


@dataclass
class RowRecord:
    """One row of the run table (``hermes batch status --rows``, export)."""

    key: str
    line: int
    data: dict[str, Any]
    state: str
    attempts: int
    lost: int
    worker: str | None
    session_id: str | None
    seed: int | None
    toolsets: list[str] | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    duration: float
    error: str | None
    discard_reason: str | None
    output: dict[str, Any] | None
    finished_at: float | None
    image: str | None = None
    """The Docker image the row's commands ran in (``None``: the configured backend)."""

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> RowRecord:
        """The record of a row selected with :data:`ROW_COLUMNS`."""
        values = list(row)
        values[2] = json.loads(values[2])
        values[9] = json.loads(values[9]) if values[9] else None
        values[16] = json.loads(values[16]) if values[16] else None
        return cls(*values)
