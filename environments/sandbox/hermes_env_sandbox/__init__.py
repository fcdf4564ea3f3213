"""The OS sandbox under every command hermes runs on this machine (Linux, bubblewrap).

The local execution environment runs each command through a :class:`Sandbox`, which hides
the home folder but for the workspace and the toolchain folders (:data:`DEFAULT_HOME_ALLOW`);
the MCP plugin can run a stdio server through one (``sandbox: workspace``). See
``docs/sandbox.md`` for what a command can see, write and reach in each profile, and why
bubblewrap.
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
    check_start,
    describe,
    find_bwrap,
    unavailable_reason,
)
from .hints import limit_hint
from .home import DEFAULT_HOME_ALLOW, sanitized_git_config
from .settings import (
    DEFAULT_MAX_PROCESSES,
    PROFILES,
    HomeAllow,
    SandboxSettings,
    settings_from_config,
    settings_problems,
)

__all__ = [
    "ALLOWED_VARIABLES",
    "DEFAULT_HOME_ALLOW",
    "DEFAULT_MAX_PROCESSES",
    "HIDDEN_IN_HOME",
    "HomeAllow",
    "PROFILES",
    "PROTECTED_IN_WORKSPACE",
    "RUN_DIR",
    "Sandbox",
    "SandboxSettings",
    "SandboxUnavailable",
    "allowed_environment",
    "check_start",
    "describe",
    "find_bwrap",
    "limit_hint",
    "sanitized_git_config",
    "settings_from_config",
    "settings_problems",
    "unavailable_reason",
]
