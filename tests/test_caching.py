"""The caches a long-running process keeps: keys of plain data, and the least recently used
value going first."""

from __future__ import annotations

import threading
from pathlib import Path

from hermes_core.caching import RecentlyUsed, frozen


def test_keys_of_plain_data_and_none_for_anything_else() -> None:
    assert frozen({"a": [1, 2], "b": {"c": Path("/x")}}) == frozen(
        {"b": {"c": Path("/x")}, "a": [1, 2]}
    )
    assert frozen({"a": [1, 2]}) != frozen({"a": [2, 1]})
    assert frozen({"a": object()}) is None and frozen([1, {2}]) is None


def test_the_least_recently_used_goes_first() -> None:
    cache: RecentlyUsed[str] = RecentlyUsed(2)
    cache.keep("a", "A")
    cache.keep("b", "B")
    assert cache.get("a") == "A"  # a is now the most recent
    cache.keep("c", "C")
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    assert cache.keep("a", "other") == "A" and len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_threads_keeping_one_key_share_one_value() -> None:
    cache: RecentlyUsed[object] = RecentlyUsed(8)
    kept: list[object] = []
    threads = [
        threading.Thread(target=lambda: kept.append(cache.keep("k", object()))) for _ in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(v) for v in kept}) == 1
