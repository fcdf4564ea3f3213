"""What every command module of the CLI uses: the invocation's state, JSON and table output,
and what plugins report about the plugins they host."""

from __future__ import annotations

import json
from typing import Any

import click

from hermes_hookspecs import HermesError

from .state import CliState


def current_state() -> CliState:
    """The state of this ``hermes`` invocation (the root command's ``obj``)."""
    state: CliState = click.get_current_context().find_root().obj
    return state


def show_json(value: Any) -> None:
    """Print ``value`` as indented JSON (anything not JSON as its ``str``)."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def show_table(rows: list[list[str]], headers: list[str]) -> None:
    """Print ``rows`` under ``headers`` in columns as wide as their widest cell."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def hosted_reports(state: CliState) -> dict[str, list[Any]]:
    """What each plugin reports through ``hermes_describe_plugins`` about plugins it hosts; a
    report that is not a ``PluginReport`` is a hook error of the plugin."""
    from hermes_hookspecs import PluginReport

    plugins = state.plugins
    hosted: dict[str, list[Any]] = {}
    for record, hook in plugins.implementations("hermes_describe_plugins", load_order=True):

        def report(item: Any, _name: str = record.name) -> None:
            if not isinstance(item, PluginReport):
                raise HermesError(f"expected a PluginReport, got {type(item).__name__}")
            hosted.setdefault(_name, []).append(item)

        try:
            hook(report=report)
        except Exception as exc:
            plugins.record_error(record, "hermes_describe_plugins", exc)
    return hosted
