"""The interactive chat's own slash commands: the table ``/help`` shows, and the names no
plugin's slash command may take."""

from __future__ import annotations

SLASH_COMMANDS: tuple[tuple[str, str], ...] = (
    ("/tools", "enabled tools"),
    ("/usage", "token usage and estimated cost"),
    ("/prompt", "the system prompt"),
    ("/compress [FOCUS]", "compress the conversation now, keeping FOCUS in detail"),
    ("/context", "the context engine's figures"),
    ("/resume [ID]", "list recent sessions, or continue one"),
    ("/new", "start a new session"),
    ("/help", "this list"),
    ("/exit", "leave (or Ctrl-D)"),
)
"""Each builtin command's usage and its one-line summary, in ``/help``'s order."""

BUILTIN_NAMES: frozenset[str] = frozenset(
    {usage.split()[0].lstrip("/") for usage, _ in SLASH_COMMANDS} | {"quit"}
)
"""The builtin commands' names, without the ``/`` (``/quit`` is ``/exit``)."""
