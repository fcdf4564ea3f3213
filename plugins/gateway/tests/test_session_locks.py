"""One turn at a time per session among gateways that share a session store: two gateways on
one PostgreSQL store (as on two machines) never run two turns of one session at once, through
the store's own lock; without a lock they would. The fallback lock files, for a store that
holds no lock, serve the processes of one machine and are removed when let go."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_gateway import InboundMessage
from hermes_gateway.core import GatewayCore
from hermes_gateway.serve import build
from hermes_gateway.session_locks import SessionLocks, shares_sessions

from hermes_core.testing import MemorySessionStore, SQLiteSessionStore
from hermes_core.testing.services import fresh_database
from hermes_hookspecs import AgentOutcome, AgentTask, SessionStore

START_HINT = "start one with: bash .ci/services.sh start postgres"


class Recorder:
    """A runner whose turns take ``seconds`` each and are recorded as (session, start, end,
    gateway)."""

    def __init__(self, name: str, turns: list[tuple[str, float, float, str]], seconds: float):
        self.name = name
        self.turns = turns
        self.seconds = seconds

    def run(self, task: AgentTask) -> AgentOutcome:
        started = time.monotonic()
        time.sleep(self.seconds)
        self.turns.append((task.session_id or "", started, time.monotonic(), self.name))
        return AgentOutcome(session_id=task.session_id or "", text="done", status="completed")


class Unconnected:
    """An adapter that is never connected: the tests call the gateway directly."""


def _config(**store: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "gateway": {"platforms": {"chat": {"adapter": "fake", "allow_all": True}}}
    }
    if store:
        config["store"] = store
    return config


def _gateway(
    home: Path,
    config: dict[str, Any],
    runner: Recorder,
    store: SessionStore | None,
) -> GatewayCore:
    return build(
        home,
        config,
        runner,
        {"fake": lambda name, options: Unconnected()},  # type: ignore[dict-item]
        lambda line: None,
        session_store=(lambda: store) if store is not None else None,
    )


def _race(gateways: list[GatewayCore], session_id: str, each: int) -> None:
    """``each`` turns of ``session_id`` asked of every gateway at once."""

    async def main() -> None:
        asks = [
            gateway.converse(
                InboundMessage(platform="chat", chat_id="c1", user_id="u1", text=f"turn {n}"),
                session_id=session_id,
            )
            for n in range(each)
            for gateway in gateways
        ]
        outcomes = await asyncio.gather(*asks)
        assert {o.status for o in outcomes} == {"completed"}, outcomes

    try:
        asyncio.run(main())
    finally:
        for gateway in gateways:
            asyncio.run(gateway.close(5))


def _overlaps(turns: list[tuple[str, float, float, str]]) -> int:
    """How many turns started before the one before them ended."""
    ordered = sorted(turns, key=lambda turn: turn[1])
    return sum(1 for a, b in zip(ordered, ordered[1:], strict=False) if b[1] < a[2])


# --- a PostgreSQL server ------------------------------------------------------------------------


@pytest.fixture
def postgres_database(postgres_admin_url: str) -> Iterator[str]:
    """The URL of a fresh database on the test server (dropped afterwards)."""
    pytest.importorskip("hermes_store_postgres")
    with fresh_database(postgres_admin_url) as url:
        yield url


# --- the tests ----------------------------------------------------------------------------------


def test_two_gateways_on_one_postgres_store_run_one_turn_of_a_session_at_a_time(
    tmp_path: Path, postgres_database: str
) -> None:
    """Two gateways with homes of their own (two machines) and a store each on one database:
    the turns of one session, asked of both at once, run one after the other; without the
    lock (a gateway that believes itself alone) they overlap."""
    from hermes_store_postgres.store import PostgresSessionStore

    turns: list[tuple[str, float, float, str]] = []
    stores = [PostgresSessionStore(postgres_database) for _ in range(2)]
    try:
        config = _config(url=postgres_database)
        gateways = [
            _gateway(tmp_path / name, config, Recorder(name, turns, 0.15), store)
            for name, store in zip(("a", "b"), stores, strict=True)
        ]
        assert all(g.session_locks is not None for g in gateways)
        _race(gateways, "session_shared", each=3)
        assert len(turns) == 6 and {t[3] for t in turns} == {"a", "b"}
        assert _overlaps(turns) == 0, sorted(turns, key=lambda t: t[1])
        # the store's lock was held, not a lock file of either home
        assert not any((tmp_path / name / "gateway" / "locks").exists() for name in "ab")

        unlocked: list[tuple[str, float, float, str]] = []
        alone = [
            _gateway(tmp_path / f"alone-{name}", _config(), Recorder(name, unlocked, 0.15), s)
            for name, s in zip(("a", "b"), stores, strict=True)
        ]
        assert all(g.session_locks is None for g in alone)
        _race(alone, "session_unlocked", each=3)
        assert _overlaps(unlocked) >= 1, "without the lock, the turns would overlap"
    finally:
        for store in stores:
            store.close()


def test_two_gateways_on_one_sqlite_store_hold_its_lock_files_beside_it(tmp_path: Path) -> None:
    """With several workers on SQLite, the turn's lock is the store's (``sessions.db.locks``),
    whose files are gone once the turns are over."""
    turns: list[tuple[str, float, float, str]] = []
    stores = [SQLiteSessionStore(tmp_path / "sessions.db") for _ in range(2)]
    config = _config()
    config["gateway"]["workers"] = 2
    gateways = [
        _gateway(tmp_path, config, Recorder(name, turns, 0.1), store)
        for name, store in zip(("a", "b"), stores, strict=True)
    ]
    _race(gateways, "session_sqlite", each=3)
    assert len(turns) == 6 and _overlaps(turns) == 0
    assert os.listdir(tmp_path / "sessions.db.locks") == []
    assert not (tmp_path / "gateway" / "locks").exists()
    for store in stores:
        store.close()


def test_a_store_without_a_lock_falls_back_to_lock_files_that_go_away(tmp_path: Path) -> None:
    """Two gateways sharing sessions through a store that holds no lock take turns through
    lock files in ``gateway/locks``, removed when let go."""
    turns: list[tuple[str, float, float, str]] = []
    config = _config()
    config["gateway"]["workers"] = 2
    store = MemorySessionStore()
    gateways = [_gateway(tmp_path, config, Recorder(n, turns, 0.1), store) for n in ("a", "b")]
    _race(gateways, "session_fallback", each=3)
    assert len(turns) == 6 and _overlaps(turns) == 0
    assert os.listdir(tmp_path / "gateway" / "locks") == []


def test_who_shares_the_sessions() -> None:
    assert not shares_sessions({}, 1)
    assert not shares_sessions({"store": {"url": "sqlite:///srv/hermes"}}, 1)
    assert shares_sessions({"store": {"url": "sqlite:///srv/hermes"}}, 2)
    assert shares_sessions({"store": {"url": "postgresql://db/hermes"}}, 1)
    assert shares_sessions({"store": {"url": "redis://cache"}}, 1)
    assert not shares_sessions({"store": None}, 1)


def test_fallback_lock_files_under_many_threads_one_holder_and_no_file_left(
    tmp_path: Path,
) -> None:
    """Threads each with locks of their own (as processes would have) take one session's
    lock in turn, and no lock file is left once they are done."""
    folder = tmp_path / "locks"
    never = threading.Event()
    guard = threading.Lock()
    inside: list[int] = []
    most = 0
    held = 0

    def turns(number: int) -> None:
        nonlocal most, held
        locks = SessionLocks(folder)
        for _ in range(20):
            with locks.hold("session_x", never) as got:
                assert got
                with guard:
                    inside.append(number)
                    most, held = max(most, len(inside)), held + 1
                time.sleep(0.0005)
                with guard:
                    inside.remove(number)

    threads = [threading.Thread(target=turns, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert most == 1 and held == 160
    assert os.listdir(folder) == []
