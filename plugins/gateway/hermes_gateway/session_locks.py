"""One turn at a time per session across the processes (and machines) that share the session
store: with several workers (``gateway.workers``), or with a store that other gateways may use
too (``store.url`` naming anything but SQLite). Within one process the gateway's session lanes
already queue the turns.

The lock is the store's own when it has one (a :class:`~hermes_hookspecs.LockingSessionStore`:
lock files beside ``sessions.db``, an advisory lock in PostgreSQL), held with
:meth:`~hermes_hookspecs.LockingSessionStore.hold_session`. For a store without it,
:class:`SessionLocks` is the fallback: an advisory lock (``flock``) on a file per session in
``$HERMES_HOME/gateway/locks``, which serves the processes of one machine only.

A fallback lock file exists only while its session is held or waited for: the holder removes
it as it lets go (:mod:`hermes_runtime.lock_files` says why that is safe).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_runtime.lock_files import LockFiles


def shares_sessions(config: Mapping[str, Any], workers: int) -> bool:
    """Whether other processes may run turns of this gateway's sessions, so that each turn
    must hold its session's lock: with several ``workers``, or when ``store.url`` names a
    store other than SQLite (other gateways, on other machines too, may share it)."""
    store = config.get("store")
    url = store.get("url") if isinstance(store, Mapping) else None
    return workers > 1 or bool(url and not str(url).startswith("sqlite:"))


class SessionLocks(LockFiles):
    """The lock files of the sessions in ``folder`` (made private on first use), for a store
    that holds no lock itself (:class:`hermes_runtime.lock_files.LockFiles`: each file is
    removed when its lock is let go)."""
