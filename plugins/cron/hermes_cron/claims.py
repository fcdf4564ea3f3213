"""One run per due time across machines: before a process runs a due job, it claims the job's
due time in the shared PostgreSQL database (``store.url``, the team's store), and only the
process whose claim is recorded runs it.

Every machine keeps its own copy of the jobs (the same ``jobs.json`` deployed to each, or a
shared folder); each daemon moves its own next run past the due time whatever the claim says,
so a job missed during downtime still runs once, by the first process that looks. A claim
counts as taken for a due time when the job's last claim was for that same time, or was made
less than :data:`GRACE` seconds before it (an interval schedule is counted from each machine's
own tick, so the machines' due times differ by up to a tick). Without a PostgreSQL store,
nothing here is used and psycopg is not imported.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any, Protocol

GRACE = 30.0
"""Seconds before a due time within which an earlier claim of the job still counts for it."""
TABLE = """
CREATE TABLE IF NOT EXISTS hermes_cron_claims (
    job_key text PRIMARY KEY,
    due double precision NOT NULL,
    claimed_at double precision NOT NULL,
    host text NOT NULL
)
"""
CLAIM = """
INSERT INTO hermes_cron_claims AS c (job_key, due, claimed_at, host)
VALUES (%(key)s, %(due)s, %(now)s, %(host)s)
ON CONFLICT (job_key) DO UPDATE
    SET due = EXCLUDED.due, claimed_at = EXCLUDED.claimed_at, host = EXCLUDED.host
    WHERE c.due <> EXCLUDED.due AND c.claimed_at < EXCLUDED.due - %(grace)s
RETURNING job_key
"""


class ClaimError(RuntimeError):
    """The shared database could not say whether the run is ours (the job is not run)."""


class RunClaims(Protocol):
    """Decides which process runs a job for a due time."""

    def claim(self, key: str, due: float, now: float) -> bool:
        """Whether this process runs job ``key`` for ``due`` (no other one does); ``now`` is
        the tick's time (the machines' clocks agree, as their schedules already need).

        :raises ClaimError: it cannot be decided.
        """
        ...


class PostgresRunClaims:
    """Claims in the ``hermes_cron_claims`` table of the database at ``url``.

    :param url: a ``postgresql://`` URL.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.host = f"{socket.gethostname()}:{os.getpid()}"
        self._made = False

    def claim(self, key: str, due: float, now: float) -> bool:
        """See :meth:`RunClaims.claim`."""
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                if not self._made:
                    conn.execute(TABLE)
                    self._made = True
                arguments = {"key": key, "due": due, "now": now, "host": self.host, "grace": GRACE}
                return conn.execute(CLAIM, arguments).fetchone() is not None
        except psycopg.Error as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ClaimError(f"the shared database could not claim the run: {first}") from None


def run_claims(config: Mapping[str, Any]) -> RunClaims | None:
    """The claims of a team's set-up (``store.url`` or ``HERMES_STORE_URL`` naming PostgreSQL);
    ``None`` for one machine."""
    store = config.get("store")
    url = store.get("url") if isinstance(store, Mapping) else None
    url = url or os.environ.get("HERMES_STORE_URL", "")
    if isinstance(url, str) and url.startswith(("postgresql:", "postgres:")):
        return PostgresRunClaims(url)
    return None
