"""Fixtures of the PostgreSQL store's tests: a real PostgreSQL server, a fresh database per test
module (dropped afterwards), and stores on it whose data is thrown away after each test.

``.ci/services.sh start postgres`` makes a throwaway cluster and writes
``HERMES_TEST_POSTGRES_URL`` (a superuser's URL of its ``postgres`` database) to
``$HERMES_SERVICES_DIR/env`` (default ``/tmp/hermes-services/env``); ``.ci/run`` also exports it.
The fixtures take the variable from the environment, else from that file. Without a server the
tests fail under CI (``CI=true``) and are skipped elsewhere, with the command that starts one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from hermes_store_postgres.store import PostgresSessionStore

from hermes_core.testing.services import fresh_database


@pytest.fixture(scope="session")
def postgres_url(postgres_admin_url: str) -> str:
    """The URL of the test server's ``postgres`` database, as a superuser."""
    return postgres_admin_url


@pytest.fixture(scope="session")
def make_database(postgres_url: str) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty databases (their URLs), all dropped after the test session."""
    with contextlib.ExitStack() as made:

        def make() -> str:
            return made.enter_context(fresh_database(postgres_url))

        yield make


@pytest.fixture(scope="module")
def database(make_database: Callable[[], str]) -> str:
    """A fresh database for the tests of one module, its schema made by opening a store."""
    url = make_database()
    PostgresSessionStore(url).close()
    return url


def empty(url: str) -> None:
    """Remove every session and message of the store at ``url`` (the schema stays)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE messages, sessions, usage_records, key_state RESTART IDENTITY")


@pytest.fixture(scope="session")
def wipe() -> Callable[[str], None]:
    """The function that removes every session and message of the store at a URL."""
    return empty


@pytest.fixture
def pg_store(database: str) -> Iterator[PostgresSessionStore]:
    """A store on the module's database, emptied after the test."""
    store = PostgresSessionStore(database)
    try:
        yield store
    finally:
        store.close()
        empty(database)


@pytest.fixture
def open_stores(database: str) -> Iterator[Callable[..., PostgresSessionStore]]:
    """A factory of more stores on the module's database (as other processes would have),
    closed after the test; the data is thrown away too."""
    made: list[PostgresSessionStore] = []

    def make(**kwargs: Any) -> PostgresSessionStore:
        store = PostgresSessionStore(database, **kwargs)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
    empty(database)
