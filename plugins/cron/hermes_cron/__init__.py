"""Scheduled jobs for hermes: ``hermes cron ...`` and the ``cronjob`` tool.

Jobs live in ``$HERMES_HOME/cron/jobs.json``; ``hermes cron daemon`` (or ``tick``) runs the due
ones, each as its own agent session with source ``cron``, and writes every answer to
``$HERMES_HOME/cron/output/``. The jobs a person a gateway serves schedules with the tool are
theirs: kept in ``$HERMES_HOME/people/<person>/cron/`` (answers included) and run for them. See
docs/cron.md.
"""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import Tool, Toolset, hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin


def _cronjob(args: dict[str, Any], ctx: Any) -> str:
    from .tool import cronjob

    return cronjob(args, ctx)


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``cron`` toolset (the ``cronjob`` tool)."""
    from .tool import DESCRIPTION, PARAMETERS

    register(
        Toolset(
            name="cron",
            description="Schedule agent jobs (cronjob)",
            tools=[
                Tool(
                    name="cronjob", description=DESCRIPTION, parameters=PARAMETERS, handler=_cronjob
                )
            ],
        )
    )


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes cron`` (its module loads when the command runs: ``hermes --help`` stays
    fast)."""
    import click

    class LazyCronGroup(click.Group):
        def _real(self) -> click.Group:
            from .cli import cron_group

            return cron_group

        def list_commands(self, ctx: click.Context) -> list[str]:
            return self._real().list_commands(ctx)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            return self._real().get_command(ctx, name)

    cli.add_command(
        LazyCronGroup(
            "cron",
            help="Scheduled jobs: list, create, edit, pause, resume, run, remove, status, tick, "
            "daemon.",
        )
    )
