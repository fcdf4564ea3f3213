"""Tools from MCP servers for hermes: every server under ``mcp_servers`` in ``config.yaml``
becomes the toolset ``mcp-<name>``, whose tools the server lists when it first starts; and
``hermes mcp list | add | remove | test`` manage the servers. See docs/mcp.md.

Nothing here imports the ``mcp`` SDK: it loads when the first server starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hermes_hookspecs import Toolset, hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

__version__ = "0.1.0"


@hookimpl
def hermes_register_configured_toolsets(
    config: Mapping[str, Any], register: Callable[[Toolset], None]
) -> None:
    """Register one toolset per enabled server of ``mcp_servers``; an entry that cannot be
    used becomes a toolset whose discovery reports why."""
    from .settings import ServerConfigError, parse_servers
    from .toolset import broken_toolset, server_toolset

    for server in parse_servers(config):
        if isinstance(server, ServerConfigError):
            register(broken_toolset(server))
        elif server.enabled:
            register(server_toolset(server, config))


@hookimpl
def hermes_session_start(session: Any) -> None:
    """Note the open session (servers stay up while any session is open)."""
    from .runtime import RUNTIME

    RUNTIME.session_started(session.id)


@hookimpl
def hermes_session_end(session: Any) -> None:
    """When the last open session of the process ends, stop every server."""
    from .runtime import RUNTIME

    RUNTIME.session_ended(session.id)


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes mcp`` (its module loads when the command runs: ``hermes --help`` stays
    fast)."""
    import click

    class LazyMcpGroup(click.Group):
        def _real(self) -> click.Group:
            from .cli import mcp_group

            return mcp_group

        def list_commands(self, ctx: click.Context) -> list[str]:
            return self._real().list_commands(ctx)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            return self._real().get_command(ctx, name)

    cli.add_command(LazyMcpGroup("mcp", help="MCP servers: list, add, remove, test."))
