"""The configuration keys the batch plugin reads (``batch.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``batch.*``."""
    register(
        ConfigSection(
            "batch",
            [
                ConfigKey(
                    "executor",
                    "string",
                    doc="where rows run: local worker processes, a Ray cluster or the team's "
                    "work queue (unset: local)",
                    enum=["local", "ray", "queue"],
                ),
                ConfigKey(
                    "ray_address",
                    "string",
                    doc="the Ray cluster to join (unset: RAY_ADDRESS, else a local Ray)",
                ),
                ConfigKey(
                    "workers", "integer", doc="rows run at the same time (unset: 4)", minimum=1
                ),
                ConfigKey(
                    "lease_seconds",
                    "number",
                    doc="seconds a silent worker keeps its row before it runs elsewhere "
                    "(unset: 60)",
                    minimum=1,
                ),
                ConfigKey(
                    "row_workspace",
                    "string",
                    doc="set by a batch run for a row with an image: the folder copied into "
                    "its container (not for config.yaml)",
                ),
            ],
            doc="batch runs over datasets",
        )
    )
