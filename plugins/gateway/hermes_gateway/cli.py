"""``hermes gateway ...``: serve the configured messaging platforms."""

from __future__ import annotations

import asyncio
import os

import click

from hermes_hookspecs import CommandContext, HermesError

from .core import GatewayCore
from .hookspecs import PLATFORM_ADAPTERS_HOOK, TURN_QUEUES_HOOK
from .people_cli import people_group
from .serve import build, serve
from .team import drop_secrets, secret_variables


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
@click.option(
    "--role",
    type=click.Choice(["all", "front", "worker"]),
    default="all",
    show_default=True,
    help="With gateway.queue: serve the platforms (front), run the queued turns (worker), or both.",
)
def run(drain_timeout: float | None, workers: int | None, role: str) -> None:
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
    queues = context.registered(TURN_QUEUES_HOOK) if section.get("queue") or role != "all" else {}
    if not queues and os.environ.get("HERMES_QUEUE_URL"):
        queues = context.registered(TURN_QUEUES_HOOK)

    def make() -> GatewayCore:
        return build(
            context.home,
            config,
            runner,
            factories,
            log,
            session_store=context.session_store,
            role=role,
            queues=queues,
        )

    gateway = make()
    if role == "worker":  # a worker holds no platform's secret
        drop_secrets(secret_variables(gateway.settings))
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
