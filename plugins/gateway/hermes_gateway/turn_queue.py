"""The contract between the gateway and a work queue (``gateway.queue``): for a team, the turns
become jobs that front ends enqueue and workers, on other machines too, run.

Without ``gateway.queue`` nothing here is used and no queue library is imported: one gateway
runs its own turns (see :class:`~hermes_gateway.core.GatewayCore`). With it, the gateway takes a
:class:`TurnQueue` from the plugin that registered ``gateway.queue.engine`` through
``hermes_register_turn_queues`` (:mod:`hermes_gateway.hookspecs`): a front end calls
:meth:`TurnQueue.submit` for each turn and receives its text and outcome from whichever worker
runs it; a worker calls :meth:`TurnQueue.work`. The queue, not the front end, holds what
must be true across machines: one turn per session at a time, the busy policy, ``/stop`` and
``/status`` wherever the turn runs, and a dead worker's turn run again by another.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from hermes_hookspecs import AgentOutcome, Usage

from .routes import Routes

ROLES = ("all", "front", "worker")
"""``hermes gateway run --role``: both halves in one process (the default), or one of them."""


@dataclass(frozen=True)
class TurnRequest:
    """One turn, as a front end enqueues it (plain JSON values only: it travels to a worker).

    :param turn_id: unique per turn; its events and its retries are keyed by it.
    :param session_id: the session the turn continues (the queue's lock key).
    :param prompt: the user message.
    :param platform: the platform it came from (the session's source).
    :param person: the person it acts for.
    :param system_context: context for a new session's system prompt.
    :param config_overrides: the person's workspace and similar per-turn configuration.
    :param join_unanswered: join the prompt to an unanswered user message (``busy: interrupt``).
    :param queued_at: when the front end queued it (``time.time()``), for the pickup delay.
    :param repeat: an earlier attempt of this turn started on a worker that died: the turn
        continues from what the store recorded of it.
    :param trace_context: the W3C trace context of the message (``traceparent``,
        ``tracestate``): the worker's run joins the front end's trace.
    """

    turn_id: str
    session_id: str
    prompt: str
    platform: str
    person: str | None = None
    system_context: str | None = None
    config_overrides: Mapping[str, Any] = field(default_factory=dict)
    join_unanswered: bool = False
    queued_at: float = 0.0
    repeat: bool = False
    trace_context: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def new_id() -> str:
        """A fresh turn id."""
        return f"turn_{uuid.uuid4().hex}"

    def as_dict(self) -> dict[str, Any]:
        """The request as JSON values."""
        data = asdict(self)
        data["config_overrides"] = dict(self.config_overrides)
        data["trace_context"] = dict(self.trace_context)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnRequest:
        """The request ``as_dict`` gave (unknown keys, from a newer front end, are ignored)."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def outcome_as_dict(outcome: AgentOutcome) -> dict[str, Any]:
    """An outcome as JSON values (its usage as the counters' mapping)."""
    data = asdict(outcome)
    data["usage"] = outcome.usage.as_dict()
    return data


def outcome_from_dict(data: Mapping[str, Any]) -> AgentOutcome:
    """The outcome :func:`outcome_as_dict` gave."""
    usage = data.get("usage") or {}
    known = {f for f in Usage.__dataclass_fields__}
    return AgentOutcome(
        session_id=str(data.get("session_id", "")),
        text=str(data.get("text", "")),
        status=str(data.get("status", "error")),
        error=str(data.get("error", "")),
        usage=Usage(**{k: int(v) for k, v in usage.items() if k in known}),
        cost_usd=float(data.get("cost_usd") or 0.0),
        duration=float(data.get("duration") or 0.0),
    )


@dataclass(frozen=True)
class TurnState:
    """What ``/status`` says of a session's turns, wherever they run.

    :param running_for: seconds the running turn has been running; ``None``: none runs.
    :param waiting: turns queued behind it.
    :param worker: the worker that runs it (its name), when one does.
    """

    running_for: float | None
    waiting: int
    worker: str | None = None


TurnRunner = Callable[[TurnRequest, threading.Event, Callable[[str], None]], AgentOutcome]
"""What a worker runs for each job: the request, an event set when the turn must stop, and a
callback for the answer's text as it streams; returns the outcome (never raises)."""


@runtime_checkable
class TurnQueue(Protocol):
    """A work queue of gateway turns, shared by every front end and worker of a team."""

    async def open(self) -> None:
        """Connect (and make the queue's tables when they do not exist yet)."""
        ...

    async def close(self) -> None:
        """Disconnect; what is queued stays queued."""
        ...

    def routes(self) -> Routes | None:
        """Which session each conversation is in, shared by every front end (``None``: each
        front end keeps its own ``gateway/sessions.json``)."""
        ...

    async def submit(
        self, request: TurnRequest, busy: str, on_delta: Callable[[str], None] | None
    ) -> AgentOutcome:
        """Enqueue ``request`` and return its outcome once a worker ran it, passing the text
        to ``on_delta`` in order as it streams. ``busy`` is the gateway's policy for a session
        with a turn under way: ``queue`` waits behind it, ``interrupt`` stops it (and drops
        the turns waiting) first. Cancelling the call stops the turn wherever it runs."""
        ...

    async def stop(self, session_id: str) -> bool:
        """Stop the session's running turn and drop those waiting; whether one was running."""
        ...

    async def state(self, session_id: str) -> TurnState:
        """The session's turns (``/status``)."""
        ...

    async def work(
        self, run: TurnRunner, concurrency: int, stop: Awaitable[Any], drain: float
    ) -> None:
        """Run the queued turns with ``run``, ``concurrency`` at a time, until ``stop`` is
        done; then take no new one and give the running ones ``drain`` seconds to finish
        before interrupting them."""
        ...


QueueFactory = Callable[[str, Mapping[str, Any], Callable[[str], None]], TurnQueue]
"""``factory(url, options, log)``: the queue at ``url`` with the rest of ``gateway.queue``."""
