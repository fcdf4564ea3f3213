"""The clients a process keeps per key."""

from __future__ import annotations

import threading

from hermes_runtime.kept_clients import KeptClients


def test_one_client_per_key_made_by_the_first_caller() -> None:
    kept: KeptClients[object] = KeptClients()
    made: list[str] = []

    def make(name: str) -> object:
        made.append(name)
        return object()

    first = kept.get(("a", 1), lambda: make("a"))
    assert kept.get(("a", 1), lambda: make("again")) is first
    assert kept.get(("b", 1), lambda: make("b")) is not first
    assert made == ["a", "b"]


def test_none_is_kept_too() -> None:
    kept: KeptClients[object] = KeptClients()
    calls: list[int] = []
    assert kept.get("proxied", lambda: calls.append(1)) is None
    assert kept.get("proxied", lambda: calls.append(2)) is None
    assert calls == [1]


def test_past_the_limit_the_oldest_key_is_dropped() -> None:
    kept: KeptClients[str] = KeptClients(limit=2)
    kept.get("a", lambda: "a1")
    kept.get("b", lambda: "b1")
    kept.get("c", lambda: "c1")
    assert kept.get("b", lambda: "b2") == "b1"
    assert kept.get("a", lambda: "a2") == "a2"


def test_clear_forgets_every_client() -> None:
    kept: KeptClients[str] = KeptClients()
    kept.get("a", lambda: "a1")
    kept.clear()
    assert kept.get("a", lambda: "a2") == "a2"


def test_threads_asking_at_once_share_one_client() -> None:
    kept: KeptClients[object] = KeptClients()
    made: list[object] = []
    got: list[object | None] = []
    start = threading.Barrier(8)

    def make() -> object:
        made.append(object())
        return made[-1]

    def ask() -> None:
        start.wait()
        got.append(kept.get("k", make))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and all(client is made[0] for client in got)
