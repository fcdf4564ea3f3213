"""The updates of one turn, handed from the turn's worker thread to the connection in order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .updates import TurnUpdates, Update, message_chunk, thought_chunk

log = logging.getLogger("hermes.acp")

_DONE = object()


class TurnStream:
    """Queues the updates a turn makes (from any thread) and sends them one at a time."""

    def __init__(
        self,
        send: Callable[[str, Any], Awaitable[None]],
        session_id: str,
        cwd: str,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.send = send
        """``send(session_id, update)``: one update to the client, in the connection's
        protocol version."""
        self.session_id = session_id
        self.loop = loop
        self.updates = TurnUpdates(cwd, session_id)
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.pump = loop.create_task(self._pump())

    def _put(self, update: Update) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, update)

    def text(self, text: str) -> None:
        """A piece of the answer (the runner's ``on_text_delta``)."""
        if text:
            self._put(message_chunk(text))

    def thought(self, text: str) -> None:
        """A line about the turn's progress, shown as the agent's thought."""
        self._put(thought_chunk(text))

    def event(self, name: str, data: Mapping[str, Any]) -> None:
        """A progress event of the turn (the runner's ``on_event``)."""
        for update in self.updates.translate(name, data):
            self._put(update)

    async def _pump(self) -> None:
        while True:
            update = await self.queue.get()
            try:
                if update is _DONE:
                    return
                await self.send(self.session_id, update)
            except Exception as exc:  # the client went away: the turn goes on, unseen
                log.warning("an update could not be sent: %s", exc)
            finally:
                self.queue.task_done()

    async def flush(self) -> None:
        """Wait until every update queued so far has been sent."""
        await self.queue.join()

    async def close(self) -> None:
        """Send what is queued and stop."""
        self.queue.put_nowait(_DONE)
        await self.pump
