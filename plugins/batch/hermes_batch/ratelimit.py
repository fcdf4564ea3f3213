"""A rate limit per provider shared by every worker of a run (``--rate-limit PROVIDER=N``,
requests a minute): before each model call of a row, the worker takes the next free start
time of that provider from the run table and waits for it. The table is the one clock, so the
limit holds across processes, and across machines on PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_hookspecs import HermesError

from .table import RunTable

SESSION_PREFIX = "batch-"
"""The start of a batch row's session id: the calls the limit applies to."""

_active: RateLimiter | None = None


def parse_limits(values: Sequence[str]) -> dict[str, float]:
    """``PROVIDER=N`` pairs (``*`` for every provider) as requests a minute; a one-line
    :class:`HermesError` for a malformed one."""
    found: dict[str, float] = {}
    for value in values:
        name, sep, number = value.partition("=")
        try:
            rate = float(number)
        except ValueError:
            rate = 0.0
        if not sep or not name.strip() or rate <= 0:
            raise HermesError(
                f"--rate-limit {value!r}: write PROVIDER=N, N requests a minute (openai=600)"
            )
        found[name.strip()] = rate
    return found


class RateLimiter:
    """Spaces the model calls of run ``name`` per provider as ``limits`` say."""

    def __init__(self, table: RunTable, name: str, limits: Mapping[str, float]) -> None:
        self.table, self.name, self.limits = table, name, dict(limits)

    def wait(self, provider: str, cancel: threading.Event | None = None) -> float:
        """Wait for the next start time of ``provider``'s calls; returns the seconds waited."""
        rate = self.limits.get(provider) or self.limits.get("*")
        if not rate:
            return 0.0
        start = self.table.take_slot(self.name, provider, 60.0 / rate)
        delay = start - time.time()
        if delay <= 0:
            return 0.0
        if cancel is not None:
            cancel.wait(delay)
        else:
            time.sleep(delay)
        return delay


def activate(limiter: RateLimiter | None) -> None:
    """Make ``limiter`` the one this process's batch rows wait on (``None``: no limit)."""
    global _active
    _active = limiter


def before_request(request: Any) -> None:
    """Wait, when this process runs batch rows under a rate limit and ``request`` is a row's."""
    limiter = _active
    if limiter is None or not str(request.session_id or "").startswith(SESSION_PREFIX):
        return
    limiter.wait(str(request.provider or ""), request.cancel)
