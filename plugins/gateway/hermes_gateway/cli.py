"""``hermes gateway ...``: serve the configured messaging platforms."""

from __future__ import annotations

import asyncio

import click

from hermes_hookspecs import CommandContext

from .hookspecs import PLATFORM_ADAPTERS_HOOK
from .serve import build, serve


def _context() -> CommandContext:
    context: CommandContext = click.get_current_context().find_root().obj
    return context


@click.group("gateway")
def gateway_group() -> None:
    """The messaging gateway: serve the platforms of gateway.platforms."""


@gateway_group.command("run")
@click.option(
    "--drain-timeout",
    type=float,
    help="Seconds to wait for running turns on shutdown (gateway.drain_timeout, 60).",
)
def run(drain_timeout: float | None) -> None:
    """Serve every configured platform until SIGTERM or Ctrl-C."""
    context = _context()
    config = dict(context.config)
    if drain_timeout is not None:
        config["gateway"] = {**(config.get("gateway") or {}), "drain_timeout": drain_timeout}

    def log(line: str) -> None:
        click.echo(line, err=True)

    adapters = context.registered(PLATFORM_ADAPTERS_HOOK)
    gateway = build(context.home, config, context.agent_runner(), adapters, log)

    async def main() -> int:
        return await serve(gateway, home=context.home, stop=asyncio.Event())

    interrupted = asyncio.run(main())
    if interrupted:
        log(f"gateway: {interrupted} turn(s) were interrupted by the shutdown")


@gateway_group.command("adapters")
def adapters() -> None:
    """List the installed platform adapters."""
    names = sorted(_context().registered(PLATFORM_ADAPTERS_HOOK))
    click.echo("\n".join(names) if names else "no platform adapter is installed")
