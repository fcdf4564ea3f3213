"""Commands of Hermes agent plugins on the ``hermes`` command line: an ``argparse`` set-up
(``register_cli_command``) run as a click command, and slash commands (``register_command``) run
as ``hermes agent-plugins command NAME [ARGS...]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import click

from .callbacks import resolve


def argparse_command(name: str, entry: dict[str, Any]) -> click.Command:
    """A click command that hands its arguments to the plugin's ``argparse`` parser; ``--help``
    and usage errors are argparse's own, the handler's integer result is the exit code."""
    setup_fn: Callable[[Any], Any] = entry["setup_fn"]
    handler_fn: Callable[[Any], Any] | None = entry.get("handler_fn")
    summary = entry.get("help") or ""

    def run(args: tuple[str, ...]) -> None:
        try:
            _run(args)
        finally:  # what the plugin printed must be out before hermes reports anything else
            sys.stdout.flush()
            sys.stderr.flush()

    def _run(args: tuple[str, ...]) -> None:
        parser = argparse.ArgumentParser(
            prog=f"hermes {name}", description=entry.get("description") or summary or None
        )
        setup_fn(parser)
        try:
            namespace = parser.parse_args(list(args))
        except SystemExit as exc:  # --help, or a usage error argparse already printed
            raise click.exceptions.Exit(exc.code if isinstance(exc.code, int) else 2) from None
        handler = handler_fn or getattr(namespace, "func", None)
        if handler is None:
            parser.print_help()
            return
        code = resolve(handler(namespace))
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            raise click.exceptions.Exit(code)

    return click.Command(
        name,
        callback=run,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        help=f"{summary} (Hermes agent plugin {entry['plugin']}; `hermes {name} --help`)",
        short_help=summary or None,
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


def agent_plugins_group(get_host: Callable[[], Any]) -> click.Group:
    """``hermes agent-plugins``: the slash commands and skills of Hermes agent plugins."""

    @click.group("agent-plugins")
    def group() -> None:
        """Slash commands and skills of plugins written for the Hermes agent."""

    @group.command("command", context_settings={"ignore_unknown_options": True})
    @click.argument("name", required=False)
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(name: str | None, args: tuple[str, ...]) -> None:
        """Run the slash command /NAME of a Hermes agent plugin with ARGS (no NAME: list them)."""
        from hermes_hookspecs import HermesError

        from .context import call_command

        host = get_host()
        if not name:
            if not host.commands:
                click.echo("no Hermes agent plugin registered a slash command")
            for key, entry in sorted(host.commands.items()):
                hint = f" {entry['args_hint']}" if entry["args_hint"] else ""
                click.echo(f"/{key}{hint}  {entry['description']} ({entry['plugin']})")
            return
        entry = host.commands.get(name.lstrip("/"))
        if entry is None:
            known = ", ".join(f"/{n}" for n in sorted(host.commands)) or "none"
            raise HermesError(
                f"no Hermes agent plugin command /{name.lstrip('/')} (known: {known})"
            )
        try:
            answer = call_command(entry["handler"], " ".join(args))
        except Exception as exc:
            what = f"/{name.lstrip('/')} of plugin {entry['plugin']}"
            raise HermesError(f"{what} failed: {type(exc).__name__}: {exc}") from exc
        if answer:
            click.echo(answer)

    @group.command("skills")
    def skills() -> None:
        """List the skills Hermes agent plugins registered (read them with the
        hermes_plugin_skill tool)."""
        host = get_host()
        if not host.skills:
            click.echo("no Hermes agent plugin registered a skill")
        for qualified, entry in sorted(host.skills.items()):
            click.echo(f"{qualified}  {entry['description'] or '-'}")

    return group
