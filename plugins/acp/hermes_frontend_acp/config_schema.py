"""The configuration keys ``hermes acp`` reads (``acp.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import NO_DEFAULT, ConfigKey, ConfigSection, hookimpl

MCP_SANDBOX = "workspace"
"""How the MCP servers a client passes in run: in the command sandbox, writing only the
session's folder (docs/sandbox.md)."""

PERMISSION_TIMEOUT = 300.0
"""Seconds an editor has to answer a permission request before it counts as a denial."""


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``acp.*``."""
    register(
        ConfigSection(
            "acp",
            [
                ConfigKey(
                    "toolsets",
                    "array",
                    NO_DEFAULT,
                    "toolsets offered to editor sessions: narrows the configured ones, never "
                    "widens them (default: the configured ones)",
                    items="string",
                ),
                ConfigKey(
                    "permission_timeout",
                    "number",
                    PERMISSION_TIMEOUT,
                    "seconds the editor has to answer a permission request; then it is denied",
                    minimum=0,
                    exclusive_minimum=True,
                ),
                ConfigKey(
                    "mcp_sandbox",
                    "string",
                    MCP_SANDBOX,
                    "the command sandbox of the MCP servers an editor passes in: workspace "
                    "(they write only the session's folder), read-only, or off",
                    enum=("workspace", "read-only", "off"),
                ),
                ConfigKey(
                    "protocol_v2",
                    "boolean",
                    False,
                    "let a client agree on the draft protocol version 2 on initialize "
                    "(version 1 otherwise)",
                ),
                ConfigKey(
                    "models",
                    "array",
                    [],
                    "models an editor may pick per session, besides the configured one",
                    items="string",
                ),
            ],
        )
    )
