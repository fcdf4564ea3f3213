"""The error a bad ``gateway.*`` configuration raises (its own module: the settings and the
people's settings both raise it, and neither imports the other)."""

from __future__ import annotations


class GatewaySettingsError(ValueError):
    """A bad ``gateway.*`` value; the message is one line naming the key."""


__all__ = ["GatewaySettingsError"]
