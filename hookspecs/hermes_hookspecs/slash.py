"""Slash commands that plugins add to the interactive chat (``/rollback``...).

A plugin registers a :class:`SlashCommand` through ``hermes_register_slash_commands``; the chat
runs it between turns (never while a turn runs) with a :class:`SlashContext`, and acts on the
:class:`SlashOutcome` it returns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .sessions import SessionStore

__all__ = ["SLASH_NAME_RE", "SlashCommand", "SlashContext", "SlashOutcome"]

SLASH_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
"""What a slash command's name (without the ``/``) may be."""


class SlashContext(Protocol):
    """What a plugin's slash command finds when the chat runs it.

    :ivar home: the active hermes home folder.
    :ivar data_home: where the chat's person keeps their data (the home for its owner).
    :ivar config: the effective configuration (read-only by convention).
    :ivar session_id: the chat's current session.
    :ivar person: whom the chat acts for (``None``: the home's owner).
    """

    home: Path
    data_home: Path
    config: Mapping[str, Any]
    session_id: str
    person: str | None

    def session_store(self) -> SessionStore:
        """The chat's session store."""
        ...

    def echo(self, text: str) -> None:
        """Show ``text`` to the person (one or more lines)."""
        ...


@dataclass(frozen=True)
class SlashOutcome:
    """What the chat does after a slash command.

    :param switch_to: a session id the chat continues in from now on (a session the command
        made or found), ``None`` to stay in the current one.
    """

    switch_to: str | None = None


SlashHandler = Callable[[str, SlashContext], SlashOutcome | None]
"""``handler(arguments, context)``: runs the command (``arguments``: what followed its name,
stripped); raises :class:`~hermes_hookspecs.HermesError` with one readable line when it cannot."""


@dataclass(frozen=True)
class SlashCommand:
    """A slash command of the interactive chat.

    :param name: what the person types after ``/`` (:data:`SLASH_NAME_RE`); a builtin command's
        name, or one another plugin registered, is refused, naming both.
    :param summary: one line for ``/help``.
    :param handler: what runs (:data:`SlashHandler`).
    :param usage: the arguments as ``/help`` shows them (``"[N] [--files|--chat]"``).
    """

    name: str
    summary: str
    handler: SlashHandler
    usage: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not SLASH_NAME_RE.match(self.name):
            raise ValueError(
                f"slash command name {self.name!r}: lower-case letters, digits and '-', "
                "starting with a letter, without the '/'"
            )
        if not callable(self.handler):
            raise ValueError(f"slash command /{self.name}: handler is not callable")
