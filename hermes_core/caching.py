"""Caches a long-running process keeps of what it derives from plain data: the hashable key of
a value made of mappings, lists and scalars, and a bounded map that forgets what was used least
recently."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

V = TypeVar("V")


def frozen(value: Any) -> Hashable | None:
    """``value`` (overrides: mappings, lists and scalars) as a hashable key, ``None`` when
    some part of it is not plain data."""
    if isinstance(value, Mapping):
        items = [(repr(k), frozen(v)) for k, v in value.items()]
        return None if any(v is None for _, v in items) else ("{", tuple(sorted(items)))
    if isinstance(value, list | tuple):
        parts = tuple(frozen(v) for v in value)
        return None if any(p is None for p in parts) else ("[", parts)
    if value is None or isinstance(value, str | int | float | bool | Path):
        return (type(value).__name__, value)
    return None


class RecentlyUsed(Generic[V]):
    """At most ``size`` values by key, thread-safe; when full, the one used least recently
    goes (a gateway's busiest people keep theirs however many others come and go)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> V | None:
        """The value of ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def keep(self, key: Hashable, value: V) -> V:
        """Keep ``value`` for ``key`` unless one is kept already; return the kept one."""
        with self._lock:
            known = self._items.get(key)
            if known is not None:
                self._items.move_to_end(key)
                return known
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
            return value

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._items.clear()
