"""The configuration keys the loader of Hermes agent plugins reads (``plugins.*``)."""

from __future__ import annotations

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register):  # type: ignore[no-untyped-def]
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
