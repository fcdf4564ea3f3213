"""Fixtures of the PostgreSQL store's tests: a real PostgreSQL server, a fresh database per test
module (dropped afterwards), and stores on it whose data is thrown away after each test.

``.ci/services.sh start postgres`` makes a throwaway cluster and writes
``HERMES_TEST_POSTGRES_URL`` (a superuser's URL of its ``postgres`` database) to
``$HERMES_SERVICES_DIR/env`` (default ``/tmp/hermes-services/env``); ``.ci/run`` also exports it.
The fixtures take the variable from the environment, else from that file. Without a server the
tests fail under CI (``CI=true``) and are skipped elsewhere, with the command that starts one.
"""

from __future__ import annotations

import os
import shlex
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hermes_store_postgres.store import PostgresSessionStore

START_HINT = "start one with: bash .ci/services.sh start postgres"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> None:
    """Fail under CI, skip elsewhere."""
    message = f"{reason}; {START_HINT}"
    if in_ci():
        pytest.fail(f"CI needs this service: {message}", pytrace=False)
    pytest.skip(message)


def services_url() -> str | None:
    """``HERMES_TEST_POSTGRES_URL`` from the environment, else from the services file."""
    if os.environ.get("HERMES_TEST_POSTGRES_URL"):
        return os.environ["HERMES_TEST_POSTGRES_URL"]
    path = Path(os.environ.get("HERMES_SERVICES_DIR") or "/tmp/hermes-services") / "env"
    if path.is_file():
        for line in path.read_text().splitlines():
            words = shlex.split(line)
            if len(words) == 2 and words[0] == "export":
                key, _, value = words[1].partition("=")
                if key == "HERMES_TEST_POSTGRES_URL" and value:
                    return value
    return None


def with_database(url: str, name: str) -> str:
    """``url`` with its database replaced by ``name``."""
    base, _, rest = url.rpartition("/")
    query = rest.partition("?")[2]
    return f"{base}/{name}" + (f"?{query}" if query else "")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The URL of the test server's ``postgres`` database, as a superuser."""
    url = services_url()
    if not url:
        unavailable("no test PostgreSQL server configured (HERMES_TEST_POSTGRES_URL unset)")
        raise AssertionError("unreachable")
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        unavailable(f"the test PostgreSQL server does not answer ({type(exc).__name__})")
    return url


@pytest.fixture(scope="session")
def make_database(postgres_url: str) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty databases (their URLs), all dropped after the test session."""
    made: list[str] = []

    def make() -> str:
        name = f"hermes_test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        return with_database(postgres_url, name)

    yield make
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for name in made:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
