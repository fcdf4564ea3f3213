"""One turn of a session at a time, also between the chat and other processes: a chat's turn
holds its session's lock (:class:`~hermes_hookspecs.LockingSessionStore`) while it runs, so a
``hermes chat --resume`` and a gateway turn (or a second chat) of the same session take turns
instead of interleaving their messages. A store without locks holds nothing."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from hermes_hookspecs import LockingSessionStore, SessionStore

__all__ = ["WAIT_NOTICE_AFTER", "hold_turn"]

WAIT_NOTICE_AFTER = 0.5
"""Seconds of waiting for another process's turn before the person is told."""


@contextlib.contextmanager
def hold_turn(
    store: SessionStore,
    session_id: str,
    cancel: threading.Event,
    notice: Callable[[str], None],
) -> Iterator[bool]:
    """Hold ``session_id``'s turn lock while the block runs; the block gets ``False`` (holding
    nothing: do not run the turn) when ``cancel`` was set while waiting. ``notice`` is told once
    when the wait lasts longer than :data:`WAIT_NOTICE_AFTER`."""
    if not isinstance(store, LockingSessionStore):
        yield True
        return
    waiting = threading.Event()

    def tell() -> None:
        if not waiting.wait(WAIT_NOTICE_AFTER):
            notice(f"waiting for another turn of session {session_id} to end (Ctrl-C: give up)")

    teller = threading.Thread(target=tell, name="hermes-turn-wait", daemon=True)
    teller.start()
    try:
        with store.hold_session(session_id, cancel) as held:
            waiting.set()
            yield held
    finally:
        waiting.set()
