"""The messaging gateway for hermes: ``hermes gateway run`` serves every platform configured in
``gateway.platforms`` in one process, each conversation in its own agent session.

Ships two adapters: ``api_server`` (an OpenAI-compatible HTTP API) and ``webhook`` (signed
POSTs in and out). Every sender is a person (``gateway.users``, or a guest) whose runs are
kept apart from everyone else's (``hermes_person_scope``, :mod:`hermes_gateway.scope`). Other
plugins add platforms through ``hermes_register_platform_adapters``, a hook this plugin
declares (:mod:`hermes_gateway.hookspecs`).
See docs/gateway.md.
"""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import hookimpl

from . import hookspecs  # noqa: F401 - the hook this plugin declares
from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin
from .home_guard import hermes_pre_tool_call  # noqa: F401 - a hook of this plugin
from .platforms import (
    AdapterFactory,
    Attachment,
    Gateway,
    InboundMessage,
    PlatformAdapter,
)
from .scope import hermes_person_scope  # noqa: F401 - a hook of this plugin


def _api_server(platform: str, settings: Any) -> PlatformAdapter:
    from .api_server import create

    return create(platform, settings)


def _webhook(platform: str, settings: Any) -> PlatformAdapter:
    from .webhook import create

    return create(platform, settings)


@hookimpl
def hermes_register_platform_adapters(register: Any) -> None:
    """Register the ``api_server`` and ``webhook`` adapters."""
    register("api_server", _api_server)
    register("webhook", _webhook)


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes gateway`` (its module loads when the command runs: ``hermes --help`` stays
    fast)."""
    import click

    class LazyGatewayGroup(click.Group):
        def _real(self) -> click.Group:
            from .cli import gateway_group

            return gateway_group

        def list_commands(self, ctx: click.Context) -> list[str]:
            return self._real().list_commands(ctx)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            return self._real().get_command(ctx, name)

    cli.add_command(
        LazyGatewayGroup("gateway", help="The messaging gateway: run, adapters, people.")
    )


__all__ = ["AdapterFactory", "Attachment", "Gateway", "InboundMessage", "PlatformAdapter"]
