"""Rows as jobs of the team set-up's work queue (``--executor queue``): the procrastinate queue
in PostgreSQL the gateway's turns go through (docs/team.md), so that a gateway and batch runs
share one engine and one database.

The coordinator claims a row in the run table and queues it as a job of the task
``hermes.batch_row`` on the queue ``hermes-batch`` (``{run, key, attempt}``), keeping at most
``--workers`` rows in flight. ``hermes batch queue-worker`` processes, on any machine whose
home names the same database, take the jobs and run the rows they name; a job whose row is no
longer running that attempt (it was declared lost, or finished) does nothing. The run table
stays the truth: while a row's job waits in the queue the coordinator keeps its lease; once a
worker runs it the worker does, and a worker that dies loses its lease (or, on the
coordinator's machine, is found gone by its pid), so its row goes back to pending and is queued
again. When the coordinator stops, the jobs still waiting are cancelled.

procrastinate and psycopg are imported only here, when such a run (or worker) starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import AgentRunner, HermesError, SessionStore

from .local import HEARTBEAT_SECONDS, release_dead_workers
from .opening import store_url
from .schema import Claim, Counts, RunInfo
from .table import RunTable
from .worker import stop_reason, worker_id

TASK = "hermes.batch_row"
QUEUE = "hermes-batch"
POLL_SECONDS = 0.25
INSTALL_HINT = 'pip install "hermes-batch[queue]"'
JOB_STATES = "SELECT id, status::text AS status FROM procrastinate_jobs WHERE id = ANY(%(ids)s)"


def queue_url(config: Mapping[str, Any]) -> str:
    """The work queue's database: ``gateway.queue.url``, else ``HERMES_QUEUE_URL``, else the
    store's (as the gateway finds it). The run table must be in PostgreSQL too (``store.url``):
    the queue's workers on other machines record the rows there."""
    store = store_url(config) or ""
    if not store.partition(":")[0].lower().startswith("postgres"):
        raise HermesError(
            "the queue executor needs the run table in PostgreSQL, shared by its workers: "
            "set store.url to a postgresql:// URL"
        )
    gateway = config.get("gateway")
    queue = gateway.get("queue") if isinstance(gateway, Mapping) else None
    url = queue.get("url") if isinstance(queue, Mapping) else None
    return str(url or os.environ.get("HERMES_QUEUE_URL", "").strip() or store)


async def _open(url: str, task: Callable[..., Any] | None = None) -> Any:
    """procrastinate's app on the queue at ``url``, open, its tables made when missing."""
    try:
        import procrastinate
        from hermes_queue_procrastinate.schema import ensure_schema
    except ImportError:
        raise HermesError(
            f"the queue executor needs the team's work queue: {INSTALL_HINT}"
        ) from None
    import psycopg

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=4)
    )
    if task is not None:
        app.task(name=TASK, queue=QUEUE)(task)
    try:
        await app.open_async()
        await ensure_schema(app, url)
    except (psycopg.Error, OSError) as exc:
        where = url.split("@")[-1]
        raise HermesError(f"the work queue at {where} cannot be reached: {exc}") from None
    return app


class _Jobs:
    """The jobs of one run in flight: job id → the claim it carries."""

    def __init__(self, app: Any, table: RunTable, name: str) -> None:
        self.app, self.table, self.name = app, table, name
        self.inflight: dict[int, Claim] = {}

    async def queue(self, claim: Claim) -> None:
        """Queue the claimed row as a job."""
        job = await self.app.configure_task(TASK, queue=QUEUE).defer_async(
            run=claim.run, key=claim.key, attempt=claim.attempt
        )
        self.inflight[int(job)] = claim

    async def check(self, lease: float) -> None:
        """Keep the lease of rows whose job waits; forget jobs whose attempt ended; declare
        lost the attempt of a job that ended without recording its row."""
        if not self.inflight:
            return
        rows = await self.app.connector.execute_query_all_async(JOB_STATES, ids=list(self.inflight))
        states = {int(r["id"]): str(r["status"]) for r in rows}
        for job, claim in list(self.inflight.items()):
            state = states.get(job, "gone")
            if state == "todo":
                if not self.table.renew(claim, lease):
                    await self._cancel(job)
                    del self.inflight[job]
            elif state == "doing":
                if self.table.claimed(claim.run, claim.key, claim.attempt) is None:
                    del self.inflight[job]  # finished, or lost with its worker
            else:  # succeeded, failed, cancelled, aborted, or deleted
                self.table.release(claim, f"its queue job ended ({state})")
                del self.inflight[job]

    async def _cancel(self, job: int) -> None:
        with contextlib.suppress(Exception):
            await self.app.job_manager.cancel_job_by_id_async(job)

    async def cancel_waiting(self) -> None:
        """Cancel the jobs that wait (their rows' leases then run out)."""
        for job in list(self.inflight):
            await self._cancel(job)


def coordinate_queue(
    table: RunTable,
    name: str,
    config: Mapping[str, Any],
    count: int,
    *,
    on_progress: Callable[[Counts, RunInfo], None] | None = None,
    poll: float = POLL_SECONDS,
) -> Counts:
    """Queue the pending rows of run ``name`` as jobs, at most ``count`` in flight, until none
    is left (or the run stops); returns where the run stands at the end."""
    url = queue_url(config)
    return asyncio.run(_coordinate(table, name, url, count, on_progress, poll))


async def _coordinate(
    table: RunTable,
    name: str,
    url: str,
    count: int,
    on_progress: Callable[[Counts, RunInfo], None] | None,
    poll: float,
) -> Counts:
    app = await _open(url)
    jobs = _Jobs(app, table, name)
    me = f"queue:{socket.gethostname()}:{os.getpid()}"
    beat = 0.0
    try:
        while True:
            if time.monotonic() - beat > HEARTBEAT_SECONDS:
                table.set_run(name, heartbeat_at=time.time())
                beat = time.monotonic()
            table.release_expired(name)
            release_dead_workers(table, name)
            run = table.run(name)
            lease = float(run.settings.get("lease_seconds") or 60)
            await jobs.check(lease)
            counts = table.counts(name)
            if run.state == "running" and (reason := stop_reason(table, run, counts)):
                table.set_run(name, state="stopped", stop_reason=reason)
                run = table.run(name)
            if run.state == "running":
                while len(jobs.inflight) < count:
                    claim = table.claim(name, me, lease)
                    if claim is None:
                        break
                    await jobs.queue(claim)
                counts = table.counts(name)
            if on_progress is not None:
                on_progress(counts, run)
            if not jobs.inflight and counts["running"] == 0:
                if run.state != "running" or counts["pending"] == 0:
                    return counts
            await asyncio.sleep(poll)
    finally:
        await jobs.cancel_waiting()
        await app.close_async()


class QueueWorker:
    """Runs the rows the queue's jobs name, one at a time, with this home's runner."""

    def __init__(
        self,
        *,
        table: RunTable,
        runner: AgentRunner,
        store: SessionStore,
        home: Path,
        config: Mapping[str, Any],
        registered: Mapping[str, Any],
    ) -> None:
        self.table, self.runner, self.store = table, runner, store
        self.home, self.config, self.registered = home, config, registered

    def run_one(self, run: str, key: str, attempt: int) -> str:
        """Run attempt ``attempt`` of row ``key`` of run ``run`` if it is still that
        attempt's; returns the row's new state (``lost`` when it was not)."""
        from .filters import chosen_filters
        from .opening import run_dir
        from .ratelimit import RateLimiter, activate
        from .rowrun import run_row

        claim = self.table.claimed(run, key, attempt)
        if claim is None or not self.table.adopt(claim, worker_id()):
            return "lost"
        settings = self.table.run(run).settings
        limits = settings.get("rate_limits")
        activate(RateLimiter(self.table, run, limits) if limits else None)
        result = run_row(
            runner=self.runner,
            store=self.store,
            table=self.table,
            claim=claim,
            settings=settings,
            run_dir=run_dir(self.home, run),
            filters=chosen_filters(settings.get("filters") or [], self.registered),
            config=self.config,
        )
        return result.state

    def serve(self) -> None:
        """Take jobs of the queue until stopped (SIGINT or SIGTERM end it after the row in
        hand)."""
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        async def job(run: str, key: str, attempt: int) -> str:
            return await asyncio.to_thread(self.run_one, run, key, int(attempt))

        app = await _open(queue_url(self.config), job)
        try:
            await app.run_worker_async(
                queues=[QUEUE], concurrency=1, wait=True, install_signal_handlers=True
            )
        finally:
            await app.close_async()
