"""Fixtures of the work queue's tests: a real PostgreSQL server (``.ci/services.sh start
postgres`` writes its URL to ``$HERMES_SERVICES_DIR/env``) and a fresh database per test,
dropped afterwards. Without a server the tests fail under CI and are skipped elsewhere."""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # team_kit, shared with benchmarks/team.py

START_HINT = "start one with: bash .ci/services.sh start postgres"


def _services_url() -> str | None:
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


def _unavailable(reason: str) -> None:
    message = f"{reason}; {START_HINT}"
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
        pytest.fail(f"CI needs this service: {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The test server's ``postgres`` database, as a superuser."""
    url = _services_url()
    if not url:
        _unavailable("no test PostgreSQL server configured (HERMES_TEST_POSTGRES_URL unset)")
        raise AssertionError("unreachable")
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        _unavailable(f"the test PostgreSQL server does not answer ({type(exc).__name__})")
    return url


@pytest.fixture(scope="module")
def module_database(postgres_url: str) -> Iterator[str]:
    """A fresh, empty database for the tests of one module (its URL), dropped afterwards."""
    name = f"hermes_queue_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, rest = postgres_url.rpartition("/")
    query = rest.partition("?")[2]
    yield f"{base}/{name}" + (f"?{query}" if query else "")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
