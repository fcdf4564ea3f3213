"""The gateway: routes messages from every platform to agent sessions, one turn at a time per
session, and sends the answers back (implements ``hermes_hookspecs.Gateway``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_hookspecs import (
    AgentOutcome,
    AgentRunner,
    AgentTask,
    LockingSessionStore,
    SessionStore,
)

from . import memory
from .people import guest_id, is_guest
from .platforms import InboundMessage, PlatformAdapter
from .records import read_record, remember_ids
from .routes import Routes, route_key
from .session_locks import SessionLocks
from .settings import GatewaySettings
from .team import NOT_FOR_GATEWAY, describe, queued_turn
from .turn_queue import TurnQueue
from .workspaces import PEOPLE_WORKSPACES, workspace_name

SEND_WAIT = 30.0
"""Seconds a streamed answer's last send or edit may take once the turn is over."""
COMMANDS = ("new", "reset", "stop", "status")
"""The ``/commands`` a chat message may be; any other text goes to the agent."""


class GatewayClosed(RuntimeError):
    """The gateway is shutting down and takes no new message."""


class SessionRefused(PermissionError):
    """A message names a session that is another person's; nothing runs."""


def new_session_id() -> str:
    """A fresh session id in the host's format."""
    return f"session_{uuid.uuid4().hex[:16]}"


def command_of(text: str) -> str | None:
    """The gateway command ``text`` is (``/new``, ``/stop@botname`` ...), or ``None``."""
    word = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    if not word.startswith("/"):
        return None
    name = word[1:].split("@", 1)[0].lower()
    return name if name in COMMANDS else None


def prompt_of(message: InboundMessage) -> str:
    """The turn's prompt: the message text, then one line per attachment."""
    lines = [message.text] if message.text else []
    for item in message.attachments:
        where = item.path or item.url or "not downloaded"
        details = ", ".join(x for x in (item.name, item.mime_type) if x)
        lines.append(f"[attachment: {item.kind}{f' ({details})' if details else ''}: {where}]")
    return "\n".join(lines)


@dataclass
class _Lane:
    """The turns of one session: one runs at a time, the others wait in order."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    cancel: threading.Event | None = None
    generation: int = 0
    waiting: int = 0
    started: float | None = None


class GatewayCore:
    """Runs the conversations of every connected adapter.

    :param runner: runs each turn (``CommandContext.agent_runner()``).
    :param routes: which session each conversation is in.
    :param settings: the ``gateway`` configuration.
    :param log: receives one line per notable event.
    :param workspace_root: where each user's workspace folder is made (``gateway.workspaces:
        per-user``); ``None`` leaves ``terminal.cwd`` as configured.
    :param session_locks: given when other processes may run turns of the same sessions
        (``gateway.workers`` above 1, or a store other gateways may share): each turn then
        holds its session's lock, the store's own when it is a
        :class:`~hermes_hookspecs.LockingSessionStore`, else one of these lock files (which
        serve one machine only); ``None`` for a gateway alone with its sessions.
    :param session_store: gives the home's session store (called once, on first need, in the
        process that serves), to refuse a message naming another person's session before
        anything runs; ``None`` leaves that to the runner (the turn then fails).
    :param home: the hermes home, where what the gateway learns of each person (the platform
        ids they wrote from, their workspace) is kept for ``hermes gateway people``.
    :param queue: the team's work queue (``gateway.queue``): each turn is then a job that a
        worker, in this process or another, runs (:mod:`hermes_gateway.team`); ``None`` runs
        the turns here.
    """

    def __init__(
        self,
        runner: AgentRunner,
        routes: Routes,
        settings: GatewaySettings,
        *,
        log: Callable[[str], None] = print,
        workspace_root: Path | None = None,
        session_locks: SessionLocks | None = None,
        session_store: Callable[[], SessionStore] | None = None,
        home: Path | None = None,
        queue: TurnQueue | None = None,
    ) -> None:
        self.runner = runner
        self.queue = queue
        self.role = "all"
        """``hermes gateway run --role``: ``all``, ``front`` or ``worker``."""
        self.people = settings.people
        self.home = home
        self._store_of = session_store
        self._store: SessionStore | None = None
        self._remembered: set[tuple[str, str, str]] = set()
        self.session_locks = session_locks
        self.routes = routes
        self.settings = settings
        self.log = log
        self.workspace_root = workspace_root
        self.adapters: dict[str, PlatformAdapter] = {}
        self.closing = False
        self._lanes: dict[str, _Lane] = {}
        self._pool = ThreadPoolExecutor(
            settings.max_concurrent_turns, thread_name_prefix="hermes-gateway"
        )
        self._turns: set[asyncio.Future[AgentOutcome]] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._first_turn_done = False

    # --- what adapters call (hermes_hookspecs.Gateway) ----------------------------------------

    async def dispatch(self, message: InboundMessage) -> None:
        """Handle a chat message: a command, or a turn whose answer goes back through the
        platform's adapter. Returns once the message is accepted."""
        person = self._admit(message)
        key = route_key(message.platform, message.chat_id, message.user_id)
        command = command_of(message.text)
        if command is not None:
            await self._command(command, message, key, person)
            return
        self._spawn(self._chat_turn(message, key, person))

    async def converse(
        self,
        message: InboundMessage,
        *,
        session_id: str | None = None,
        instructions: str | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> AgentOutcome:
        """Run one turn and return its outcome (for request/response adapters)."""
        person = self._admit(message)
        if session_id is None:
            session_id = self._routed_session(
                route_key(message.platform, message.chat_id, message.user_id), person
            )
        elif not self._owns(person, session_id):
            self.log(
                f"gateway: refused {person} on {message.platform}: session {session_id} is "
                "someone else's"
            )
            raise SessionRefused(f"session {session_id!r} belongs to someone else")
        return await self._turn(session_id, message, person, instructions, on_delta)

    # --- people, checks and routing ------------------------------------------------------------

    def person_of(self, message: InboundMessage) -> str | None:
        """The person ``message`` comes from (see :meth:`People.admit
        <hermes_gateway.people.People.admit>`); ``None``: not allowed in."""
        platform = self.settings.platforms.get(message.platform)
        if platform is None:
            return None
        if message.person is not None:  # authenticated by the adapter (a person's API key)
            return message.person if message.person in self.people.users else None
        return self.people.admit(message.platform, message.user_id, platform.allows)

    def _admit(self, message: InboundMessage) -> str:
        """The person ``message`` comes from; raises when they may not talk to the agent."""
        if self.closing:
            raise GatewayClosed("the gateway is shutting down; try again in a moment")
        person = self.person_of(message)
        if person is not None:
            return person
        if message.platform not in self.settings.platforms:
            raise PermissionError(f"platform {message.platform!r} is not configured")
        self.log(
            f"gateway: refused user {message.user_id!r} on {message.platform} "
            f"(not in gateway.platforms.{message.platform}.allowed_users nor gateway.users)"
        )
        raise PermissionError(f"user {message.user_id!r} is not allowed on {message.platform}")

    def session_store(self) -> SessionStore | None:
        """The home's session store (opened on first need); ``None`` when none was given."""
        if self._store is None and self._store_of is not None:
            self._store = self._store_of()
        return self._store

    def _owns(self, person: str, session_id: str) -> bool:
        """Whether ``session_id`` is ``person``'s or new (unknown without a session store:
        the runner refuses then)."""
        store = self.session_store()
        if store is None:
            return True
        found = store.get_session(session_id)
        return found is None or found.person == person

    def _routed_session(self, key: str, person: str | None = None) -> str:
        """The conversation's session; a new one when it has none, or when the one it had is
        someone else's (the platform id was given to another person since)."""
        session_id = self.routes.session_of(key)
        if session_id is not None and person is not None and not self._owns(person, session_id):
            session_id = None
        if session_id is None:
            session_id = new_session_id()
            self.routes.assign(key, session_id)
        return session_id

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            self.log(f"gateway: error while answering: {type(exc).__name__}: {exc}")

    # --- turns -----------------------------------------------------------------------------------

    def _lane(self, session_id: str) -> _Lane:
        return self._lanes.setdefault(session_id, _Lane())

    def _release(self, session_id: str, lane: _Lane) -> None:
        lane.cancel = None
        lane.started = None
        lane.lock.release()
        if lane.waiting == 0 and not lane.lock.locked():
            self._lanes.pop(session_id, None)

    async def _turn(
        self,
        session_id: str,
        message: InboundMessage,
        person: str,
        instructions: str | None,
        on_delta: Callable[[str], None] | None,
    ) -> AgentOutcome:
        if self.queue is not None:
            prompt = prompt_of(message)
            return await queued_turn(
                self, session_id, message, prompt, person, instructions, on_delta
            )
        lane = self._lane(session_id)
        interrupts = lane.lock.locked() and self.settings.busy == "interrupt"
        if interrupts:
            lane.generation += 1
            if lane.cancel is not None:
                lane.cancel.set()
        generation = lane.generation
        lane.waiting += 1
        try:
            await lane.lock.acquire()
        except BaseException:  # the caller gave up while waiting
            lane.waiting -= 1
            if lane.waiting == 0 and not lane.lock.locked():
                self._lanes.pop(session_id, None)
            raise
        lane.waiting -= 1
        if generation != lane.generation:
            self._release(session_id, lane)
            return AgentOutcome(
                session_id=session_id,
                text="",
                status="interrupted",
                error="stopped before it started",
            )
        loop = asyncio.get_running_loop()
        cancel = threading.Event()
        lane.cancel, lane.started = cancel, time.monotonic()
        deltas = None
        if on_delta is not None:

            def deltas(piece: str) -> None:
                loop.call_soon_threadsafe(on_delta, piece)

        task = AgentTask(
            prompt=prompt_of(message),
            session_id=session_id,
            source=message.platform,
            system_context=instructions,
            cancel_event=cancel,
            on_text_delta=deltas,
            exclude_toolsets=NOT_FOR_GATEWAY,
            config_overrides=self.workspace_overrides(message, person),
            join_unanswered=interrupts,
            person=person,
            trace_context=message.trace_context,
        )
        try:
            future = loop.run_in_executor(self._pool, self._run, task)
        except BaseException:
            self._release(session_id, lane)
            raise
        self._turns.add(future)

        def finished(done: asyncio.Future[AgentOutcome]) -> None:
            self._turns.discard(done)
            self._release(session_id, lane)
            self._settle()

        # The session stays locked until the thread is done, even when the caller gives up.
        future.add_done_callback(finished)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.set()  # the caller went away (a client disconnected): stop the turn
            raise
        except Exception as exc:  # a runner must not raise; if one does, it is the outcome
            return AgentOutcome(session_id=session_id, text="", status="error", error=str(exc))

    def _run(self, task: AgentTask) -> AgentOutcome:
        """Run the turn (on a turn thread), holding the session's lock across processes."""
        if self.session_locks is None or task.session_id is None or task.cancel_event is None:
            return self.runner.run(task)
        with self._hold(task.session_id, task.cancel_event) as held:
            if not held:
                return AgentOutcome(
                    session_id=task.session_id,
                    text="",
                    status="interrupted",
                    error="stopped before it started",
                )
            return self.runner.run(task)

    def _hold(
        self, session_id: str, cancel: threading.Event
    ) -> contextlib.AbstractContextManager[bool]:
        """The lock of one turn of ``session_id`` across processes: the store's own when it
        holds locks, else the fallback lock file."""
        store = self.session_store()
        if isinstance(store, LockingSessionStore):
            return store.hold_session(session_id, cancel)
        assert self.session_locks is not None
        return self.session_locks.hold(session_id, cancel)

    def may_deliver(self, person: str | None, platform: str, chat_id: str) -> bool:
        """Whether a scheduled job of ``person`` may send to ``chat_id`` on ``platform``: the
        owner's may send anywhere; a person's only to a chat that is theirs (a direct chat
        with one of their ids on that platform, or a chat they talked in here)."""
        if person is None:
            return True
        users = {
            user
            for (where, user), who in self.people.by_platform_id.items()
            if who == person and where == platform
        }
        if self.home is not None:
            recorded = read_record(self.home, person)["ids"]
            users.update(k.split(":", 1)[1] for k in recorded if k.startswith(f"{platform}:"))
        return chat_id in users or chat_id in self.routes.chats_of(platform, users)

    def workspace_of(self, message: InboundMessage, person: str) -> str | None:
        """The folder of ``person``'s workspace (``None`` with ``gateway.workspaces: shared``):
        ``people/<id>`` for a configured person (one folder whichever platform id they write
        from), ``workspace_name(platform, user_id)`` for a guest (as before people existed)."""
        if self.workspace_root is None or self.settings.workspaces != "per-user":
            return None
        if is_guest(person):
            name = workspace_name(message.platform, message.user_id)
        else:
            name = f"{PEOPLE_WORKSPACES}/{person}"
        return os.path.join(self.workspace_root, name)

    def workspace_overrides(
        self, message: InboundMessage, person: str | None = None
    ) -> dict[str, Any]:
        """The configuration that puts this person's commands in their own workspace."""
        if person is None:
            person = self.person_of(message) or guest_id(message.platform, message.user_id)
        folder = self.workspace_of(message, person)
        seen = (person, message.platform, message.user_id)
        if seen not in self._remembered and self.home is not None and person:
            self._remembered.add(seen)  # once per process and platform id
            remember_ids(self.home, person, f"{message.platform}:{message.user_id}", folder)
        if folder is None:
            return {}
        if not os.path.isdir(folder):  # made once; checked each turn, as it may be removed
            Path(folder).mkdir(parents=True, exist_ok=True, mode=0o700)
        return {"terminal": {"cwd": folder}}

    def _settle(self) -> None:
        """After the first turn (which imported the provider's SDK), freeze what it made alive
        (see :mod:`hermes_gateway.memory`)."""
        if not self._first_turn_done:
            self._first_turn_done = True
            if self.settings.gc_freeze:
                memory.refreeze()

    def _stop(self, session_id: str | None) -> bool:
        """Interrupt the session's running turn and drop the ones waiting; whether one ran."""
        lane = self._lanes.get(session_id) if session_id else None
        if lane is None:
            return False
        lane.generation += 1
        if lane.cancel is not None:
            lane.cancel.set()
            return True
        return False

    async def _chat_turn(self, message: InboundMessage, key: str, person: str) -> None:
        adapter = self.adapters[message.platform]
        platform = self.settings.platforms[message.platform]
        session_id = self._routed_session(key, person)
        streamed = _StreamedReply(adapter, message, self.settings.edit_interval, self.log)
        stream = platform.stream and adapter.can_edit
        typing = asyncio.ensure_future(self._keep_typing(adapter, message.chat_id))
        try:
            outcome = await self._turn(
                session_id, message, person, None, streamed.add if stream else None
            )
        finally:
            typing.cancel()
            await streamed.stop()
        if outcome.status == "interrupted":
            return
        if outcome.status == "error":
            reply = f"Sorry, that failed: {outcome.error or 'unknown error'}"
        else:
            reply = outcome.text or "(no answer)"
        await streamed.finish(reply)

    async def _keep_typing(self, adapter: PlatformAdapter, chat_id: str) -> None:
        while True:
            with contextlib.suppress(Exception):
                await adapter.typing(chat_id)
            await asyncio.sleep(self.settings.typing_interval)

    # --- commands -------------------------------------------------------------------------------

    async def _command(self, name: str, message: InboundMessage, key: str, person: str) -> None:
        adapter = self.adapters[message.platform]
        session_id = self.routes.session_of(key)
        if session_id is not None and not self._owns(person, session_id):
            session_id = None
        if self.queue is not None:
            reply = await self._queue_command(name, key, person, session_id)
            await adapter.send(message.chat_id, reply, reply_to=message.message_id or None)
            return
        if name in ("new", "reset"):
            stopped = self._stop(session_id)
            self.routes.forget(key)
            reply = "Started a new conversation." + (
                " The running turn was stopped." if stopped else ""
            )
        elif name == "stop":
            reply = "Stopped." if self._stop(session_id) else "Nothing is running."
        else:
            lane = self._lanes.get(session_id) if session_id else None
            if lane is not None and lane.started is not None:
                state = f"a turn is running ({time.monotonic() - lane.started:.0f}s)"
                if lane.waiting:
                    state += f", {lane.waiting} waiting"
            else:
                state = "idle"
            who = f"{person} (a guest)" if is_guest(person) else person
            reply = (
                f"Person: {who}\n"
                f"Session: {session_id or 'none yet (the next message starts one)'}\n"
                f"State: {state}\nWhen busy: {self.settings.busy}"
            )
        await adapter.send(message.chat_id, reply, reply_to=message.message_id or None)

    async def _queue_command(self, name: str, key: str, person: str, session_id: str | None) -> str:
        """A command's answer when the turns run on the team's workers, wherever they run."""
        assert self.queue is not None
        if name in ("new", "reset", "stop"):
            stopped = await self.queue.stop(session_id) if session_id else False
            if name == "stop":
                return "Stopped." if stopped else "Nothing is running."
            self.routes.forget(key)
            return "Started a new conversation." + (
                " The running turn was stopped." if stopped else ""
            )
        state = describe(await self.queue.state(session_id)) if session_id else "idle"
        who = f"{person} (a guest)" if is_guest(person) else person
        return (
            f"Person: {who}\n"
            f"Session: {session_id or 'none yet (the next message starts one)'}\n"
            f"State: {state}\nWhen busy: {self.settings.busy}"
        )

    # --- shutdown --------------------------------------------------------------------------------

    @property
    def running_turns(self) -> int:
        """Turns whose thread is still running."""
        return len(self._turns)

    async def close(self, timeout: float) -> int:
        """Take no new message, wait up to ``timeout`` seconds for the turns under way (and the
        answers being sent), then interrupt what is left. Returns how many were interrupted."""
        self.closing = True
        pending = set(self._tasks) | set(self._turns)
        if pending:
            await asyncio.wait(pending, timeout=timeout)
        left = len(self._turns)
        if left:
            self.log(f"gateway: interrupting {left} turn(s) still running after {timeout:g}s")
            for session_id in list(self._lanes):
                self._stop(session_id)
            await asyncio.wait(set(self._turns) | set(self._tasks), timeout=30)
        self._pool.shutdown(wait=False)
        return left


class _StreamedReply:
    """An answer sent early and edited as it grows (when streaming), else sent once."""

    def __init__(
        self,
        adapter: PlatformAdapter,
        message: InboundMessage,
        interval: float,
        log: Callable[[str], None],
    ) -> None:
        self.adapter = adapter
        self.message = message
        self.interval = interval
        self.log = log
        self.text = ""
        self.shown = ""
        self.message_id: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def add(self, piece: str) -> None:
        """Append streamed text (called on the event loop)."""
        self.text += piece
        if self._task is None:
            self._task = asyncio.ensure_future(self._flush_every())

    async def _flush_every(self) -> None:
        while not self._stopping.is_set():
            await self._show(self.text)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.interval)

    async def _show(self, text: str) -> None:
        if not text or text == self.shown:
            return
        if self.message_id is None:
            self.message_id = await self.adapter.send(
                self.message.chat_id, text, reply_to=self.message.message_id or None
            )
        else:
            await self.adapter.edit(self.message.chat_id, self.message_id, text)
        self.shown = text

    async def stop(self) -> None:
        """Stop editing as the text grows. A send or edit under way is finished first (cut
        short, a message the platform got would be sent again by :meth:`finish`), unless it
        hangs for ``SEND_WAIT`` seconds."""
        self._stopping.set()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=SEND_WAIT)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def finish(self, reply: str) -> None:
        """Show the whole answer: edit the streamed message, or send it."""
        try:
            if self.message_id is None:
                await self.adapter.send(
                    self.message.chat_id, reply, reply_to=self.message.message_id or None
                )
            elif reply != self.shown:
                await self.adapter.edit(self.message.chat_id, self.message_id, reply)
        except Exception as exc:
            self.log(
                f"gateway: could not deliver the answer to {self.message.platform}:"
                f"{self.message.chat_id}: {exc}"
            )
