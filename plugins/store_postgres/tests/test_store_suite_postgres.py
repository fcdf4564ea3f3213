"""The session store behaviour suite (hermes_core.testing.store_suite), every check, against the
PostgreSQL store on a real server."""

from __future__ import annotations

import pytest
from hermes_store_postgres.store import PostgresSessionStore

from hermes_core.testing.store_suite import SessionStoreBehaviour


class TestPostgresStore(SessionStoreBehaviour):
    @pytest.fixture
    def store(self, pg_store: PostgresSessionStore) -> PostgresSessionStore:
        return pg_store
