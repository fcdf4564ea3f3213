"""A team's gateway turns as jobs of a procrastinate queue in PostgreSQL (``gateway.queue``).

The module registers the ``procrastinate`` queue through ``hermes_register_turn_queues``, a hook
the gateway declares; procrastinate and psycopg are imported only when a gateway with a queue
starts (:mod:`hermes_queue_procrastinate.queue`). See docs/team.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hermes_hookspecs import hookimpl

ENGINE = "procrastinate"


def _queue(url: str, options: Mapping[str, Any], log: Callable[[str], None]) -> Any:
    from .queue import ProcrastinateTurnQueue

    return ProcrastinateTurnQueue(url, options, log)


@hookimpl
def hermes_register_turn_queues(register: Any) -> None:
    """Register the ``procrastinate`` work queue."""
    register(ENGINE, _queue)
