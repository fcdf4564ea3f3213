"""Batch runs of the agent over datasets: ``hermes batch run | status | resume | export``.

Each row of a JSONL dataset runs as its own agent session in its own workspace; the run table
(SQLite ``$HERMES_HOME/batch.db``, or PostgreSQL when ``store.url`` names one) records every
row's state, attempts, sessions, tokens and cost, and holds each finished row's output, so a
row is completed exactly once whatever is killed. Rows run in local worker processes or as
tasks of a Ray cluster. Quality filters are plugins (``hermes_register_batch_filters``, a
hook this plugin declares). See docs/batch.md.
"""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import hookimpl

from . import hookspecs  # noqa: F401 - the hook this plugin declares
from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin


@hookimpl
def hermes_register_batch_filters(register: Any) -> None:
    """Register the filters this plugin ships: ``reasoning``, ``tool-names``, ``turns``."""
    from .filters import BUILTIN

    for name, check in BUILTIN.items():
        register(name, check)


@hookimpl
def hermes_register_environments(register: Any) -> None:
    """Register ``batch-docker``: the docker backend with a row's workspace copied into its
    container (the backend of a row that names an image)."""
    from .containers import BACKEND, RowContainer

    register(BACKEND, RowContainer())


@hookimpl
def hermes_before_request(request: Any) -> None:
    """In a batch worker under ``--rate-limit``, wait for the provider's next free start."""
    from .ratelimit import before_request

    before_request(request)


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes batch`` (its module loads when the command runs: ``hermes --help`` stays
    fast, and never imports Ray or a database driver)."""
    import click

    class LazyBatchGroup(click.Group):
        def _real(self) -> click.Group:
            from .cli import batch_group

            return batch_group

        def list_commands(self, ctx: click.Context) -> list[str]:
            return self._real().list_commands(ctx)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            return self._real().get_command(ctx, name)

    cli.add_command(
        LazyBatchGroup(
            "batch",
            help="Batch runs over datasets: run, status, resume, export, list.",
        )
    )
