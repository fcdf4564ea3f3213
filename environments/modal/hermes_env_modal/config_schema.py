"""The configuration keys the modal backend reads (``terminal.modal_*``, ``container_*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl

_FLAG = ("boolean", "string")

CONTAINER_KEYS = (
    ConfigKey("container_cpu", ("number", "string"), doc="CPUs of the sandbox", shared=True),
    ConfigKey(
        "container_memory",
        ("integer", "number", "string"),
        doc="memory of the sandbox (MiB, or 4g)",
        shared=True,
    ),
    ConfigKey("container_persistent", _FLAG, doc="keep the sandbox between sessions", shared=True),
)
"""The sandbox keys the docker and modal backends both read (declared alike by both)."""


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare the ``terminal`` keys of the modal backend."""
    register(
        ConfigSection(
            "terminal",
            [
                ConfigKey(
                    "timeout", "integer", 180, "seconds a command may run", minimum=1, shared=True
                ),
                ConfigKey("modal_image", "string", doc="image (unset: python:3.11-slim)"),
                ConfigKey("modal_app", "string", doc="Modal app name (unset: hermes-agent)"),
                ConfigKey("modal_workdir", "string", doc="working folder (unset: /workspace)"),
                ConfigKey("modal_block_network", _FLAG, doc="no network in the sandbox"),
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
