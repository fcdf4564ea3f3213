"""The configuration keys the modal backend reads (``terminal.modal_*``, ``container_*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_env_common.config_keys import CONTAINER_KEYS, FLAG, TIMEOUT_KEY

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare the ``terminal`` keys of the modal backend."""
    register(
        ConfigSection(
            "terminal",
            [
                TIMEOUT_KEY,
                ConfigKey("modal_image", "string", doc="image (unset: python:3.11-slim)"),
                ConfigKey("modal_app", "string", doc="Modal app name (unset: hermes-agent)"),
                ConfigKey("modal_workdir", "string", doc="working folder (unset: /workspace)"),
                ConfigKey("modal_block_network", FLAG, doc="no network in the sandbox"),
                ConfigKey(
                    "lifetime_seconds",
                    "integer",
                    doc="seconds a sandbox is kept before clean-up (unset: 3600)",
                    minimum=0,
                ),
                *CONTAINER_KEYS,
            ],
        )
    )
