"""Fixtures of the work queue's tests: a real PostgreSQL server (``.ci/services.sh start
postgres`` writes its URL to ``$HERMES_SERVICES_DIR/env``) and a fresh database per test,
dropped afterwards. Without a server the tests fail under CI and are skipped elsewhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # team_kit, shared with benchmarks/team.py


@pytest.fixture(scope="session")
def postgres_url(postgres_admin_url: str) -> str:
    """The test server's ``postgres`` database, as a superuser."""
    return postgres_admin_url


@pytest.fixture(scope="module")
def module_database(postgres_database: str) -> str:
    """A fresh, empty database for the tests of one module (its URL), dropped afterwards."""
    return postgres_database
