"""Threads for blocking calls, reused from call to call: for the host's tool handlers and model
calls, and for plugins that run blocking SDK calls (the dependency rule keeps plugins out of
the core, and the contract holds no runtime, so the one implementation lives in this library).

Starting a thread per call costs its start-up and, with many threads busy, a wait for the
interpreter's lock before the new thread can even report that it runs; a gateway serving fifty
conversations made several per turn. A fixed pool would instead let calls queue behind ones
that never return (a handler or client that ignores its cancel flag). :class:`Workers` has
neither problem: a call goes to an idle thread, or to a new one when none is idle, and a
thread idle for a while ends. Safe across ``fork``: a child starts threads of its own.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple["cf.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class Workers:
    """Runs calls on reused threads, never making a call wait for a free one.

    :param name: the threads' name.
    :param idle_seconds: how long a thread waits for its next call before it ends.
    """

    def __init__(self, name: str, *, idle_seconds: float = 60.0) -> None:
        self.name = name
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Job]] = []
        self._busy = 0
        _ALL.add(self)

    def _forget_threads(self) -> None:
        """In a forked child: the parent's threads do not exist here."""
        self._lock = threading.Lock()
        self._idle = []
        self._busy = 0

    @property
    def busy(self) -> int:
        """Calls running now."""
        return self._busy

    @property
    def idle(self) -> int:
        """Threads waiting for a call."""
        return len(self._idle)

    def retire_idle(self) -> None:
        """End the threads that wait for a call now (before a ``fork`` that must leave no
        thread behind, for instance); busy ones finish their call and stay."""
        with self._lock:
            idle, self._idle = self._idle, []
        for inbox in idle:
            inbox.put(None)  # type: ignore[arg-type]  # the end of the thread's loop

    def submit(self, fn: Callable[..., T], *args: Any) -> cf.Future[T]:
        """Start ``fn(*args)`` on an idle thread (or a new one); its future holds the result.
        A future cancelled before its thread picks it up never runs."""
        future: cf.Future[T] = cf.Future()
        job: _Job = (future, fn, args)
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
            self._busy += 1
        if inbox is not None:
            inbox.put(job)
            return future
        try:
            threading.Thread(target=self._work, args=(job,), name=self.name, daemon=True).start()
        except BaseException:
            with self._lock:
                self._busy -= 1
            raise
        return future

    def _work(self, job: _Job | None) -> None:
        inbox: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        while job is not None:
            future, fn, args = job
            job = None  # the finished call's arguments and result are not kept while idle
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # the caller reads it from the future
                    future.set_exception(exc)
            del future, fn, args
            with self._lock:
                self._busy -= 1
                self._idle.append(inbox)
            try:
                job = inbox.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # nobody chose this thread meanwhile: it ends
                        self._idle.remove(inbox)
                        return
                job = inbox.get()  # chosen just as it timed out: the call is on its way


_ALL: weakref.WeakSet[Workers] = weakref.WeakSet()


def retire_idle_threads() -> None:
    """:meth:`Workers.retire_idle` for every :class:`Workers` of the process."""
    for workers in list(_ALL):
        workers.retire_idle()


def _after_fork() -> None:
    for workers in list(_ALL):
        workers._forget_threads()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
