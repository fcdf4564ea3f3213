"""``hermes sessions``: list, show, search, export, delete, prune, stats and compress stored
sessions."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import click

from hermes_hookspecs import HermesError

from .helpers import current_state, show_json
from .session_refs import open_store, resolve_session
from .sessions_migrate import sessions_migrate
from .state import CliState


def _mark_known_secrets(state: CliState) -> None:
    """Make every secret hermes can know of redactable: ``.env`` (read with the home), keys in
    the configuration and the providers' key variables (marked as they load)."""
    try:
        _ = state.config
        _ = state.registry.providers
    except HermesError:
        pass  # a broken configuration still lets sessions be read; .env is marked anyway


def redacted(value: Any) -> Any:
    """``value`` (a message, a session record) with every known secret value replaced by
    ``[REDACTED]``, in every string it holds."""
    from hermes_runtime.secrets import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(item) for item in value]
    return value


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return "-"
    return _dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _session_or_fail(store: Any, session_id: str) -> Any:
    return store.get_session(resolve_session(store, session_id))


@click.group("sessions")
def sessions_group() -> None:
    """Stored conversations: list, show, search, export, delete."""


def _people_filter(person: str | None) -> list[str | None] | None:
    """The people ``--person`` names: ``owner`` for the home's owner, a person id, or nothing
    for everyone.

    :raises HermesError: an invalid person id.
    """
    from hermes_hookspecs import check_person

    if person is None:
        return None
    return [None] if person == "owner" else [check_person(person)]


PERSON_HELP = "Only this person's sessions (a gateway person id, or 'owner' for yours)."


@sessions_group.command("list")
@click.option("-n", "--limit", default=20, show_default=True, help="How many, newest first.")
@click.option("--person", default=None, help=PERSON_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_list(limit: int, person: str | None, as_json: bool) -> None:
    """List sessions, newest first, each marked with the person it was for."""
    store = open_store(current_state())
    people = _people_filter(person)
    if people is None:
        sessions = store.list_sessions(limit=limit)
    else:
        sessions = store.list_people_sessions(people, limit=limit)
    if as_json:
        show_json([s.__dict__ for s in sessions])
        return
    if not sessions:
        click.echo("no sessions yet")
        return
    rows = [
        (
            s.id,
            _when(s.started_at),
            s.person or "owner",
            s.model or "-",
            str(s.metadata.get("message_count", "")),
            (s.title or "(untitled)") + _origin(s),
        )
        for s in sessions
    ]
    header = ("ID", "STARTED", "PERSON", "MODEL", "MSGS", "TITLE")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    for row in [header, *rows]:
        cells = [row[i].rjust(widths[i]) if i == 4 else row[i].ljust(widths[i]) for i in range(5)]
        click.echo("  ".join([*cells, row[5]]))


def _origin(session: Any) -> str:
    """`` [Hermes agent]`` after a session copied from the Hermes agent's ``state.db``."""
    from ..session_store.hermes_agent import IMPORTED_FROM

    return "  [Hermes agent]" if session.metadata.get("imported_from") == IMPORTED_FROM else ""


@sessions_group.command("show")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--ledger",
    is_flag=True,
    help="Print the token ledger instead: each request's estimated tokens by part, and what "
    "the provider reported as input and as cached.",
)
def sessions_show(session_id: str, as_json: bool, ledger: bool) -> None:
    """Show one session and its messages (known secret values redacted)."""
    state = current_state()
    store = open_store(state)
    _mark_known_secrets(state)
    session = _session_or_fail(store, session_id)
    messages = redacted(store.get_messages(session.id))
    if ledger:
        _show_ledger(session.id, messages, as_json)
        return
    if as_json:
        record = redacted(json.loads(json.dumps(session.__dict__, default=str)))
        show_json({"session": record, "messages": messages})
        return
    click.echo(f"session {session.id}: {redacted(session.title or '(untitled)')}{_origin(session)}")
    click.echo(
        f"  {session.provider or '-'} / {session.model or '-'}, started "
        f"{_when(session.started_at)}, {len(messages)} messages"
        + (f", for {session.person}" if session.person else "")
    )
    if session.parent_session_id:
        click.echo(f"  continues {session.parent_session_id}")
    click.echo(_as_markdown(messages, headings=False))


def _show_ledger(session_id: str, messages: list[dict[str, Any]], as_json: bool) -> None:
    """The ledger entries kept on the session's messages, as a table or JSON."""
    from ..loop.request_ledger import rows, table

    entries = rows(messages)
    if as_json:
        show_json({"session": session_id, "requests": entries})
        return
    if not entries:
        click.echo(f"session {session_id}: no request ledger (made before hermes kept one)")
        return
    click.echo(f"session {session_id}: {len(entries)} request(s), estimated tokens by part")
    click.echo(table(entries))


def _as_markdown(messages: list[dict[str, Any]], headings: bool = True) -> str:
    parts = []
    for m in messages:
        role = m.get("role", "?")
        content = m.get("content")
        if content is None:
            text = ""
        elif isinstance(content, str):
            text = content
        else:
            text = json.dumps(content, ensure_ascii=False)
        if role == "tool":
            name = m.get("tool_name") or m.get("tool_call_id")
            parts.append(f"{'### ' if headings else '  '}tool result ({name})\n\n{text}")
            continue
        calls = m.get("tool_calls") or []
        lines = [text] if text else []
        for call in calls:
            fn = call.get("function") or {}
            lines.append(f"-> {fn.get('name')}({fn.get('arguments')})")
        label = "assistant (tool calls)" if role == "assistant" and calls and not text else role
        parts.append(f"{'### ' if headings else '  '}{label}\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


@sessions_group.command("search")
@click.argument("query")
@click.option("-n", "--limit", default=20, show_default=True)
@click.option("--person", default=None, help=PERSON_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_search(query: str, limit: int, person: str | None, as_json: bool) -> None:
    """Full-text search over every stored message and tool output (secrets redacted)."""
    state = current_state()
    store = open_store(state)
    _mark_known_secrets(state)
    people = _people_filter(person)
    found = (
        store.search(query, limit=limit)
        if people is None
        else store.search_people(people, query, limit=limit)
    )
    hits = [redacted(dict(h.__dict__)) for h in found]
    if as_json:
        show_json(hits)
        return
    if not hits:
        click.echo("no matches")
        return
    for hit in hits:
        click.echo(
            f"{hit['session_id']}  {_when(hit['started_at'])}  {hit['title'] or '(untitled)'}"
        )
        click.echo(f"    {hit['role']}: {hit['snippet']}")


@sessions_group.command("export")
@click.argument("session_id")
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "md"]), default="jsonl", show_default=True
)
def sessions_export(session_id: str, fmt: str) -> None:
    """Print a session as JSON lines (session first, then messages) or markdown; every known
    secret value (keys from .env and the configuration) is replaced by [REDACTED]."""
    state = current_state()
    store = open_store(state)
    _mark_known_secrets(state)
    session = _session_or_fail(store, session_id)
    messages = redacted(store.get_messages(session.id))
    if fmt == "md":
        title = redacted(session.title or session.id)
        click.echo(f"# {title}\n\n{_as_markdown(messages)}")
        return
    record = redacted(json.loads(json.dumps({"session": session.__dict__}, default=str)))
    click.echo(json.dumps(record, ensure_ascii=False))
    for message in messages:
        click.echo(json.dumps(message, ensure_ascii=False, default=str))


@sessions_group.command("delete")
@click.argument("session_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def sessions_delete(session_id: str, yes: bool) -> None:
    """Delete a session and its messages."""
    store = open_store(current_state())
    session_id = _session_or_fail(store, session_id).id
    if not yes:
        click.confirm(f"delete session {session_id}?", abort=True)
    store.delete_session(session_id)
    click.echo(f"deleted {session_id}")


@sessions_group.command("prune")
@click.option(
    "--older-than",
    "days",
    type=click.FloatRange(min=0),
    required=True,
    metavar="DAYS",
    help="Delete sessions that started more than DAYS ago.",
)
def sessions_prune(days: float) -> None:
    """Delete sessions older than a number of days."""
    count = open_store(current_state()).prune(days)
    click.echo(f"deleted {count} session(s)")


@sessions_group.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_stats(as_json: bool) -> None:
    """Counts and size of the session store."""
    stats = open_store(current_state()).stats()
    if as_json:
        show_json(stats)
        return
    shown = dict(stats)
    for key in ("oldest", "newest"):
        shown[key] = _when(stats.get(key))
    size = stats.get("db_size_bytes")
    if isinstance(size, int):
        shown["db_size_bytes"] = f"{size:,} ({size / 1_048_576:.1f} MiB)"
    width = max(len(k) for k in shown)
    for key, value in shown.items():
        click.echo(f"{key:<{width}}  {value}")


@sessions_group.command("compress")
@click.argument("session_id")
@click.option("--focus", metavar="TEXT", help="What the summary should keep in detail.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_compress(session_id: str, focus: str | None, as_json: bool) -> None:
    """Compress a stored session into a child session (resume follows it).

    The newest session of ID's lineage is compressed with the configured context engine and
    model, exactly as a long chat would be; the result continues in a new session whose parent
    is that one.
    """
    from .chat_agent import make_agent
    from .display import Display

    state = current_state()
    store = open_store(state)
    session_id = _session_or_fail(store, session_id).id
    display = Display(interactive=False, stream=False)
    agent = make_agent(
        state,
        interactive=False,
        display=display,
        yolo=False,
        stream=False,
        session_id=session_id,
    )
    current = agent.session_id  # the newest of the lineage
    try:
        figures = agent.compress(focus)
    finally:
        agent.close()
    if as_json:
        show_json(figures)
        return
    if figures["session_id"] == current:
        click.echo(f"nothing to compress in {current}: the context engine kept every message")
        return
    click.echo(
        f"compressed {figures['parent_session_id']} into {figures['session_id']}: "
        f"{figures['messages_before']} -> {figures['messages_after']} messages, "
        f"~{figures['tokens_before']:,} -> ~{figures['tokens_after']:,} tokens"
    )


@sessions_group.command("repair")
def sessions_repair() -> None:
    """Move hermes's own corrupt session database aside, keeping every row still readable
    (another program's file, the Hermes agent's state.db among them, is never touched)."""
    from ..session_store.hermes_agent import store_path
    from ..session_store.recovery import repair

    state = current_state()
    url = state.host.core_config.get("store.url")
    if url and not str(url).startswith("sqlite:"):
        raise HermesError(
            "hermes sessions repair mends the SQLite file; this home keeps its sessions at "
            "store.url (use that database's own tools)"
        )
    click.echo(repair(store_path(state.home)))


@sessions_group.command("import-hermes")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_import_hermes(path: Path | None, as_json: bool) -> None:
    """Copy the Hermes agent's sessions (PATH, default its state.db in this home) into hermes's
    store, read-only: the file is never changed. Running it again copies only what is new.
    hermes also does this by itself when the home's state.db changed, saying so in one line."""
    from ..session_store.hermes_agent import HERMES_AGENT_FILE, import_hermes_agent

    state = current_state()
    source = path if path is not None else state.home / HERMES_AGENT_FILE
    if not source.is_file():
        raise HermesError(f"{source} does not exist; give the path of the Hermes agent's state.db")
    store = open_store(state)
    from ..session_store.sqlite_store import SQLiteSessionStore

    if not isinstance(store, SQLiteSessionStore):
        raise HermesError(
            f"importing the Hermes agent's sessions needs the SQLite store; this home keeps its "
            f"sessions in a {type(store).__name__} (store.url)"
        )
    report = import_hermes_agent(store, source)
    if as_json:
        show_json({**report.__dict__, "source": str(report.source)})
        return
    click.echo(report.line())


sessions_group.add_command(sessions_migrate)
