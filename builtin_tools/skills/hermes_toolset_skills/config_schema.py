"""The configuration keys the skills toolset reads (``skills.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``skills.*``."""
    register(
        ConfigSection(
            "skills",
            [
                ConfigKey(
                    "index_max_chars",
                    "any",
                    doc="longest skills index in the prompt, in characters",
                )
            ],
            doc="the skills toolset",
        )
    )
