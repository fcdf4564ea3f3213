"""The configuration keys the loader of Hermes agent plugins reads (``plugins.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``plugins.enabled`` and ``plugins.entries``."""
    register(
        ConfigSection(
            "plugins",
            [
                ConfigKey("enabled", "any", doc="Hermes agent plugins to load (opt-in)"),
                ConfigKey("entries", ("object", "null"), doc="settings of each such plugin"),
            ],
        )
    )
