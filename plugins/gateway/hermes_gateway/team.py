"""The gateway's two halves when its turns go through a work queue (``gateway.queue``): the
front end's (a turn becomes a job; its text and outcome come back from the worker that ran it)
and the worker's (a job becomes an agent run, under the session's lock in the store).

``hermes gateway run --role front`` serves the platforms and runs no turn; ``--role worker``
serves no platform and runs the queued turns; ``--role all`` (the default) does both in one
process. Each holds only the secrets its role uses (:func:`drop_secrets`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import AgentOutcome, AgentTask, HermesError, LockingSessionStore

from .platforms import InboundMessage
from .settings import GatewaySettings, QueueSettings
from .turn_queue import ROLES, QueueFactory, TurnQueue, TurnRequest

if TYPE_CHECKING:
    from .core import GatewayCore

NOT_FOR_GATEWAY = ("clarify",)
"""Toolsets a gateway session never gets: the model cannot stop to ask the user a question."""
PLATFORM_SECRET_KEYS = ("key_env", "secret_env", "token_env")
"""Keys of a platform's settings that name the variable holding its secret."""
PLATFORM_SECRET_DEFAULTS = {
    "api_server": "HERMES_API_SERVER_KEY",
    "webhook": "HERMES_WEBHOOK_SECRET",
}
"""The variable each shipped adapter reads its secret from when its settings name none."""


def make_queue(
    settings: GatewaySettings, factories: Mapping[str, QueueFactory], log: Callable[[str], None]
) -> TurnQueue:
    """The queue ``gateway.queue`` names, from the plugin that registered it.

    :raises HermesError: no queue is configured, or the engine is not installed (one line).
    """
    if settings.queue is None:
        raise HermesError("no work queue is configured: set gateway.queue (see docs/team.md)")
    return make_queue_from(settings.queue, factories, log)


def make_queue_from(
    queue: QueueSettings, factories: Mapping[str, QueueFactory], log: Callable[[str], None]
) -> TurnQueue:
    """The queue of the checked ``gateway.queue`` section (see :func:`make_queue`)."""
    engine = queue.engine
    if engine is None:
        if len(factories) != 1:
            installed = ", ".join(sorted(factories)) or "none"
            raise HermesError(
                "gateway.queue: name the queue with gateway.queue.engine (installed: "
                f"{installed}; pip install hermes-queue-procrastinate for one)"
            )
        engine = next(iter(factories))
    factory = factories.get(engine)
    if factory is None:
        installed = ", ".join(sorted(factories)) or "none"
        raise HermesError(
            f"gateway.queue.engine: no work queue {engine!r} is installed (installed: {installed})"
        )
    return factory(queue.url, queue.options, log)


def check_role(role: str, settings: GatewaySettings) -> None:
    """Refuse a role the configuration cannot serve (one line)."""
    if role not in ROLES:
        raise HermesError(f"--role must be one of {', '.join(ROLES)}, not {role!r}")
    if role != "all" and settings.queue is None:
        raise HermesError(
            f"--role {role} needs a work queue shared by the front ends and workers: set "
            "gateway.queue (see docs/team.md)"
        )
    if role != "all" and settings.workers > 1:
        raise HermesError(
            "--role front or worker runs one process: start more of them rather than "
            "gateway.workers (set it to 1)"
        )


def secret_variables(settings: GatewaySettings) -> set[str]:
    """The variables that hold the platforms' secrets and the people's API keys."""
    names: set[str] = set()
    for platform in settings.platforms.values():
        default = PLATFORM_SECRET_DEFAULTS.get(platform.adapter)
        if default is not None:
            names.add(default)
        for key in PLATFORM_SECRET_KEYS:
            value = platform.options.get(key)
            if isinstance(value, str) and value:
                names.add(value)
    names.update(settings.people.keyed().values())
    return names


def drop_secrets(names: set[str]) -> list[str]:
    """Remove the variables ``names`` from this process's environment; the ones removed."""
    dropped = sorted(n for n in names if n in os.environ)
    for name in dropped:
        del os.environ[name]
    return dropped


async def queued_turn(
    gateway: GatewayCore,
    session_id: str,
    message: InboundMessage,
    prompt: str,
    person: str,
    instructions: str | None,
    on_delta: Callable[[str], None] | None,
) -> AgentOutcome:
    """One turn (``prompt``, from ``message``) as a job of the team's queue, run by whichever
    worker takes it."""
    assert gateway.queue is not None
    request = TurnRequest(
        turn_id=TurnRequest.new_id(),
        session_id=session_id,
        prompt=prompt,
        platform=message.platform,
        person=person,
        system_context=instructions,
        config_overrides=gateway.workspace_overrides(message, person),
        queued_at=time.time(),
        trace_context=dict(message.trace_context),
    )
    try:
        return await gateway.queue.submit(request, gateway.settings.busy, on_delta)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the queue cannot be reached: the turn fails, with one line
        gateway.log(f"gateway: the work queue failed: {type(exc).__name__}: {exc}")
        return AgentOutcome(session_id=session_id, text="", status="error", error=str(exc))


def run_request(
    gateway: GatewayCore,
    request: TurnRequest,
    cancel: threading.Event,
    on_delta: Callable[[str], None],
) -> AgentOutcome:
    """Run a queued turn on this worker (a turn thread), holding the session's lock in the
    store as well: a turn the queue thought stalled never runs beside its first attempt."""

    cwd = (request.config_overrides.get("terminal") or {}).get("cwd")
    if isinstance(cwd, str) and not os.path.isdir(cwd):
        Path(cwd).mkdir(parents=True, exist_ok=True, mode=0o700)
    task = AgentTask(
        prompt=request.prompt,
        session_id=request.session_id,
        source=request.platform,
        system_context=request.system_context,
        cancel_event=cancel,
        on_text_delta=on_delta,
        exclude_toolsets=NOT_FOR_GATEWAY,
        config_overrides=request.config_overrides,
        join_unanswered=request.join_unanswered,
        person=request.person,
        trace_context=request.trace_context,
        resume_unanswered=request.repeat,
    )
    with _held(gateway, request.session_id, cancel) as held:
        recorded = recorded_answer(gateway, request) if held and request.repeat else None
        if recorded is not None:
            return recorded
        if not held:
            return AgentOutcome(
                session_id=request.session_id,
                text="",
                status="interrupted",
                error="stopped before it started",
            )
        try:
            return gateway.runner.run(task)
        except Exception as exc:  # a runner must not raise; if one does, it is the outcome
            return AgentOutcome(
                session_id=request.session_id, text="", status="error", error=str(exc)
            )


def recorded_answer(gateway: GatewayCore, request: TurnRequest) -> AgentOutcome | None:
    """The answer the store recorded for a repeated turn (its first worker died after the turn
    completed, before the queue learnt it), so that it is not run again; ``None`` when the
    turn's last user message has no final answer in the store."""
    store = gateway.session_store()
    if store is None:
        return None
    messages = store.get_messages(request.session_id)
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    if last_user is None or messages[last_user].get("content") != request.prompt:
        return None
    tail = messages[last_user + 1 :]
    if not tail or tail[-1].get("role") != "assistant" or tail[-1].get("tool_calls"):
        return None
    text = tail[-1].get("content")
    if not isinstance(text, str):
        return None
    return AgentOutcome(session_id=request.session_id, text=text, status="completed")


@contextlib.contextmanager
def _held(gateway: GatewayCore, session_id: str, cancel: threading.Event) -> Iterator[bool]:
    store = gateway.session_store()
    if isinstance(store, LockingSessionStore):
        with store.hold_session(session_id, cancel) as held:
            yield held
    else:
        yield True


async def work(gateway: GatewayCore, stop: asyncio.Event) -> None:
    """Run the queue's turns on this process until ``stop`` is set."""
    assert gateway.queue is not None

    def run(request: TurnRequest, cancel: threading.Event, on_delta: Any) -> AgentOutcome:
        return run_request(gateway, request, cancel, on_delta)

    settings = gateway.settings
    await gateway.queue.work(
        run, settings.max_concurrent_turns, stop.wait(), settings.drain_timeout
    )


def describe(state: Any) -> str:
    """The ``/status`` line of a :class:`~hermes_gateway.turn_queue.TurnState`."""
    if state.running_for is None:
        text = "idle"
        if state.waiting:
            text = f"{state.waiting} waiting"
        return text
    text = f"a turn is running ({state.running_for:.0f}s"
    text += f" on {state.worker})" if state.worker else ")"
    if state.waiting:
        text += f", {state.waiting} waiting"
    return text
