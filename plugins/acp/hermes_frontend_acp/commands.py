"""The slash commands an editor offers in a hermes session (``available_commands_update``) and
how a prompt that is one of them runs.

An editor session has the commands of the chat that mean something there and that hermes acp
runs itself: ``/help`` and ``/usage``, and every slash command a plugin registers
(``hermes_register_slash_commands``, e.g. the checkpoints plugin's ``/rollback``), run between
turns with the session as their context. The chat's ``/new``, ``/resume`` and ``/exit`` belong
to the editor's own session list; ``/tools``, ``/prompt``, ``/context`` and ``/compress`` need
the chat's live agent and are not offered. A prompt naming no offered command goes to the model
as typed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from hermes_hookspecs import CommandContext, HermesError, SessionStore, SlashCommand, SlashOutcome
from hermes_hookspecs.people import person_home

log = logging.getLogger("hermes.acp")

BUILTINS: dict[str, str] = {
    "help": "the commands of this session",
    "usage": "tokens this session used in this editor",
}
"""The chat's own commands an editor session offers, with their one-line summaries."""


def plugin_commands(context: CommandContext) -> dict[str, tuple[SlashCommand, str]]:
    """The slash commands plugins registered (name -> command and its plugin): the host's
    registry when the invocation has one (``hermes acp`` run by the hermes CLI), else none."""
    registry = getattr(context, "registry", None)
    found = getattr(registry, "slash_commands", None)
    if not isinstance(found, Mapping):
        return {}
    commands: dict[str, tuple[SlashCommand, str]] = {}
    for name, entry in found.items():
        command = getattr(entry, "value", None)
        if isinstance(command, SlashCommand) and name not in BUILTINS:
            commands[name] = (command, str(getattr(entry, "plugin", "")))
    return commands


def available(plugins: Mapping[str, tuple[SlashCommand, str]]) -> list[AvailableCommand]:
    """The ACP list of the session's commands: the builtins, then the plugins' by name."""
    listed = [AvailableCommand(name=n, description=text) for n, text in BUILTINS.items()]
    for name, (command, plugin) in sorted(plugins.items()):
        hint = AvailableCommandInput(root=UnstructuredCommandInput(hint=command.usage))
        listed.append(
            AvailableCommand(
                name=name,
                description=f"{command.summary} ({plugin})" if plugin else command.summary,
                input=hint if command.usage else None,
            )
        )
    return listed


def command_of(text: str, known: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(name, arguments)`` when ``text`` is ``/NAME ...`` with ``NAME`` an offered command
    (``known``: the plugins' commands; the builtins always), else ``None``."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    word, _space, rest = stripped.partition(" ")
    name = word[1:].lower()
    if name in BUILTINS or name in known:
        return name, rest.strip()
    return None


@dataclass
class EditorSlashContext:
    """What a plugin's slash command sees of an editor session (``SlashContext``)."""

    home: Path
    data_home: Path
    config: Mapping[str, Any]
    session_id: str
    person: str | None
    store: SessionStore
    echo_to: Callable[[str], None]

    def session_store(self) -> SessionStore:
        """The session store of the editor's sessions."""
        return self.store

    def echo(self, text: str) -> None:
        """Show ``text`` in the editor, as the agent's message."""
        self.echo_to(text if text.endswith("\n") else text + "\n")


def session_config(config: Mapping[str, Any], cwd: str) -> dict[str, Any]:
    """``config`` as a turn of a session opened in ``cwd`` sees it (``terminal.cwd``)."""
    terminal = config.get("terminal")
    section = dict(terminal) if isinstance(terminal, Mapping) else {}
    section["cwd"] = cwd
    return {**config, "terminal": section}


def run_command(
    name: str,
    arguments: str,
    *,
    context: CommandContext,
    plugins: Mapping[str, tuple[SlashCommand, str]],
    session_id: str,
    cwd: str,
    usage: Mapping[str, int],
    echo: Callable[[str], None],
) -> None:
    """Run the offered command ``name`` for the session (in a worker thread: a plugin's
    command may take its time); what it shows goes to ``echo``. A command's one-line error or
    failure is shown the same way."""
    if name == "help":
        rows = [(f"/{n}", text) for n, text in BUILTINS.items()]
        for n, (c, p) in sorted(plugins.items()):
            rows.append((f"/{n} {c.usage}".strip(), f"{c.summary} ({p})"))
        width = max(len(r[0]) for r in rows)
        echo("\n".join(f"    {u:<{width}}  {t}" for u, t in rows) + "\n")
        return
    if name == "usage":
        total = usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
        lines = [f"{k.replace('_', ' ')}: {v:,}" for k, v in usage.items()]
        echo("\n".join([*lines, f"total tokens: {total:,}"]) + "\n")
        return
    command, plugin = plugins[name]
    home = Path(context.home)
    slash = EditorSlashContext(
        home=home,
        data_home=person_home(home, None),
        config=session_config(context.config, cwd),
        session_id=session_id,
        person=None,
        store=context.session_store(),
        echo_to=echo,
    )
    try:
        outcome = command.handler(arguments, slash)
    except HermesError as exc:
        echo(f"/{name}: {exc}\n")
        return
    except Exception as exc:  # a plugin's bug: the session goes on
        log.exception("slash command /%s of %s failed", name, plugin)
        echo(f"/{name} failed ({plugin}): {type(exc).__name__}: {exc}\n")
        return
    if isinstance(outcome, SlashOutcome) and outcome.switch_to:
        echo(
            f"/{name} continues in session {outcome.switch_to}: open it from the editor's "
            "session list\n"
        )
