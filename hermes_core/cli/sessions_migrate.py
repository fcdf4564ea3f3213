"""``hermes sessions migrate --to STORE [--from STORE] [--person ID]``: copy the sessions of one
store into another (SQLite to PostgreSQL, or back), idempotently
(:mod:`hermes_core.session_store.migrate`).

A store is named by a URL (``postgresql://…``, or any scheme a store plugin serves),
``sqlite:FOLDER`` (the ``sessions.db`` in it), or the path of a SQLite file. ``--from`` defaults
to the store this home uses (``store.url``, else its ``sessions.db``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from hermes_hookspecs import HermesError, SessionStore

from .helpers import current_state
from .state import CliState

__all__ = ["sessions_migrate"]


def _place(ref: str) -> str:
    """What names the same store twice the same way: a SQLite file's real path, else the URL."""
    if "://" in ref and not ref.startswith("sqlite:"):
        return ref.rstrip("/")
    return os.path.realpath(_sqlite_file(ref))


def _sqlite_file(ref: str) -> Path:
    """The SQLite file ``ref`` names: ``sqlite:FOLDER`` (its ``sessions.db``), a folder, or a
    file."""
    from ..session_store.hermes_agent import store_path

    if ref.startswith("sqlite:"):
        folder = ref[len("sqlite:") :]
        folder = folder[2:] if folder.startswith("//") else folder
        return store_path(Path(folder or ".").expanduser())
    path = Path(ref).expanduser()
    return store_path(path) if path.is_dir() else path


def _open(ref: str, state: CliState) -> SessionStore:
    """The store ``ref`` names (see the module's docstring)."""
    from ..host import open_plugin_store
    from ..session_store.sqlite_store import SQLiteSessionStore

    scheme = ref.split(":", 1)[0].lower() if ":" in ref else ""
    if scheme and scheme != "sqlite" and "://" in ref:
        return open_plugin_store(ref, state.home, state.registry)
    return SQLiteSessionStore(_sqlite_file(ref))


def _current(state: CliState) -> str:
    """How this home's own store is named."""
    url = state.config.get("store.url")  # HERMES_STORE_URL included
    return str(url) if url else str(state.home)


@click.command("migrate")
@click.option("--to", "to_ref", required=True, metavar="STORE", help="Where to copy to.")
@click.option(
    "--from", "from_ref", metavar="STORE", help="Where to copy from (default: this home's)."
)
@click.option("--person", default=None, help="Only this person's sessions ('owner': the home's).")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def sessions_migrate(to_ref: str, from_ref: str | None, person: str | None, as_json: bool) -> None:
    """Copy every session with its messages into another store (SQLite or PostgreSQL), again as
    often as you like: what the target already holds is not copied twice."""
    from ..session_store.migrate import copy_sessions

    state = current_state()
    source_ref = from_ref or _current(state)
    if _place(source_ref) == _place(to_ref):
        raise HermesError(f"--to names the store the sessions come from ({to_ref})")
    source = state.host.session_store if from_ref is None else _open(from_ref, state)
    target = _open(to_ref, state)
    people: list[str | None] | None = None
    if person is not None:
        people = [None if person == "owner" else person]
    try:
        report = copy_sessions(source, target, people=people)
    except TypeError as exc:
        raise HermesError(str(exc)) from None
    finally:
        for store in (target, source if from_ref is not None else None):
            close: Any = getattr(store, "close", None)
            if close is not None:
                close()
    if as_json:
        click.echo(json.dumps(report.__dict__))
    else:
        click.echo(report.line())
