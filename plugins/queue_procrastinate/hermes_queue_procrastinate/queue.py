"""The gateway's turns as procrastinate jobs (a :class:`~hermes_gateway.turn_queue.TurnQueue`).

- A turn is a job of the task ``hermes.turn`` on the queue ``hermes-turns`` whose ``lock`` is
  its session: procrastinate starts no job while an earlier one with the same lock waits or
  runs, so a session's turns run one at a time, in order, on any worker.
- Workers wake on procrastinate's LISTEN/NOTIFY when a job is queued, and send a heartbeat every
  :data:`HEARTBEAT` seconds; every worker looks each second for jobs of workers silent for
  :data:`STALLED` seconds (killed, or their machine gone) and queues them again, so another
  worker runs them (:meth:`ProcrastinateTurnQueue._retry_stalled`).
- ``/stop`` and ``busy: interrupt`` cancel a session's waiting jobs and ask procrastinate to
  abort its running one, which reaches the worker by NOTIFY: the job's coroutine is cancelled
  and sets the turn's cancel event.
- A turn's text and outcome travel back as rows of ``hermes_turn_events`` (:mod:`.events`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hermes_gateway.turn_queue import (
    TurnRequest,
    TurnRunner,
    TurnState,
    outcome_as_dict,
    outcome_from_dict,
)

from hermes_hookspecs import AgentOutcome, HermesError

from . import events
from .routes import PostgresRoutes
from .schema import ensure_schema

TASK = "hermes.turn"
QUEUE = "hermes-turns"
HEARTBEAT = 1.0
"""Seconds between a worker's heartbeats."""
STALLED = 5.0
"""Seconds without a heartbeat after which a worker's running jobs are queued again."""
FLUSH = 0.05
"""Seconds a worker gathers streamed text before it sends it."""
POLL = 1.0
"""Seconds a front end waits for a signal before it reads a turn's events anyway."""
ACTIVE = """
SELECT id, status::text AS status, args FROM procrastinate_jobs
WHERE lock = %(lock)s AND queue_name = %(queue)s AND status IN ('todo', 'doing')
ORDER BY id
"""


def _lock(session_id: str) -> str:
    return f"hermes-session:{session_id}"


class ProcrastinateTurnQueue:
    """The turns of every front end and worker using the database at ``url``.

    :param url: a ``postgresql://`` URL.
    :param options: ``gateway.queue`` (``pool_size``: connections per process, 10).
    :param log: receives one line per notable event.
    """

    def __init__(self, url: str, options: Mapping[str, Any], log: Callable[[str], None]) -> None:
        import procrastinate

        self.url = url
        self.log = log
        size = options.get("pool_size", 10)
        if isinstance(size, bool) or not isinstance(size, int) or size < 2:
            raise HermesError(f"config gateway.queue.pool_size must be 2 or more, not {size!r}")
        self.app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=size)
        )
        self.app.task(name=TASK, queue=QUEUE, pass_context=True)(self._job)
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.listener = events.Listener(url, log)
        self._routes = PostgresRoutes(url)
        self._run: TurnRunner | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._opened = False

    # --- both roles ---------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect and make the tables when the database has none."""
        import psycopg

        try:
            # fail at once, in one line, where the pool would wait for its first connection
            probe = await psycopg.AsyncConnection.connect(self.url, connect_timeout=10)
            await probe.close()
            await self.app.open_async()
            if await ensure_schema(self.app, self.url):
                self.log("gateway: made the work queue's tables")
        except (psycopg.Error, OSError) as exc:
            raise HermesError(
                f"the work queue at {_where(self.url)} cannot be reached: "
                f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from None
        self._opened = True

    def routes(self) -> PostgresRoutes:
        """The conversations' sessions, in the queue's database (:mod:`.routes`)."""
        return self._routes

    async def close(self) -> None:
        """Disconnect."""
        await self.listener.stop()
        self._routes.close()
        if self._opened:
            self._opened = False
            await self.app.close_async()

    # --- the front end ------------------------------------------------------------------------

    async def submit(
        self, request: TurnRequest, busy: str, on_delta: Callable[[str], None] | None
    ) -> AgentOutcome:
        """Enqueue the turn, follow its events, return its outcome (see the protocol)."""
        await self.listener.start()
        connector = self.app.connector
        earlier = await self._active(request.session_id) if busy == "interrupt" else []
        if earlier:
            request = dataclasses.replace(request, join_unanswered=True)
        woken = self.listener.watch(request.turn_id)
        job_id: int | None = None
        try:
            job_id = await self.app.configure_task(
                TASK, lock=_lock(request.session_id), queue=QUEUE
            ).defer_async(turn=request.as_dict())
            if earlier:
                await self._stop_before(request.session_id, job_id)
            seen = 0
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), POLL)
                woken.clear()
                rows = await connector.execute_query_all_async(
                    events.READ, turn=request.turn_id, after=seen
                )
                for row in rows:
                    seen = row["seq"]
                    if row["kind"] == "text" and on_delta is not None:
                        on_delta(row["data"]["text"])
                    elif row["kind"] == "done":
                        job_id = None
                        return outcome_from_dict(row["data"])
        except asyncio.CancelledError:  # the client went away: stop the turn wherever it is
            if job_id is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._cancel(job_id, request.turn_id, request.session_id))
            raise
        finally:
            self.listener.unwatch(request.turn_id)
            if job_id is None:
                with contextlib.suppress(Exception):
                    await connector.execute_query_async(events.FORGET, turn=request.turn_id)

    async def stop(self, session_id: str) -> bool:
        """Cancel the session's waiting turns and abort its running one."""
        return await self._stop_before(session_id, None)

    async def state(self, session_id: str) -> TurnState:
        """The session's running turn (how long, on which worker) and how many wait."""
        jobs = await self._active(session_id)
        waiting = sum(1 for j in jobs if j["status"] == "todo")
        running = next((j for j in jobs if j["status"] == "doing"), None)
        if running is None:
            return TurnState(running_for=None, waiting=waiting)
        turn = running["args"]["turn"]["turn_id"]
        row = await self.app.connector.execute_query_one_async(events.STARTED, turn=turn)
        if row is None:
            return TurnState(running_for=0.0, waiting=waiting)
        since = max(0.0, time.time() - row["at"].timestamp())
        return TurnState(running_for=since, waiting=waiting, worker=row["data"].get("worker"))

    async def _active(self, session_id: str) -> list[dict[str, Any]]:
        rows = await self.app.connector.execute_query_all_async(
            ACTIVE, lock=_lock(session_id), queue=QUEUE
        )
        return list(rows)

    async def _stop_before(self, session_id: str, job_id: int | None) -> bool:
        """Stop the session's turns queued before ``job_id`` (all of them for ``None``);
        whether one was running."""
        ran = False
        for _ in range(3):  # a waiting turn may start while we look: look again
            earlier = [
                j for j in await self._active(session_id) if job_id is None or j["id"] < job_id
            ]
            if not earlier:
                break
            for job in earlier:
                turn = job["args"]["turn"]
                ran = await self._cancel(job["id"], turn["turn_id"], session_id) or ran
        return ran

    async def _cancel(self, job_id: int, turn_id: str, session_id: str) -> bool:
        """Cancel a waiting job (its front end gets an interrupted outcome) or abort a running
        one; whether it was running."""
        manager = self.app.job_manager
        if await manager.cancel_job_by_id_async(job_id):
            outcome = AgentOutcome(
                session_id=session_id,
                text="",
                status="interrupted",
                error="stopped before it started",
            )
            await events.add_next(self.app.connector, turn_id, "done", outcome_as_dict(outcome))
            return False
        return bool(await manager.cancel_job_by_id_async(job_id, abort=True))

    # --- the worker ---------------------------------------------------------------------------

    async def work(
        self, run: TurnRunner, concurrency: int, stop: Awaitable[Any], drain: float
    ) -> None:
        """Run the queued turns until ``stop`` is done, then give the running ones ``drain``
        seconds before interrupting them (their front ends get an interrupted outcome)."""
        self._run = run
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="hermes-turn")
        worker = asyncio.ensure_future(
            self.app.run_worker_async(
                queues=[QUEUE],
                name=self.name,
                concurrency=concurrency,
                install_signal_handlers=False,
                update_heartbeat_interval=HEARTBEAT,
                stalled_worker_timeout=STALLED,
                fetch_job_polling_interval=5.0,
                abort_job_polling_interval=1.0,
                delete_jobs="successful",
                shutdown_graceful_timeout=drain,
            )
        )
        reaper = asyncio.ensure_future(self._retry_stalled())
        stopping = asyncio.ensure_future(stop)
        try:
            await asyncio.wait({worker, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            reaper.cancel()
            stopping.cancel()
            worker.cancel()  # procrastinate stops taking jobs and waits for the running ones
            with contextlib.suppress(asyncio.CancelledError):
                await worker
            self._pool.shutdown(wait=False)
        if worker.done() and not worker.cancelled() and worker.exception() is not None:
            raise HermesError(f"the queue's worker failed: {worker.exception()}")

    async def _retry_stalled(self) -> None:
        """Queue again the running jobs of workers that stopped sending heartbeats."""
        manager = self.app.job_manager
        rounds = 0
        while True:
            await asyncio.sleep(1.0)
            rounds += 1
            try:
                for job in await manager.get_stalled_jobs(
                    queue=QUEUE, seconds_since_heartbeat=STALLED
                ):
                    with contextlib.suppress(Exception):  # another worker was first
                        await manager.retry_job(job)
                        self.log(f"gateway: the turn of job {job.id} stalled; queued again")
                if rounds % 600 == 0:
                    await self.app.connector.execute_query_async(events.FORGET_OLD)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.log(f"gateway: could not look for stalled turns: {exc}")

    async def _job(self, context: Any, turn: dict[str, Any]) -> None:
        """Run one turn (procrastinate's task): skip one whose outcome was already sent,
        stream its text back, send its outcome."""
        assert self._run is not None and self._pool is not None
        request = TurnRequest.from_dict(turn)
        connector = self.app.connector
        rows = await connector.execute_query_all_async(events.READ, turn=request.turn_id, after=0)
        if any(r["kind"] == "done" for r in rows):
            return  # it finished before its worker could record that: nothing to run again
        repeat = any(r["kind"] == "started" for r in rows)
        seq = max((r["seq"] for r in rows), default=0)
        seq += 1
        await events.add(
            connector,
            request.turn_id,
            seq,
            "started",
            {
                "worker": self.name,
                "attempt": context.job.attempts,
                "repeat": repeat,
                "pickup": max(0.0, time.time() - request.queued_at) if request.queued_at else None,
            },
        )
        sender = _TextSender(connector, request.turn_id, seq)
        loop = asyncio.get_running_loop()
        cancel = threading.Event()
        if repeat:
            request = dataclasses.replace(request, repeat=True)

        def delta(piece: str) -> None:
            loop.call_soon_threadsafe(sender.add, piece)

        running = loop.run_in_executor(self._pool, self._run, request, cancel, delta)
        try:
            outcome = await asyncio.shield(running)
        except asyncio.CancelledError:  # aborted (/stop, an interrupt) or the worker stops
            cancel.set()
            outcome = await running
            await sender.finish(outcome)
            raise
        await sender.finish(outcome)


class _TextSender:
    """The streamed text of one turn, sent as ``text`` events every :data:`FLUSH` seconds at
    most, then the ``done`` event."""

    def __init__(self, connector: Any, turn_id: str, seq: int) -> None:
        self.connector = connector
        self.turn_id = turn_id
        self.seq = seq
        self.pending: list[str] = []
        self._task: asyncio.Task[None] | None = None

    def add(self, piece: str) -> None:
        """Queue a piece of text (on the event loop)."""
        self.pending.append(piece)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._flush_soon())

    async def _flush_soon(self) -> None:
        while self.pending:
            await asyncio.sleep(FLUSH)
            await self._flush()

    async def _flush(self) -> None:
        if self.pending:
            text, self.pending = "".join(self.pending), []
            self.seq += 1
            await events.add(self.connector, self.turn_id, self.seq, "text", {"text": text})

    async def finish(self, outcome: AgentOutcome) -> None:
        """Send what text is left, then the outcome."""
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        await self._flush()
        self.seq += 1
        await events.add(self.connector, self.turn_id, self.seq, "done", outcome_as_dict(outcome))


def _where(url: str) -> str:
    """``url`` without its password."""
    head, sep, tail = url.partition("@")
    if not sep:
        return url
    scheme, _, user = head.partition("://")
    return f"{scheme}://{user.split(':', 1)[0]}@{tail}"
