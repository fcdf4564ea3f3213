"""The session store behaviour suite (hermes_core.testing.store_suite) against the stores of
the core: the SQLite store (every check) and the in-memory one (what it offers). The
PostgreSQL store runs it in plugins/store_postgres/tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.session_store import SQLiteSessionStore
from hermes_core.session_store.memory_store import MemorySessionStore
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
