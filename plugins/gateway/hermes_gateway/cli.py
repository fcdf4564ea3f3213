"""``hermes gateway ...``: serve the configured messaging platforms."""

from __future__ import annotations

import asyncio

import click

from hermes_hookspecs import CommandContext, HermesError

from .core import GatewayCore
from .hookspecs import PLATFORM_ADAPTERS_HOOK
from .people_cli import people_group
from .serve import build, serve


def _context() -> CommandContext:
    context: CommandContext = click.get_current_context().find_root().obj
    return context


@click.group("gateway")
def gateway_group() -> None:
    """The messaging gateway: serve the platforms of gateway.platforms."""


gateway_group.add_command(people_group)


@gateway_group.command("run")
@click.option(
    "--drain-timeout",
    type=float,
    help="Seconds to wait for running turns on shutdown (gateway.drain_timeout, 60).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Processes serving the platforms' addresses, sharing the sessions (gateway.workers, 1).",
)
def run(drain_timeout: float | None, workers: int | None) -> None:
    """Serve every configured platform until SIGTERM or Ctrl-C."""
    context = _context()
    config = dict(context.config)
    section = dict(config.get("gateway") or {})
    if drain_timeout is not None:
        section["drain_timeout"] = drain_timeout
    if workers is not None:
        section["workers"] = workers
    config["gateway"] = section

    def log(line: str) -> None:
        click.echo(line, err=True)

    runner, factories = context.agent_runner(), context.registered(PLATFORM_ADAPTERS_HOOK)

    def make() -> GatewayCore:
        return build(
            context.home, config, runner, factories, log, session_store=context.session_store
        )

    gateway = make()
    if gateway.settings.workers > 1:
        from .workers import Supervisor

        supervisor = Supervisor(gateway.settings.workers, make, context.home, log, probe=gateway)
        if supervisor.run():
            raise HermesError("the gateway stopped: its workers kept dying")
        return

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
