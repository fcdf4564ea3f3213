"""The OS sandbox under every command hermes runs on this machine (Linux, bubblewrap).

The local execution environment runs each command through a :class:`Sandbox`; the MCP plugin
can run a stdio server through one (``sandbox: workspace``). See ``docs/sandbox.md`` for what
a command can see, write and reach in each profile, and why bubblewrap.
"""

from __future__ import annotations

from .bwrap import (
    ALLOWED_VARIABLES,
    HIDDEN_IN_HOME,
    PROTECTED_IN_WORKSPACE,
    RUN_DIR,
    Sandbox,
    SandboxUnavailable,
    allowed_environment,
    describe,
    find_bwrap,
    unavailable_reason,
)
from .hints import limit_hint
from .settings import (
    DEFAULT_MAX_PROCESSES,
    PROFILES,
    SandboxSettings,
    settings_from_config,
    settings_problems,
)

__all__ = [
    "ALLOWED_VARIABLES",
    "DEFAULT_MAX_PROCESSES",
    "HIDDEN_IN_HOME",
    "PROFILES",
    "PROTECTED_IN_WORKSPACE",
    "RUN_DIR",
    "Sandbox",
    "SandboxSettings",
    "SandboxUnavailable",
    "allowed_environment",
    "describe",
    "find_bwrap",
    "limit_hint",
    "settings_from_config",
    "settings_problems",
    "unavailable_reason",
]
