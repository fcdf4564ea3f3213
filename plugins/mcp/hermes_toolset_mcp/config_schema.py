"""The configuration keys the MCP plugin reads (``mcp_servers``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``mcp_servers``: one entry per server, named by the user and checked by the
    plugin when the servers are read."""
    register(
        ConfigSection(
            "",
            [
                ConfigKey(
                    "mcp_servers",  # settings.SECTION (not imported: loading stays cheap)
                    ("object", "null"),
                    doc="MCP servers by name: command or url, args, env, headers, timeouts...",
                )
            ],
        )
    )
