"""The lock part of the session store behaviour suite (see
:mod:`hermes_core.testing.store_suite`)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from hermes_hookspecs import (
    LockingSessionStore,
)

from .store_checks import StoreChecks

__all__ = ["LockBehaviour"]


class LockBehaviour(StoreChecks):
    """One turn at a time per session, for a :class:`~hermes_hookspecs.LockingSessionStore`."""

    # --- one turn at a time -----------------------------------------------------------------

    def test_one_holder_of_a_sessions_lock_at_a_time(self, store: Any) -> None:
        """Threads that all want one session's lock hold it one after the other, every one of
        them in the end."""
        locking = self.locking(store)
        never = threading.Event()
        guard = threading.Lock()
        inside: list[int] = []
        most = 0
        entered: list[int] = []
        failures: list[BaseException] = []

        def turns(number: int) -> None:
            nonlocal most
            try:
                for _ in range(5):
                    with locking.hold_session("s-lock", never) as held:
                        assert held, "nothing cancels this hold"
                        with guard:
                            inside.append(number)
                            most = max(most, len(inside))
                            entered.append(number)
                        time.sleep(0.002)
                        with guard:
                            inside.remove(number)
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=turns, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not failures, failures
        assert not any(thread.is_alive() for thread in threads), "a hold never ended"
        assert most == 1, "two threads held one session's lock at once"
        assert sorted(entered) == sorted(list(range(8)) * 5)

    def test_a_waiter_holds_the_lock_once_its_holder_lets_go(self, store: Any) -> None:
        """A hold waits while another holds the session's lock, and gets it when that one's
        block ends, also when the block raised."""
        locking = self.locking(store)
        never = threading.Event()
        order: list[str] = []
        with pytest.raises(RuntimeError):
            with locking.hold_session("s-wait", never) as held:
                assert held is True
                waiter = threading.Thread(
                    target=lambda: order.append(
                        f"waiter holds: {self._hold_once(locking, 's-wait')}"
                    )
                )
                waiter.start()
                waiter.join(0.5)
                assert waiter.is_alive(), "the waiter got a lock that was held"
                order.append("holder lets go")
                raise RuntimeError("the turn failed")
        waiter.join(30)
        assert order == ["holder lets go", "waiter holds: True"]
        assert self.takes_lock(locking, "s-wait", 10), "the lock was left held"

    @staticmethod
    def _hold_once(store: LockingSessionStore, session_id: str) -> bool:
        """Hold ``session_id``'s lock (waiting for it) and let go; whether it was held."""
        with store.hold_session(session_id, threading.Event()) as held:
            return held

    def test_a_cancel_while_waiting_yields_false_and_holds_nothing(self, store: Any) -> None:
        """A hold cancelled while it waits gets ``False`` soon after the cancel, and leaves
        the lock free for the next one once the holder lets go."""
        locking = self.locking(store)
        cancel = threading.Event()
        with locking.hold_session("s-cancel", threading.Event()) as held:
            assert held is True
            timer = threading.Timer(0.3, cancel.set)
            timer.start()
            started = time.monotonic()
            with locking.hold_session("s-cancel", cancel) as got:
                waited = time.monotonic() - started
                assert got is False
            timer.join()
            assert 0.2 <= waited < 10, waited
            assert not self.takes_lock(locking, "s-cancel", 0.2), "the holder still holds it"
        assert self.takes_lock(locking, "s-cancel", 10), "the cancelled hold kept the lock"

    def test_locks_of_different_sessions_do_not_block_each_other(self, store: Any) -> None:
        """While one session's lock is held, another session's is free (and the held one is
        not)."""
        locking = self.locking(store)
        with locking.hold_session("s-one", threading.Event()) as held:
            assert held is True
            assert self.takes_lock(locking, "s-two", 10), "another session's lock was blocked"
            assert not self.takes_lock(locking, "s-one", 0.3)
        assert self.takes_lock(locking, "s-one", 10)
