"""The session store writes of a step, kept until the step completes and then committed
together: in one transaction when the store offers ``batch()`` (the SQLite store does), else
one call after the other.

The loop flushes before every model call and tool batch, and at the end of a turn, so every
completed step is in the store before the next one starts, at the cost of one transaction per
step instead of one per message, counter and title.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from hermes_hookspecs import SessionStore

log = logging.getLogger("hermes.agent")

__all__ = ["StoreWrites"]


class StoreWrites:
    """Calls of session store methods, queued by :meth:`add` and made by :meth:`flush`.

    :param store: the session store.
    :param warn: told, in one line, of every write that failed (the conversation goes on).
    """

    def __init__(self, store: SessionStore, warn: Callable[[str], None]) -> None:
        self.store = store
        self.warn = warn
        self._pending: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._lock = threading.Lock()  # closing the agent may flush while a turn adds

    def add(self, method: str, *args: Any, **kwargs: Any) -> None:
        """Queue the call ``store.method(*args, **kwargs)``."""
        with self._lock:
            self._pending.append((method, args, kwargs))

    def flush(self) -> None:
        """Make the queued calls, in order, together (see the module's docstring); failures
        are logged and passed to ``warn``, never raised."""
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return
        batch = getattr(self.store, "batch", None)
        try:
            with batch() if batch is not None else contextlib.nullcontext():
                for method, args, kwargs in pending:
                    self._call(method, args, kwargs)
        except Exception as exc:  # the batch's transaction: nothing of it was written
            self._failed("batch", exc)

    def _call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            getattr(self.store, method)(*args, **kwargs)
        except Exception as exc:
            self._failed(method, exc)

    def _failed(self, method: str, exc: Exception) -> None:
        log.error("session store %s failed: %s", method, exc)
        self.warn(f"warning: could not save the session ({exc})")
