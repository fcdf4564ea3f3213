"""The real services tests run against (a Docker engine, an OpenSSH server, a PostgreSQL
cluster), as ``.ci/services.sh start`` leaves them: it writes the variables that locate them
(``DOCKER_HOST``, ``HERMES_TEST_*``) to ``$HERMES_SERVICES_DIR/env`` (default
``/tmp/hermes-services/env``), and ``.ci/run`` also exports them. Variables of the process
environment win over the file.

A test whose service is missing fails under CI (``CI=true``) and is skipped elsewhere, with the
command that starts it (:func:`unavailable`). The pytest plugin of the kit offers
``postgres_admin_url`` and ``postgres_database`` fixtures built on these functions.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

__all__ = [
    "START_HINT",
    "fresh_database",
    "in_ci",
    "postgres_admin_url",
    "service_variables",
    "unavailable",
    "with_database",
]

START_HINT = "start it with: bash .ci/services.sh start"
"""What starts the services (``… start postgres`` starts one)."""


def in_ci() -> bool:
    """Whether the tests run under CI (``CI`` set to a true value)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def service_variables() -> dict[str, str]:
    """``HERMES_TEST_*`` and ``DOCKER_HOST`` from the services file, overridden by the process
    environment."""
    values: dict[str, str] = {}
    path = Path(os.environ.get("HERMES_SERVICES_DIR") or "/tmp/hermes-services") / "env"
    if path.is_file():
        for line in path.read_text().splitlines():
            words = shlex.split(line)
            if len(words) == 2 and words[0] == "export" and "=" in words[1]:
                key, value = words[1].split("=", 1)
                values[key] = value
    for key, value in os.environ.items():
        if key.startswith("HERMES_TEST_") or key == "DOCKER_HOST":
            values[key] = value
    return values


def unavailable(reason: str, hint: str = START_HINT) -> NoReturn:
    """Fail the test under CI, skip it elsewhere, saying ``reason`` and ``hint``."""
    import pytest

    message = f"{reason}; {hint}"
    if in_ci():
        pytest.fail(f"CI needs this service: {message}", pytrace=False)
    pytest.skip(message)


def postgres_admin_url() -> str:
    """The URL of the test cluster's ``postgres`` database, as a superuser, once it answers;
    :func:`unavailable` when there is none."""
    hint = "start one with: bash .ci/services.sh start postgres"
    url = service_variables().get("HERMES_TEST_POSTGRES_URL")
    if not url:
        unavailable("no test PostgreSQL server configured (HERMES_TEST_POSTGRES_URL unset)", hint)
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        unavailable(f"the test PostgreSQL server does not answer ({type(exc).__name__})", hint)
    return url


def with_database(url: str, name: str) -> str:
    """``url`` with its database replaced by ``name``."""
    base, _, rest = url.rpartition("/")
    query = rest.partition("?")[2]
    return f"{base}/{name}" + (f"?{query}" if query else "")


@contextlib.contextmanager
def fresh_database(admin_url: str, prefix: str = "hermes_test") -> Iterator[str]:
    """A new, empty database on the cluster of ``admin_url`` (its URL), dropped afterwards
    whatever its connections are doing."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
