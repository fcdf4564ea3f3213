"""The hook the gateway declares: messaging platform adapters are registered through it.

It serves this plugin alone, so this plugin declares it (its ``hookspecs``), not the contract;
hermes adds it before any plugin registers, and collects what it registers
(``CommandContext.registered``): a name registered twice is an error naming both plugins. A
plugin implementing it depends on ``hermes-gateway``.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import hookspec

from .platforms import AdapterFactory
from .turn_queue import QueueFactory

PLATFORM_ADAPTERS_HOOK = "hermes_register_platform_adapters"


@hookspec
def hermes_register_platform_adapters(register: Callable[[str, AdapterFactory], None]) -> None:
    """Register messaging platform adapters for the gateway (``hermes gateway run``).

    Called once per process when the gateway starts or the adapters are listed.

    :param register: call ``register(name, factory)``; ``name`` is the adapter's kind, what
        users put in ``gateway.platforms.<platform>.adapter`` (or the platform's own name when
        that key is absent); ``factory(platform, settings)`` returns a
        :class:`~hermes_gateway.PlatformAdapter`. It must import the platform's SDK inside the
        factory, not at module import. Duplicate names are an error naming both plugins.
    :return: nothing; return values are ignored.
    """


TURN_QUEUES_HOOK = "hermes_register_turn_queues"


@hookspec
def hermes_register_turn_queues(register: Callable[[str, QueueFactory], None]) -> None:
    """Register work queues for a team's gateway (``gateway.queue``, see docs/team.md).

    Called once per process when the gateway starts with a queue configured.

    :param register: call ``register(name, factory)``; ``name`` is what users put in
        ``gateway.queue.engine``; ``factory(url, options, log)`` returns a
        :class:`~hermes_gateway.turn_queue.TurnQueue`. It must import the queue library
        inside the factory, not at module import. Duplicate names are an error naming both
        plugins.
    :return: nothing; return values are ignored.
    """
