"""The configuration keys the gateway reads (``gateway.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``gateway.*``; each platform's entry belongs to its adapter, so
    ``gateway.platforms`` is checked by the gateway when it starts, and so are the people's
    entries (``users``, ``groups``, ``guests``: :mod:`hermes_gateway.people`)."""
    register(
        ConfigSection(
            "gateway",
            [
                ConfigKey(
                    "workspaces",
                    "string",
                    doc="each user's commands in a folder of their own, or one for all "
                    "(unset: per-user)",
                    enum=("per-user", "shared"),
                ),
                ConfigKey(
                    "busy",
                    "string",
                    doc="a message for a busy session waits, or interrupts (unset: queue)",
                    enum=("queue", "interrupt"),
                ),
                ConfigKey(
                    "drain_timeout",
                    "number",
                    doc="seconds a shutdown waits for running turns (unset: 60)",
                    minimum=0,
                ),
                ConfigKey(
                    "max_concurrent_turns",
                    "number",
                    doc="turns running at once, over all sessions (unset: 32)",
                    minimum=1,
                ),
                ConfigKey(
                    "workers",
                    "number",
                    doc="processes serving the platforms' addresses, sharing the session "
                    "store (unset: 1)",
                    minimum=1,
                ),
                ConfigKey(
                    "outbox_interval",
                    "number",
                    doc="seconds between deliveries of scheduled jobs' messages (unset: 5)",
                    minimum=0,
                ),
                ConfigKey(
                    "typing_interval",
                    "number",
                    doc="seconds between typing indicators (unset: 4)",
                    minimum=0.1,
                ),
                ConfigKey(
                    "edit_interval",
                    "number",
                    doc="least seconds between edits of a streamed answer (unset: 1)",
                    minimum=0.05,
                ),
                ConfigKey("platforms", ("object", "null"), doc="the platforms to serve, by name"),
                ConfigKey(
                    "queue",
                    ("object", "null"),
                    doc="a team's work queue: turns become jobs that workers on any machine "
                    "run (engine, url; docs/team.md)",
                ),
                ConfigKey(
                    "users",
                    ("object", "null"),
                    doc="the people, by person id: their platform ids (PLATFORM:USER_ID), "
                    "groups and settings (docs/gateway.md#people-and-groups)",
                ),
                ConfigKey(
                    "groups",
                    ("object", "null"),
                    doc="groups of people, by name: share_sessions and settings for members",
                ),
                ConfigKey(
                    "guests",
                    ("object", "null"),
                    doc="senders no person's ids name: allowed (true) and their settings",
                ),
            ],
            doc="the messaging gateway (hermes gateway run)",
        )
    )
