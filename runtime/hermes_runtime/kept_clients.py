"""Clients a process keeps, one per key (an endpoint, an API key and a timeout), for every agent
it makes: building one costs its TLS set-up and each keeps its own connections."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["KeptClients"]

T = TypeVar("T")


class KeptClients(Generic[T]):
    """The clients of a process by key: the first caller of :meth:`get` makes one, later callers
    share it; ``None`` (no client of this kind for that key) is kept too. Past ``limit`` keys the
    oldest is dropped, not closed: whoever still uses it keeps it alive. Thread-safe."""

    def __init__(self, limit: int = 16) -> None:
        self.limit = limit
        self._kept: dict[Hashable, T | None] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], T | None]) -> T | None:
        """The client kept for ``key``, made by ``make`` (under the lock) when there is none."""
        with self._lock:
            if key in self._kept:
                return self._kept[key]
            client = make()
            if len(self._kept) >= self.limit:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = client
            return client

    def clear(self) -> None:
        """Forget every kept client (the next :meth:`get` of each key makes a new one)."""
        with self._lock:
            self._kept.clear()
