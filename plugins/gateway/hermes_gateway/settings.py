"""The ``gateway`` section of the configuration, checked once at start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import GatewaySettingsError
from .people import People, load_people

BUSY_POLICIES = ("queue", "interrupt")


WORKSPACE_POLICIES = ("per-user", "shared")
"""``per-user``: each user's commands run in a folder of their own (``$HERMES_HOME/workspaces``),
which the command sandbox keeps them inside; ``shared``: everyone's in ``terminal.cwd``."""


@dataclass(frozen=True)
class PlatformSettings:
    """One entry of ``gateway.platforms``.

    :param name: the platform's name (its key under ``gateway.platforms``; sessions' source).
    :param adapter: the registered adapter that serves it (default: ``name``).
    :param allowed_users: the user ids that may talk to the agent.
    :param allow_all: everyone may (then ``allowed_users`` is not consulted).
    :param stream: send the answer early and edit it as it grows (adapters that can edit).
    :param options: the whole entry, handed to the adapter's factory.
    """

    name: str
    adapter: str
    allowed_users: frozenset[str] = frozenset()
    allow_all: bool = False
    stream: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    def allows(self, user_id: str) -> bool:
        """Whether ``user_id`` may talk to the agent here (fails closed: nobody by default)."""
        return self.allow_all or (bool(user_id) and user_id in self.allowed_users)


@dataclass(frozen=True)
class QueueSettings:
    """``gateway.queue``: the team's work queue (see :mod:`hermes_gateway.turn_queue`).

    :param engine: the registered queue (``hermes_register_turn_queues``); ``None``: the only
        one installed.
    :param url: where it lives: ``gateway.queue.url``, else ``HERMES_QUEUE_URL``, else a
        PostgreSQL ``store.url``.
    :param options: the whole section, for the engine.
    """

    engine: str | None
    url: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GatewaySettings:
    """The checked ``gateway`` section (``people``: ``gateway.users``, ``groups`` and
    ``guests``)."""

    platforms: Mapping[str, PlatformSettings]
    busy: str = "queue"
    drain_timeout: float = 60.0
    max_concurrent_turns: int = 32
    outbox_interval: float = 5.0
    typing_interval: float = 4.0
    edit_interval: float = 1.0
    gc_freeze: bool = True
    workspaces: str = "per-user"
    workers: int = 1
    people: People = field(default_factory=People)
    queue: QueueSettings | None = None


def _number(section: Mapping[str, Any], key: str, default: float, low: float) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < low:
        raise GatewaySettingsError(
            f"config gateway.{key} must be a number of at least {low:g}, not {value!r}"
        )
    return float(value)


def _flag(section: Mapping[str, Any], key: str, default: bool) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise GatewaySettingsError(f"config gateway.{key} must be true or false, not {value!r}")
    return value


def _platform(name: str, entry: Any) -> PlatformSettings:
    where = f"gateway.platforms.{name}"
    if entry is None:
        entry = {}
    if not isinstance(entry, Mapping):
        raise GatewaySettingsError(f"config {where} must be a mapping, not {entry!r}")
    adapter = entry.get("adapter", name)
    if not isinstance(adapter, str) or not adapter:
        raise GatewaySettingsError(f"config {where}.adapter must be an adapter name")
    users = entry.get("allowed_users", [])
    if isinstance(users, str) or not isinstance(users, list | tuple):
        raise GatewaySettingsError(f"config {where}.allowed_users must be a list of user ids")
    for key in ("allow_all", "stream", "enabled"):
        if not isinstance(entry.get(key, False), bool):
            raise GatewaySettingsError(f"config {where}.{key} must be true or false")
    return PlatformSettings(
        name=name,
        adapter=adapter,
        allowed_users=frozenset(str(u) for u in users),
        allow_all=bool(entry.get("allow_all", False)),
        stream=bool(entry.get("stream", False)),
        options=dict(entry),
    )


def load_settings(config: Mapping[str, Any]) -> GatewaySettings:
    """The ``gateway`` section of ``config``, checked; raises :class:`GatewaySettingsError`."""
    section = config.get("gateway") or {}
    if not isinstance(section, Mapping):
        raise GatewaySettingsError(f"config gateway must be a mapping, not {section!r}")
    busy = section.get("busy", "queue")
    if busy not in BUSY_POLICIES:
        raise GatewaySettingsError(
            f"config gateway.busy must be one of {', '.join(BUSY_POLICIES)}, not {busy!r}"
        )
    workspaces = section.get("workspaces", "per-user")
    if workspaces not in WORKSPACE_POLICIES:
        raise GatewaySettingsError(
            f"config gateway.workspaces must be one of {', '.join(WORKSPACE_POLICIES)}, "
            f"not {workspaces!r}"
        )
    raw = section.get("platforms") or {}
    if not isinstance(raw, Mapping):
        raise GatewaySettingsError("config gateway.platforms must map platform names to settings")
    platforms = {
        str(name): _platform(str(name), entry)
        for name, entry in raw.items()
        if not (isinstance(entry, Mapping) and entry.get("enabled") is False)
    }
    return GatewaySettings(
        platforms=platforms,
        busy=busy,
        drain_timeout=_number(section, "drain_timeout", 60.0, 0),
        max_concurrent_turns=int(_number(section, "max_concurrent_turns", 32, 1)),
        outbox_interval=_number(section, "outbox_interval", 5.0, 0),
        typing_interval=_number(section, "typing_interval", 4.0, 0.1),
        edit_interval=_number(section, "edit_interval", 1.0, 0.05),
        gc_freeze=_flag(section, "gc_freeze", True),
        workspaces=workspaces,
        workers=_count(section, "workers", 1),
        people=load_people(section),
        queue=queue_settings(config, section),
    )


def queue_settings(config: Mapping[str, Any], section: Mapping[str, Any]) -> QueueSettings | None:
    """``gateway.queue`` checked; ``None`` when no queue is configured (nor
    ``HERMES_QUEUE_URL`` set): the single-machine gateway."""
    entry = section.get("queue")
    env_url = os.environ.get("HERMES_QUEUE_URL", "").strip()
    if entry is None and not env_url:
        return None
    if entry is None:
        entry = {}
    if not isinstance(entry, Mapping):
        raise GatewaySettingsError(f"config gateway.queue must be a mapping, not {entry!r}")
    engine = entry.get("engine")
    if engine is not None and (not isinstance(engine, str) or not engine):
        raise GatewaySettingsError("config gateway.queue.engine must be a queue's name")
    url = entry.get("url") or env_url
    if not url:
        store = config.get("store")
        store_url = store.get("url") if isinstance(store, Mapping) else None
        store_url = store_url or os.environ.get("HERMES_STORE_URL", "")
        if str(store_url).startswith(("postgresql:", "postgres:")):
            url = store_url
    if not isinstance(url, str) or not url:
        raise GatewaySettingsError(
            "config gateway.queue needs a url (gateway.queue.url, HERMES_QUEUE_URL, or a "
            "PostgreSQL store.url)"
        )
    return QueueSettings(engine=engine, url=url, options=dict(entry))


def _count(section: Mapping[str, Any], key: str, default: int) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GatewaySettingsError(
            f"config gateway.{key} must be a whole number of at least 1, not {value!r}"
        )
    return value


__all__ = [
    "BUSY_POLICIES",
    "WORKSPACE_POLICIES",
    "GatewaySettings",
    "GatewaySettingsError",
    "PlatformSettings",
    "QueueSettings",
    "load_settings",
]
