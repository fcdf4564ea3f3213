"""Slash commands that plugins add to the chat (``hermes_register_slash_commands``): how the
chat runs one, and what the command sees of the chat (:class:`hermes_hookspecs.SlashContext`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import HermesError, SessionStore, SlashOutcome
from hermes_hookspecs.people import person_home

if TYPE_CHECKING:
    from ..loop.agent import Agent

log = logging.getLogger("hermes.cli")

__all__ = ["ChatSlashContext", "run_plugin_command"]


class ChatSlashContext:
    """What a plugin's slash command sees of the chat of ``agent`` (``store``: its session
    store)."""

    def __init__(self, agent: Agent, store: SessionStore) -> None:
        self.home = Path(agent.hermes_home) if agent.hermes_home else Path.cwd()
        self.person: str | None = agent.person
        self.data_home = person_home(self.home, self.person)
        self.config: Mapping[str, Any] = agent.config.data
        self.session_id = agent.session_id
        self._store = store

    def session_store(self) -> SessionStore:
        """The chat's session store."""
        return self._store

    def echo(self, text: str) -> None:
        """Show ``text`` to the person."""
        click.echo(text)


def run_plugin_command(line: str, agent: Agent, store: SessionStore) -> bool | str:
    """Run the plugin's slash command ``line`` names: False to go on, a session id to switch to.
    An unknown command, a command's one-line error and a command that failed are each one line;
    the chat goes on."""
    words = line.split(maxsplit=1)
    name = words[0][1:].lower()
    entry = agent.registry.slash_commands.get(name)
    if entry is None:
        click.echo(f"  unknown command /{name}; /help lists the commands")
        return False
    arguments = words[1].strip() if len(words) > 1 else ""
    try:
        outcome = entry.value.handler(arguments, ChatSlashContext(agent, store))
    except HermesError as exc:
        click.echo(f"  /{name}: {exc}")
        return False
    except Exception as exc:  # a plugin's bug: the chat goes on
        log.exception("slash command /%s of %s failed", name, entry.plugin)
        click.echo(f"  /{name} failed ({entry.plugin}): {type(exc).__name__}: {exc}")
        return False
    if isinstance(outcome, SlashOutcome) and outcome.switch_to:
        return outcome.switch_to
    return False
