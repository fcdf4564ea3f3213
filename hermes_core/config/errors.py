"""The configuration's errors and warnings."""

from __future__ import annotations

from hermes_hookspecs import HermesError


class ConfigError(HermesError):
    """A configuration file, environment variable or value is invalid; the message is one line."""


class ConfigWarning(UserWarning):
    """A configuration key no installed plugin declares (shown once per process)."""


def one_line(value: object) -> str:
    """Collapse a message onto one line."""
    return " ".join(str(value).split())
