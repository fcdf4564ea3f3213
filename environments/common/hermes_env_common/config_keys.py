"""Configuration keys several sandbox backends read, declared once for all of them (each backend
still registers them itself, so it works alone; the host accepts the repeats as ``shared``)."""

from __future__ import annotations

from hermes_hookspecs import ConfigKey

FLAG = ("boolean", "string")
"""The type of a yes/no setting: a boolean, or a string such as ``"yes"``/``"off"``."""

TIMEOUT_KEY = ConfigKey(
    "timeout", "integer", 180, "seconds a command may run", minimum=1, shared=True
)
"""``terminal.timeout``: read by every backend and the terminal tool."""

CONTAINER_KEYS = (
    ConfigKey("container_cpu", ("number", "string"), doc="CPUs of the sandbox", shared=True),
    ConfigKey(
        "container_memory",
        ("integer", "number", "string"),
        doc="memory of the sandbox (MiB, or 4g)",
        shared=True,
    ),
    ConfigKey("container_persistent", FLAG, doc="keep the sandbox between sessions", shared=True),
)
"""``terminal.container_*``: the sandbox sizes the docker and modal backends both read."""
