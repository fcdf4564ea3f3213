"""The core's declared keys as one schema, their defaults, the environment variables that set
them, and checking data against a schema."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .keys import core_sections
from .schema import CORE_OWNER, ConfigSchema

CORE_SCHEMA: ConfigSchema = ConfigSchema((section, CORE_OWNER) for section in core_sections())
"""The keys the core reads (see :mod:`hermes_core.config.keys`); plugins add theirs through
``hermes_register_config`` (``Registry.config_schema``)."""

DEFAULTS: dict[str, Any] = {"model": {}, **CORE_SCHEMA.defaults()}
"""The core's defaults; each plugin's defaults come with its declarations."""

ENV_VARS: dict[str, str] = {
    "HERMES_MODEL": "model.default",
    "HERMES_PROVIDER": "model.provider",
    "HERMES_BASE_URL": "model.base_url",
    "HERMES_API_MODE": "model.api_mode",
    "HERMES_MAX_TURNS": "agent.max_turns",
    "HERMES_TOOLSETS": "toolsets",
    "HERMES_DISABLED_TOOLSETS": "disabled_toolsets",
    "HERMES_CONTEXT_ENGINE": "context.engine",
    "HERMES_TERMINAL_BACKEND": "terminal.backend",
    "HERMES_STORE_URL": "store.url",
}
"""The environment variables that set core keys, between config.yaml and the command line."""


def validate(
    data: Mapping[str, Any],
    path: Path | None = None,
    lines: Mapping[str, int] | None = None,
    schema: ConfigSchema | None = None,
) -> None:
    """Raise ConfigError for the first schema violation in data (in data order); unknown keys pass.

    ``schema`` defaults to the core's keys (:data:`CORE_SCHEMA`). ``path`` and ``lines``
    (dotted key -> 1-based line) only make the message point at the spot.
    """
    for dotted, problem in (schema or CORE_SCHEMA).problems(data):
        line = (lines or {}).get(dotted)
        if path is not None and line is not None:
            where = f"{path}:{line}: "
        elif path is not None:
            where = f"{path}: "
        else:
            where = ""
        raise ConfigError(f"{where}{dotted}: {problem}")
