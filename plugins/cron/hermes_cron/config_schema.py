"""The configuration keys the cron plugin reads (``cron.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``cron.*``."""
    register(
        ConfigSection(
            "cron",
            [
                ConfigKey(
                    "max_parallel", "number", doc="jobs run at the same time (unset: 3)", minimum=1
                ),
                ConfigKey(
                    "tick_seconds",
                    "number",
                    doc="seconds between checks for due jobs (unset: 30)",
                    minimum=1,
                ),
            ],
            doc="scheduled jobs",
        )
    )
