"""The configuration keys the terminal toolset reads (``terminal.*``, ``approvals.*``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl

TIMEOUT = ConfigKey("timeout", "integer", 180, "seconds a command may run", minimum=1, shared=True)
"""``terminal.timeout``: also the fallback of every execution backend, which declare it too."""

CWD = ConfigKey(
    "cwd", "string", doc="working directory inside the execution environment", shared=True
)
"""``terminal.cwd``: shared with the local backend."""


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``terminal.*`` and the terminal's approval rules."""
    register(
        ConfigSection(
            "terminal",
            [
                TIMEOUT,
                CWD,
                ConfigKey(
                    "max_timeout",
                    "number",
                    doc="the longest timeout the model may ask for (unset: 3600)",
                    minimum=0,
                ),
                ConfigKey(
                    "max_output_chars",
                    "integer",
                    doc="longest command output kept, head and tail (unset: 50000)",
                    minimum=1,
                ),
            ],
        )
    )
    register(
        ConfigSection(
            "approvals",
            [
                ConfigKey(
                    "extra_patterns",
                    "array",
                    doc="more dangerous-command rules ({pattern, description, id, hard})",
                ),
                ConfigKey(
                    "allow",
                    "array",
                    items="string",
                    doc="regular expressions excusing matching commands",
                ),
            ],
        )
    )


def section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The mapping ``config[name]`` (empty when absent or not a mapping)."""
    value = config.get(name) if isinstance(config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def number(value: Any, default: float) -> float:
    """``value`` as a positive number, or ``default`` when it is not one."""
    try:
        result = float(value)
    except (TypeError, ValueError):
        return default
    return result if result > 0 else default
