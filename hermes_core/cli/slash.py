"""The interactive chat's slash commands (``/tools``, ``/usage``, ``/compress``...) and the
tables they print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import HermesError

from ..chat_commands import SLASH_COMMANDS
from .display import Display
from .slash_plugins import run_plugin_command

if TYPE_CHECKING:
    from ..loop.agent import Agent


def help_table(agent: Agent | None = None) -> str:
    """The slash commands in two aligned columns: the chat's own, then those of ``agent``'s
    plugins."""
    rows = list(SLASH_COMMANDS)
    if agent is not None:
        for name, entry in sorted(agent.registry.slash_commands.items()):
            usage = f"/{name} {entry.value.usage}".strip()
            rows.append((usage, f"{entry.value.summary} ({entry.plugin})"))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name:<{width}}  {text}" for name, text in rows)


def handle_slash(line: str, agent: Agent, store: Any, display: Display | None = None) -> bool | str:
    """Handle a /command: True to leave the chat, a session id to switch to (``""``: a new
    session), False to go on."""
    words = line.split()
    command = words[0].lower()
    if command in ("/exit", "/quit"):
        return True
    if command == "/new":
        return ""
    if command == "/resume":
        if len(words) > 1:
            from .session_refs import resolve_session

            try:
                return resolve_session(store, " ".join(words[1:]))
            except HermesError as exc:
                click.echo(f"  {exc}; /resume alone lists recent ones")
                return False
        for session in store.list_sessions(limit=10):
            click.echo(f"  {session.id}  {session.title or '(untitled)'}")
        return False
    if command == "/tools":
        click.echo(", ".join(agent.toolbox.names) or "no tools enabled")
    elif command == "/usage":
        click.echo(usage_table(agent.usage.as_dict(), agent.cost_usd))
    elif command == "/prompt":
        click.echo(agent.system_prompt or "(empty system prompt)")
    elif command == "/compress":
        _compress(agent, line.strip()[len(words[0]) :].strip() or None, display)
    elif command == "/context":
        engine = agent.engine
        click.echo(figures_table(engine.status()) if engine else "  no context engine")
    elif command == "/help":
        click.echo(help_table(agent))
    else:
        return run_plugin_command(line, agent, store)
    return False


def usage_table(usage: dict[str, int], cost_usd: float | None) -> str:
    """The session's token usage as an aligned two-column table."""
    rows = [(name.replace("_", " "), f"{value:,}") for name, value in usage.items()]
    rows.append(
        ("total tokens", f"{usage.get('input_tokens', 0) + usage.get('output_tokens', 0):,}")
    )
    if cost_usd is not None:
        rows.append(("estimated cost", f"${cost_usd:.4f}"))
    return _table(rows)


def figures_table(figures: dict[str, Any]) -> str:
    """A context engine's figures as an aligned two-column table (nested values flattened)."""
    rows: list[tuple[str, str]] = []
    for name, value in figures.items():
        if isinstance(value, dict):
            rows.extend((f"{name}.{k}", _cell(v)) for k, v in value.items())
        else:
            rows.append((name, _cell(value)))
    return _table(rows)


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "-"}[value]
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def _table(rows: list[tuple[str, str]]) -> str:
    width = max((len(name) for name, _ in rows), default=0)
    value_width = max((len(value) for _, value in rows), default=0)
    return "\n".join(f"  {name:<{width}}  {value:>{value_width}}" for name, value in rows)


COMPACTION_STATUS = ("context compressed", "nothing to compress")


def _compress(agent: Agent, focus: str | None, display: Display | None) -> None:
    """``/compress [focus]``: compress now and say once what it did (the compactor's own status
    line about it is held back, this report replaces it)."""
    current = agent.session_id
    if display is not None:
        display.hold_status(COMPACTION_STATUS)
    try:
        figures = agent.compress(focus)
    except HermesError as exc:
        click.echo(f"  cannot compress: {exc}")
        return
    except KeyboardInterrupt:
        click.echo("  (compression interrupted; nothing changed)")
        return
    finally:
        if display is not None:
            display.hold_status(())
    if figures["session_id"] == current:
        click.echo("  nothing to compress: the context engine kept every message")
        return
    click.echo(
        f"  compressed {figures['messages_before']} -> {figures['messages_after']} messages "
        f"(~{figures['tokens_before']:,} -> ~{figures['tokens_after']:,} tokens); "
        f"session {figures['session_id']} continues {figures['parent_session_id']}"
    )
