"""Running one tool handler as a step of the turn (:mod:`hermes_core.loop.steps`): on a thread
the host can stop waiting for at its timeout or on an interrupt (a thread cannot be killed),
with a clock that leaves out the time it waits for a person or for subagents, and an event
loop for ``async`` handlers."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextvars
import inspect
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hermes_hookspecs import (
    AgentRunner,
    AgentTask,
    Cancelled,
    Tool,
    ToolCall,
    ToolCancelled,
    ToolContext,
)

from .steps import POLL_SECONDS, Step

STOP_GRACE_SECONDS = 0.25
"""After an interrupt or a timeout, how long a handler gets to notice its cancel event and end
(a subagent stopping, a command being killed) before its call is answered anyway."""


class AsyncBridge:
    """One event loop in a daemon thread, kept for the life of the process, that runs the
    coroutines of ``async`` tool handlers (so no handler ever sees "event loop is closed")."""

    _instance: AsyncBridge | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="hermes-async", daemon=True
        )
        self.thread.start()

    @classmethod
    def shared(cls) -> AsyncBridge:
        """The process-wide bridge, started on first use."""
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def run(self, coroutine: Any, cancel: threading.Event) -> Any:
        """Run ``coroutine`` on the bridge loop and return its result; cancel it on interrupt."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        while True:
            try:
                return future.result(timeout=POLL_SECONDS)
            except cf.TimeoutError:
                if cancel.is_set():
                    future.cancel()
                    raise ToolCancelled("interrupted by the user") from None


class ToolTimeout(Exception):
    """A handler ran longer than its timeout; the host stopped waiting for it."""


class _ToolClock:
    """Time a handler has spent on its own: time it waits for a person (approval, a clarifying
    question) or for subagents, which bound their own steps, does not count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._paused_total = 0.0
        self._pauses = 0
        self._pause_started = 0.0

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the clock while the block runs."""
        with self._lock:
            if self._pauses == 0:
                self._pause_started = time.monotonic()
            self._pauses += 1
        try:
            yield
        finally:
            with self._lock:
                self._pauses -= 1
                if self._pauses == 0:
                    self._paused_total += time.monotonic() - self._pause_started

    def elapsed(self) -> float:
        """Seconds the handler has run, pauses left out."""
        with self._lock:
            now = time.monotonic()
            paused = self._paused_total + (now - self._pause_started if self._pauses else 0.0)
            return now - self._started - paused

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, with the clock stopped while it runs."""

        def paused_call(*args: Any, **kwargs: Any) -> Any:
            with self.paused():
                return function(*args, **kwargs)

        return paused_call


class _PausedRunner:
    """A tool's :class:`~hermes_hookspecs.AgentRunner`, with the tool's clock stopped while a
    subagent runs."""

    def __init__(self, runner: AgentRunner, clock: _ToolClock) -> None:
        self._runner = runner
        self._clock = clock

    def run(self, task: AgentTask) -> Any:
        """Run ``task`` with the runner of the host."""
        with self._clock.paused():
            return self._runner.run(task)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)


class ToolStep(Step):
    """Running the handler of ``tool`` for ``call``: a :class:`~hermes_core.loop.steps.Step`
    of the turn, overdue on interrupt (``cancel`` set: :class:`ToolCancelled`) or when its
    clock passes ``timeout`` (:class:`ToolTimeout`).

    A thread cannot be killed, so then the handler's cancel event is set (a coroutine is
    cancelled, a handler that checks the event stops) and the host waits at most
    :data:`STOP_GRACE_SECONDS` more before it answers the call. An exception of the handler
    is its outcome; ``SystemExit`` and the like become a :class:`RuntimeError`, ending the
    call, not the agent.
    """

    grace = STOP_GRACE_SECONDS

    def __init__(
        self,
        tool: Tool,
        call: ToolCall,
        ctx: ToolContext,
        cancel: threading.Event,
        timeout: float | None,
    ) -> None:
        self.tool = tool
        self.call = call
        self.ctx = ctx
        self.cancel = cancel
        self.timeout = timeout
        self.cancel_event = threading.Event()  # this call's own: interrupt or timeout
        self.clock = clock = _ToolClock()
        ctx.cancel_event = self.cancel_event
        ctx.approver = clock.wrap(ctx.approver)
        ctx.clarifier = clock.wrap(ctx.clarifier)
        if ctx.agents is not None:
            ctx.agents = _PausedRunner(ctx.agents, clock)

    def run(self, watched: bool) -> Any:
        """Run the handler (in a copy of this thread's context variables) and return its
        value."""
        return contextvars.copy_context().run(self._handle)

    def _handle(self) -> Any:
        try:
            value = self.tool.handler(self.call.arguments, self.ctx)
            if inspect.isawaitable(value):
                value = AsyncBridge.shared().run(value, self.cancel_event)
            return value
        except (Exception, Cancelled):
            raise
        except BaseException as exc:  # SystemExit and the like end the call, not the agent
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None

    def overdue(self) -> BaseException | None:
        """An interrupt, or the timeout once the handler's own time passes it."""
        if self.cancel.is_set():
            return ToolCancelled("interrupted by the user")
        if self.timeout and self.clock.elapsed() >= self.timeout:
            return ToolTimeout(self.call.name)
        return None

    def stop(self) -> None:
        """Set the handler's cancel event."""
        self.cancel_event.set()
