"""The process's reused threads for blocking calls (hermes_runtime.threads)."""

from __future__ import annotations

import os
import threading

import pytest

from hermes_core.testing import wait_until
from hermes_runtime.threads import Workers


def test_a_call_runs_on_an_idle_thread_when_there_is_one():
    workers = Workers("test-workers")
    first = workers.submit(threading.get_ident).result(timeout=5)
    assert wait_until(lambda: workers.idle == 1)
    assert workers.submit(threading.get_ident).result(timeout=5) == first
    assert workers.busy == 0


def test_calls_never_wait_for_each_other():
    workers = Workers("test-workers")
    together = threading.Barrier(4)
    futures = [workers.submit(together.wait, 5) for _ in range(4)]
    assert sorted(f.result(timeout=10) for f in futures) == [0, 1, 2, 3]


def test_a_calls_exception_is_its_futures_and_the_thread_carries_on():
    workers = Workers("test-workers")

    def fail() -> None:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        workers.submit(fail).result(timeout=5)
    assert workers.submit(lambda x: x * 2, 21).result(timeout=5) == 42


def test_an_idle_thread_ends():
    workers = Workers("test-idle-workers", idle_seconds=0.05)
    workers.submit(lambda: None).result(timeout=5)
    assert wait_until(
        lambda: (
            workers.idle == 0
            and not any(t.name == "test-idle-workers" for t in threading.enumerate())
        )
    )
    assert workers.submit(lambda: "again").result(timeout=5) == "again"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_calls_on_threads_of_its_own():
    workers = Workers("test-fork-workers")
    workers.submit(lambda: None).result(timeout=5)
    assert wait_until(lambda: workers.idle == 1)  # a parent's thread waits for work
    pid = os.fork()
    if pid == 0:  # the child: that thread does not exist here
        try:
            ok = workers.submit(lambda: 42).result(timeout=5) == 42
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
