"""What every ``hermes batch`` command reaches: the invocation's context, its run table and
its ``batch.*`` settings."""

from __future__ import annotations

from typing import Any

import click

from hermes_hookspecs import CommandContext

from .opening import open_table
from .table import RunTable


def command_context() -> CommandContext:
    """The context hermes gives this command."""
    context: CommandContext = click.get_current_context().find_root().obj
    return context


def open_run_table() -> RunTable:
    """The run table of this invocation's home."""
    context = command_context()
    return open_table(context.home, context.config)


def batch_config() -> dict[str, Any]:
    """The ``batch.*`` settings of the configuration."""
    section = command_context().config.get("batch")
    return dict(section) if isinstance(section, dict) else {}
