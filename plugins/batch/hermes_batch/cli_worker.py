"""The body of a batch worker: the rows of a run, in a process forked from the coordinator or
started as ``hermes batch worker RUN [--serve]`` (the command the Ray slots start)."""

from __future__ import annotations

import os
from typing import Any

import click

from .cli_context import command_context, open_run_table
from .opening import run_dir
from .ratelimit import RateLimiter, activate


def work_here(name: str) -> None:
    """Run rows of run ``name`` until none is pending: the body of a local worker (forked
    from the coordinator, or started as ``hermes batch worker NAME``); it opens its own
    connections and builds its own runner."""
    from .filters import chosen_filters
    from .worker import orphaned, work

    context = command_context()
    table = open_run_table()
    limits = table.run(name).settings.get("rate_limits")
    activate(RateLimiter(table, name, limits) if limits else None)
    try:
        filters = chosen_filters(
            table.run(name).settings.get("filters") or [],
            context.registered("hermes_register_batch_filters"),
        )
        work(
            table=table,
            name=name,
            runner=context.agent_runner(),
            store=context.session_store(),
            run_dir=run_dir(context.home, name),
            filters=filters,
            should_stop=orphaned(os.getppid()),
            config=context.config,
        )
    finally:
        table.close()


@click.command("worker", hidden=True)
@click.argument("name")
@click.option("--serve", is_flag=True, help="Run the rows named on standard input.")
def worker_command(name: str, serve: bool) -> None:
    """Run rows of NAME until none is pending (the local coordinator starts this), or, with
    --serve, the rows a Ray task names on standard input, one at a time."""
    import sys

    from .filters import chosen_filters
    from .worker import exit_with_parent
    from .worker import serve as serve_rows

    if not serve:
        work_here(name)
        return
    context = command_context()
    table = open_run_table()
    run = table.run(name)
    limits = run.settings.get("rate_limits")
    activate(RateLimiter(table, name, limits) if limits else None)
    filters = chosen_filters(
        run.settings.get("filters") or [], context.registered("hermes_register_batch_filters")
    )
    common: dict[str, Any] = {
        "table": table,
        "name": name,
        "runner": context.agent_runner(),
        "store": context.session_store(),
        "run_dir": run_dir(context.home, name),
        "filters": filters,
        "config": context.config,
    }
    exit_with_parent(os.getppid())

    def reply(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    serve_rows(**common, lines=sys.stdin, reply=reply)


@click.command("queue-worker")
def queue_worker_command() -> None:
    """Run the rows that batch runs queue on the team's work queue (--executor queue), one at
    a time, until stopped; start as many as the load needs, on any machine whose home names
    the run table's PostgreSQL database."""
    from .queue_executor import QueueWorker

    context = command_context()
    table = open_run_table()
    try:
        QueueWorker(
            table=table,
            runner=context.agent_runner(),
            store=context.session_store(),
            home=context.home,
            config=context.config,
            registered=context.registered("hermes_register_batch_filters"),
        ).serve()
    finally:
        table.close()
