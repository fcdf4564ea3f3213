"""The ``cron`` section of the configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SettingsError(ValueError):
    """A bad ``cron.*`` value; the message names the key."""


def setting(config: Mapping[str, Any], key: str, default: float, low: float) -> float:
    """``cron.<key>`` as a number of at least ``low``."""
    section = config.get("cron") or {}
    value = section.get(key, default) if isinstance(section, Mapping) else default
    if isinstance(value, bool) or not isinstance(value, int | float) or value < low:
        raise SettingsError(
            f"config cron.{key} must be a number of at least {low:g}, not {value!r}"
        )
    return value
