"""The configuration keys the memory toolset reads (``memory.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``memory.*``."""
    register(
        ConfigSection(
            "memory",
            [
                ConfigKey("memory_enabled", "any", doc="show the memory store in the prompt"),
                ConfigKey("user_profile_enabled", "any", doc="show the user profile in the prompt"),
                ConfigKey("memory_char_limit", "any", doc="size of the memory store (unset: 2200)"),
                ConfigKey("user_char_limit", "any", doc="size of the user profile (unset: 1375)"),
            ],
            doc="the memory toolset",
        )
    )
