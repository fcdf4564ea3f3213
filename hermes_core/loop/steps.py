"""The blocking steps of a turn and the threads they run on.

A turn is a generator: wherever it waits for something that may overrun or must stop on an
interrupt (a tool handler, a model call) it yields a :class:`Step` and gets back the step's
value, or its exception thrown in. Its state lives in the generator, not on a thread's stack,
so it can go on from any thread, and a step that never returns strands only its own thread.

:func:`drive` runs a turn for the calling thread with no thread hand-off per step: the turn
starts on the caller and moves, at its first step that must be watched (a tool handler), to
one worker thread, which then runs every step inline while the caller watches the running
step's clock and the interrupt. A step that overruns (or is interrupted) gets its stop signal
and a grace; if it still runs after that, the caller answers it with the timeout or interrupt
error and drives the turn on itself, abandoning the stuck thread, whose late result is
dropped; the next step that must be watched moves the turn to a fresh worker.

:func:`run_steps` runs a turn (or part of one: a tool call of a parallel batch) the simple
way: each step that must be watched on a worker thread of its own, watched from here.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from hermes_hookspecs import Cancelled
from hermes_runtime.threads import Workers

T = TypeVar("T")

POLL_SECONDS = 0.05
"""How often a wait for a step looks at the interrupt flag and the clock."""
INTERRUPTED = "interrupted by the user"
"""The message of the :class:`Cancelled` that answers an interrupted step."""

TURN_THREADS = Workers("hermes-steps")
"""The threads a watched turn runs on after its first tool call, reused from turn to turn."""
STEP_THREADS = Workers("hermes-tool")
"""The threads :func:`run_steps` runs watched steps on: a handler that never returns keeps
its thread while the next call gets another."""


class Step:
    """Something a turn waits for that may overrun, or must stop when the turn is
    interrupted. Subclasses say how to run it and when it is overdue."""

    moves = True
    """Whether the step must run on a thread the caller can abandon (a tool handler), or may
    run on the calling thread (a model call, which watches the interrupt itself there)."""
    grace = 0.0
    """Seconds an overdue step gets, after :meth:`stop`, to end by itself."""
    stopped: BaseException | None = None
    """Why the watcher stopped the step: its outcome, whatever the step returns later."""

    def run(self, watched: bool) -> Any:
        """Run the step and return its value (or raise). ``watched``: this thread is watched
        by another that abandons it when the step is overdue, so the step need not hand its
        blocking call to a thread of its own."""
        raise NotImplementedError

    def overdue(self) -> BaseException | None:
        """The error that answers the step now (its timeout, an interrupt), else ``None``."""
        raise NotImplementedError

    def stop(self) -> None:
        """Ask the running step to end (set its cancel event)."""


class ModelCall(Step):
    """A model call: ``call(watched=...)`` makes it (with its retries and fallbacks). It may run on
    the calling thread (the connection then watches the interrupt itself); it is overdue once
    ``cancel`` is set, and leaves nothing behind then."""

    moves = False

    def __init__(self, call: Callable[..., Any], cancel: threading.Event) -> None:
        self.call = call
        self.cancel = cancel

    def run(self, watched: bool) -> Any:
        """Make the call."""
        return self.call(watched=watched)

    def overdue(self) -> BaseException | None:
        """An interrupt, once ``cancel`` is set."""
        return Cancelled(INTERRUPTED) if self.cancel.is_set() else None


Steps = Generator[Step, Any, T]
"""A turn, or part of one: yields steps, gets their values, returns its result."""


def _outcome(step: Step, watched: bool) -> tuple[Any, BaseException | None]:
    try:
        return step.run(watched), None
    except BaseException as exc:  # thrown into the turn where it waits for the step
        return None, exc


def _advance(steps: Steps[T], value: Any, error: BaseException | None) -> Step:
    return steps.send(value) if error is None else steps.throw(error)


def run_steps(steps: Steps[T]) -> T:
    """Run ``steps`` to the end on this thread, each step that must be watched on a worker
    thread watched from here, and return their result."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = _advance(steps, value, error)
        except StopIteration as stop:
            result: T = stop.value
            return result
        value, error = _handed_off(step) if step.moves else _outcome(step, False)


def _handed_off(step: Step) -> tuple[Any, BaseException | None]:
    # A bare lock is the cheapest wake-up there is: the worker releases it when the step ends,
    # and the wait returns at once (the poll only looks at the interrupt and the clock).
    done = threading.Lock()
    done.acquire()
    outcome: list[Any] = [None, None]

    def work() -> None:
        try:
            outcome[:] = _outcome(step, True)
        finally:
            done.release()

    STEP_THREADS.submit(contextvars.copy_context().run, work)
    while not done.acquire(timeout=POLL_SECONDS):
        reason = step.overdue()
        if reason is not None:
            step.stop()
            done.acquire(timeout=step.grace)
            return None, reason
    return outcome[0], outcome[1]


def drive(steps: Steps[T], cancel: threading.Event) -> T:
    """Run the turn ``steps`` to the end and return its result (or raise its exception),
    moving it to a worker thread at its first step that must be watched, and watching it
    from here (see the module's description). Should this thread be interrupted while it
    watches (``KeyboardInterrupt``), ``cancel`` is set and the worker drops the turn at its
    next step."""
    result: T = _Driver(steps, cancel).run()
    return result


class _Driver:
    """One turn run by :func:`drive`."""

    def __init__(self, steps: Steps[Any], cancel: threading.Event) -> None:
        self.steps = steps
        self.cancel = cancel
        self.changed = threading.Condition(threading.Lock())
        self.owner = 0
        """Which worker may advance the turn; any other (an abandoned one) must not touch it."""
        self.current: Step | None = None
        """The step the owning worker runs now."""
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> Any:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = _advance(self.steps, value, error)
            except StopIteration as stop:
                return stop.value
            if not step.moves:
                value, error = _outcome(step, False)
                continue
            value, error, finished = self._on_worker(step)
            if finished:
                if error is not None:
                    raise error
                return value

    def _on_worker(self, step: Step) -> tuple[Any, BaseException | None, bool]:
        """Hand the turn, about to run ``step``, to a worker and watch it. Returns the
        turn's result (``finished``), or the error that answers a step the worker was
        abandoned in (the turn goes on here)."""
        done = threading.Lock()
        done.acquire()
        with self.changed:
            self.owner += 1
            self.current = step
            owner = self.owner
        TURN_THREADS.submit(contextvars.copy_context().run, self._work, owner, step, done)
        try:
            while not done.acquire(timeout=POLL_SECONDS):
                reason = self._check()
                if reason is not None:
                    return None, reason, False
        except BaseException:  # this thread is interrupted: the turn must not go on without it
            with self.changed:
                self.owner += 1
                stuck = self.current
            self.cancel.set()
            if stuck is not None:
                stuck.stop()
            raise
        return self.result, self.error, True

    def _check(self) -> BaseException | None:
        """Stop the running step if it is overdue; the error that answers it if the worker
        is abandoned in it (it did not end within its grace), else ``None``."""
        with self.changed:
            step = self.current
            if step is None or step.stopped is not None:
                return None
            reason = step.overdue()
            if reason is None:
                return None
            step.stopped = reason
            step.stop()
            if step.grace:
                self.changed.wait_for(lambda: self.current is not step, step.grace)
            if self.current is not step:  # it ended: the worker goes on, answering it `reason`
                return None
            self.owner += 1
            self.current = None
            return reason

    def _work(self, owner: int, step: Step, done: threading.Lock) -> None:
        """The worker's part: run ``step``, then advance the turn and run its steps inline
        until it ends or this thread is abandoned."""
        steps = self.steps
        changed = self.changed
        while True:
            value, error = _outcome(step, True)
            with changed:
                if self.owner != owner:  # abandoned: the turn went on without this result
                    return
                if step.stopped is not None:
                    value, error = None, step.stopped
                    changed.notify_all()
                self.current = None
            try:
                step = _advance(steps, value, error)
            except StopIteration as stop:
                self.result = stop.value
                done.release()
                return
            except BaseException as exc:  # raised on the caller's thread
                self.error = exc
                done.release()
                return
            with changed:
                if self.owner != owner:
                    return
                self.current = step
