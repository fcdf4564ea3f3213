"""The session store behaviour suite (hermes_core.testing.store_suite) against the stores of
the core: the SQLite store (every check) and the in-memory one (what it offers). The
PostgreSQL store runs it in plugins/store_postgres/tests.

Then the SQLite store's session lock across real processes: processes and threads racing for
one session hold it one at a time and leave no lock file; a holder killed with SIGKILL holds
nothing any more."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.session_store import SessionStoreError, SQLiteSessionStore
from hermes_core.session_store.memory_store import MemorySessionStore
from hermes_core.session_store.session_locks import lock_name
from hermes_core.testing.store_suite import SessionStoreBehaviour


class TestSQLiteStore(SessionStoreBehaviour):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteSessionStore]:
        store = SQLiteSessionStore(tmp_path / "sessions.db")
        yield store
        store.close()


class TestMemoryStore(SessionStoreBehaviour):
    # It keeps whatever it is given: no titles, no counters, and a write to a session that
    # was never created makes one.
    refuses_unknown_sessions = False
    titles_from_first_user_message = False
    counts_in_metadata = False

    @pytest.fixture
    def store(self) -> MemorySessionStore:
        return MemorySessionStore()


# --- the SQLite store's session lock across processes -------------------------------------------

RACER = r"""
import os, sys, threading, time
from hermes_core.session_store import SQLiteSessionStore

db, log, go, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = SQLiteSessionStore(db)
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
            time.sleep(0.0005)
            os.write(out, f"out {me}\n".encode())

threads = [threading.Thread(target=turns, args=(n,)) for n in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""

HOLDER = r"""
import sys, threading, time
from hermes_core.session_store import SQLiteSessionStore

store = SQLiteSessionStore(sys.argv[1])
with store.hold_session(sys.argv[2], threading.Event()) as held:
    print(f"held {held}", flush=True)
    time.sleep(600)
"""


def test_processes_and_threads_racing_for_one_session_hold_it_one_at_a_time(tmp_path: Path):
    """Four processes of four threads each take one session's lock 25 times each: never two
    holders at once, every hold happens, and no lock file is left afterwards."""
    db, log, go = tmp_path / "sessions.db", tmp_path / "holds.log", tmp_path / "go"
    SQLiteSessionStore(db).close()
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(db), str(log), str(go), "25"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
        go.touch()  # all at once
        for racer in racers:
            assert racer.wait(120) == 0
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * 4 * 4 * 25
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):
        holder = enter.removeprefix("in ")
        assert enter.startswith("in ") and leave == f"out {holder}", (enter, leave)
    assert len({line.split()[1].split(".")[0] for line in lines}) == 4
    assert os.listdir(tmp_path / "sessions.db.locks") == []


def test_the_lock_of_a_killed_holder_is_free_and_its_file_goes_with_the_next_holder(
    tmp_path: Path,
):
    """A process killed (SIGKILL) while it holds a session's lock holds it no more; the file
    it left is removed when the next holder lets go. The folder is private."""
    db = tmp_path / "sessions.db"
    store = SQLiteSessionStore(db)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), "s-killed"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held True\n"
        assert not SessionStoreBehaviour.takes_lock(store, "s-killed", 0.3)
        assert SessionStoreBehaviour.takes_lock(store, "s-other", 5)
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
        assert len(os.listdir(tmp_path / "sessions.db.locks")) == 1  # left by the dead holder
        assert SessionStoreBehaviour.takes_lock(store, "s-killed", 10)
    finally:
        if holder.poll() is None:
            holder.kill()
        store.close()
    assert os.listdir(tmp_path / "sessions.db.locks") == []
    assert stat.S_IMODE(os.stat(tmp_path / "sessions.db.locks").st_mode) == 0o700


def test_a_lock_file_that_is_a_symbolic_link_is_refused_in_one_line(tmp_path: Path):
    """A symbolic link where a lock file belongs is not followed: the hold fails, saying so."""
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    folder = tmp_path / "sessions.db.locks"
    folder.mkdir(mode=0o700)
    (folder / lock_name("s-link")).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SessionStoreError, match="it is a symbolic link$"):
        with store.hold_session("s-link", threading.Event()):
            pass
    assert not (tmp_path / "elsewhere").exists()
    store.close()
