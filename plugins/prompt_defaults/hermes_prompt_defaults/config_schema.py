"""The configuration keys the default prompt layers read (``prompt.*``)."""

from __future__ import annotations

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register):  # type: ignore[no-untyped-def]
    """Declare ``prompt.*``."""
    register(
        ConfigSection(
            "prompt",
            [
                ConfigKey(
                    "soul_max_chars",
                    "integer",
                    doc="longest SOUL.md kept in the prompt",
                    minimum=100,
                ),
                ConfigKey(
                    "project_context_max_chars",
                    "integer",
                    doc="longest project context file kept in the prompt",
                    minimum=100,
                ),
            ],
            doc="the default prompt layers",
        )
    )
