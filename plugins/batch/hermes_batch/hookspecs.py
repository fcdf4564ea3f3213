"""The hook the batch plugin declares: quality filters for batch rows.

It serves this plugin alone, so this plugin declares it (its ``hookspecs``), not the contract;
hermes collects what plugins register through it (``CommandContext.registered``): a name
registered twice is an error naming both plugins. A plugin implementing it depends on
``hermes-batch``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_hookspecs import hookspec

FILTERS_HOOK = "hermes_register_batch_filters"


@hookspec
def hermes_register_batch_filters(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register quality filters for the rows of batch runs (``hermes batch run --filter NAME``).

    Called once per process when a batch worker starts.

    :param register: call ``register(name, check)``; ``check(row, output)`` gets the dataset
        row (a dict) and the row's output (its ``messages``, ``system``, ``status``,
        ``toolsets``, ``usage``; see docs/batch.md) and returns why the row is discarded (one
        line) or ``None`` to keep it. A discarded row is recorded with that reason and is not
        run again unless ``hermes batch resume --retry-discarded`` asks. Duplicate names are an
        error naming both plugins.
    :return: nothing; return values are ignored.
    """
