"""Naming a stored session on the command line: the store of the active home, and the one
session an id, an id prefix or a title names."""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import HermesError

from .state import CliState


def open_store(state: CliState) -> Any:
    """The session store of the active home (``$HERMES_HOME/sessions.db``)."""
    return state.host.session_store


def resolve_session(store: Any, ref: str) -> str:
    """The id of the one session ``ref`` names: an exact id, a unique id prefix or a title.

    :raises HermesError: nothing matches, or several sessions do (they are listed).
    """
    found = store.find_sessions(ref, limit=6)
    if not found:
        raise HermesError(
            f"no session {ref!r}; `hermes sessions list` or `hermes sessions search TEXT`"
            " show the ids"
        )
    if len(found) > 1:
        shown = ", ".join(f"{s.id} ({s.title or 'untitled'})" for s in found[:5])
        raise HermesError(
            f"{ref!r} names {len(found)} or more sessions: {shown}; give more of the id"
        )
    return str(found[0].id)
