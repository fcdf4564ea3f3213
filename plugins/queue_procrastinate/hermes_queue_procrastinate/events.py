"""A turn's events, from the worker that runs it to the front end that waits for it.

The worker inserts each event (``started``, ``text``, ``done``) as a row numbered in the turn
(``seq``) and signals the turn's id on :data:`~.schema.CHANNEL` in the same statement; the
front end, which LISTENs on one connection per process, reads the rows after the last one it
saw. The rows, not the signal, carry the events: they come in order, and a front end whose
connection dropped reads on from where it was, without a gap (it also reads once a second
whatever it heard, for a signal lost while it reconnected).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from .schema import CHANNEL

INSERT = """
WITH added AS (
    INSERT INTO hermes_turn_events (turn_id, seq, kind, data)
    VALUES (%(turn)s, %(seq)s, %(kind)s, %(data)s::jsonb)
    RETURNING turn_id
)
SELECT pg_notify(%(channel)s, turn_id) FROM added
"""
READ = """
SELECT seq, kind, data FROM hermes_turn_events
WHERE turn_id = %(turn)s AND seq > %(after)s ORDER BY seq
"""
LAST = "SELECT coalesce(max(seq), 0) AS seq FROM hermes_turn_events WHERE turn_id = %(turn)s"
STARTED = """
SELECT at, data FROM hermes_turn_events
WHERE turn_id = %(turn)s AND kind = 'started' ORDER BY seq DESC LIMIT 1
"""
FORGET = "DELETE FROM hermes_turn_events WHERE turn_id = %(turn)s"
FORGET_OLD = "DELETE FROM hermes_turn_events WHERE at < now() - interval '1 day'"
RECONNECT_PAUSE = 0.5
"""Seconds before a front end listens again after its connection dropped."""


async def add(connector: Any, turn_id: str, seq: int, kind: str, data: Any) -> None:
    """Record event ``seq`` of ``turn_id`` and signal it."""
    await connector.execute_query_one_async(
        INSERT, turn=turn_id, seq=seq, kind=kind, data=json.dumps(data), channel=CHANNEL
    )


async def add_next(connector: Any, turn_id: str, kind: str, data: Any) -> None:
    """Record an event after the turn's last one (for a front end closing a turn that never
    started: only one writer can be at work on it)."""
    row = await connector.execute_query_one_async(LAST, turn=turn_id)
    await add(connector, turn_id, int(row["seq"]) + 1, kind, data)


class Listener:
    """One LISTEN connection per front-end process; wakes the turns waiting for events.

    :param url: the database.
    :param log: receives one line when the connection drops.
    """

    def __init__(self, url: str, log: Callable[[str], None]) -> None:
        self.url = url
        self.log = log
        self.waiting: dict[str, asyncio.Event] = {}
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        """Start listening (returns once the first LISTEN is in place)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._listen())
            await asyncio.wait_for(self._ready.wait(), 30)

    async def stop(self) -> None:
        """Stop listening."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def watch(self, turn_id: str) -> asyncio.Event:
        """The event set whenever ``turn_id`` has something new."""
        return self.waiting.setdefault(turn_id, asyncio.Event())

    def unwatch(self, turn_id: str) -> None:
        """Stop waking ``turn_id``."""
        self.waiting.pop(turn_id, None)

    async def _listen(self) -> None:
        import psycopg

        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self._ready.set()
                    for event in self.waiting.values():  # read what came while away
                        event.set()
                    async for note in conn.notifies():
                        woken = self.waiting.get(note.payload)
                        if woken is not None:
                            woken.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.log(f"gateway: the queue's event connection dropped ({type(exc).__name__})")
                await asyncio.sleep(RECONNECT_PAUSE)
