"""The PostgreSQL store's session lock (``hold_session``) with real processes on a real server:
processes racing for one session hold it one at a time; a holder killed with SIGKILL holds
nothing any more; a released lock leaves nothing held on the server; held locks never take
the connections the store's calls need; too many held sessions, or a cancel while waiting for
a connection, end the wait in one line. (The threads' side is the shared suite's.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from hermes_store_postgres.connections import PostgresStoreError
from hermes_store_postgres.schema import MIGRATION_LOCK
from hermes_store_postgres.session_locks import lock_key
from hermes_store_postgres.store import PostgresSessionStore

from hermes_core.testing.store_suite import SessionStoreBehaviour
from hermes_hookspecs import LockingSessionStore, SessionInfo

takes_lock = SessionStoreBehaviour.takes_lock

RACER = r"""
import os, sys, threading, time
from hermes_store_postgres.store import PostgresSessionStore

url, log, go, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = PostgresSessionStore(url)
never = threading.Event()
out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)

def turns(number):
    me = f"{os.getpid()}.{number}"
    for _ in range(rounds):
        with store.hold_session("s-race", never) as held:
            assert held
            os.write(out, f"in {me}\n".encode())
            time.sleep(0.002)
            os.write(out, f"out {me}\n".encode())

threads = [threading.Thread(target=turns, args=(n,)) for n in range(3)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
store.close()
"""

HOLDER = r"""
import sys, threading, time
from hermes_store_postgres.store import PostgresSessionStore

store = PostgresSessionStore(sys.argv[1])
with store.hold_session(sys.argv[2], threading.Event()) as held:
    print(f"held {held}", flush=True)
    time.sleep(600)
"""


def _advisory_locks(url: str) -> int:
    """How many advisory locks are held in the database of ``url`` (by anyone)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone()
        assert row is not None
        return int(row[0])


def test_the_store_is_a_locking_store(pg_store: PostgresSessionStore) -> None:
    assert isinstance(pg_store, LockingSessionStore)


def test_processes_racing_for_one_session_hold_it_one_at_a_time(
    database: str, tmp_path: Path
) -> None:
    """Three processes of three threads each take one session's lock ten times each: never
    two holders at once, every hold happens, nothing stays held on the server."""
    log, go = tmp_path / "holds.log", tmp_path / "go"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, database, str(log), str(go), "10"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
        go.touch()
        for racer in racers:
            assert racer.wait(120) == 0
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * 3 * 3 * 10
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):
        holder = enter.removeprefix("in ")
        assert enter.startswith("in ") and leave == f"out {holder}", (enter, leave)
    assert len({line.split()[1].split(".")[0] for line in lines}) == 3
    assert _advisory_locks(database) == 0


def test_a_holder_killed_with_sigkill_holds_nothing(
    database: str, pg_store: PostgresSessionStore
) -> None:
    """While another process holds a session, this one waits for it (another session is
    free); once that process is killed with SIGKILL, the server ends its lock with its
    connection and this one gets it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, database, "s-killed"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held True\n"
        assert not takes_lock(pg_store, "s-killed", 0.5)
        assert takes_lock(pg_store, "s-other", 10)
        got: list[bool] = []
        cancel = threading.Event()

        def wait() -> None:
            with pg_store.hold_session("s-killed", cancel) as held:
                got.append(held)

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)
        assert got == []
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
        waiter.join(20)
        if waiter.is_alive():
            cancel.set()
            waiter.join(10)
        assert got == [True]
    finally:
        if holder.poll() is None:
            holder.kill()
    assert _advisory_locks(database) == 0


def test_a_cancel_while_another_process_holds_it_yields_false(
    database: str, pg_store: PostgresSessionStore
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, database, "s-busy"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held True\n"
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        with pg_store.hold_session("s-busy", cancel) as held:
            assert held is False
        assert 0.25 <= time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait(30)
    assert takes_lock(pg_store, "s-busy", 10)


def test_a_released_lock_goes_back_to_the_pool_holding_nothing(
    database: str, pg_store: PostgresSessionStore
) -> None:
    never = threading.Event()
    with pg_store.hold_session("s-one", never) as held:
        assert held and _advisory_locks(database) == 1
        with pg_store.hold_session("s-two", never) as other:
            assert other and _advisory_locks(database) == 2
        assert _advisory_locks(database) == 1
    assert _advisory_locks(database) == 0
    with pytest.raises(RuntimeError):
        with pg_store.hold_session("s-one", never):
            raise RuntimeError("the turn failed")
    assert _advisory_locks(database) == 0


def test_held_sessions_leave_the_connections_of_the_calls_free(
    open_stores: Callable[..., PostgresSessionStore],
) -> None:
    """A store with one connection for its calls holds three sessions at once, and each
    holder still writes its session: the locks have connections of their own."""
    store = open_stores(max_connections=1, timeout=5)
    never = threading.Event()
    failures: list[BaseException] = []
    inside = threading.Barrier(3, timeout=30)

    def turn(session_id: str) -> None:
        try:
            with store.hold_session(session_id, never) as held:
                assert held
                inside.wait()  # all three held at once
                store.create_session(SessionInfo(id=session_id))
                store.append_message(session_id, {"role": "user", "content": session_id})
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=turn, args=(f"s-{n}",)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    assert [store.get_messages(f"s-{n}")[0]["content"] for n in range(3)] == ["s-0", "s-1", "s-2"]


def test_more_held_sessions_than_allowed_wait_then_fail_in_one_line(
    open_stores: Callable[..., PostgresSessionStore],
) -> None:
    store = open_stores(max_held_sessions=1, timeout=1)
    never = threading.Event()
    with store.hold_session("s-held", never) as held:
        assert held
        failures: list[BaseException] = []

        def second() -> None:
            try:
                with store.hold_session("s-second", never):
                    pass
            except BaseException as exc:
                failures.append(exc)

        started = time.monotonic()
        thread = threading.Thread(target=second)
        thread.start()
        thread.join(30)
        assert 0.9 <= time.monotonic() - started < 10
        assert len(failures) == 1 and isinstance(failures[0], PostgresStoreError)
        message = str(failures[0])
        assert "\n" not in message and "holds at most 1 sessions at once" in message
        assert "postgresql://" in message and "password" not in message.lower()
        cancel = threading.Event()
        threading.Timer(0.2, cancel.set).start()
        with store.hold_session("s-third", cancel) as third:
            assert third is False  # cancelled while waiting for a connection
    assert takes_lock(store, "s-second", 10)


def test_lock_keys_are_64_bit_and_never_the_migrations() -> None:
    keys = {lock_key(f"session_{n}") for n in range(1000)}
    assert len(keys) == 1000
    assert all(-(2**63) <= key < 2**63 for key in keys)
    assert lock_key("s") == lock_key("s") and MIGRATION_LOCK not in keys


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_holds_on_connections_of_its_own(
    database: str, pg_store: PostgresSessionStore
) -> None:
    """A child forked after the parent held a lock holds and lets go on its own connections;
    the parent's lock pool keeps working."""
    with pg_store.hold_session("s-parent", threading.Event()) as held:
        assert held
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            with pg_store.hold_session("s-child", threading.Event()) as child_held:
                code = 0 if child_held and _advisory_locks(database) == 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert takes_lock(pg_store, "s-child", 10) and takes_lock(pg_store, "s-parent", 10)
    assert _advisory_locks(database) == 0
