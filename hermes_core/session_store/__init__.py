"""Where sessions and their messages are kept: implementations of
:class:`hermes_hookspecs.SessionStore`.

- :mod:`.memory_store`: :class:`MemorySessionStore`, in this process only;
- :mod:`.sqlite_store`: :class:`SQLiteSessionStore`, the embedded store (``state.db``), built on
  :mod:`.schema` (tables and migrations), :mod:`.codec` (messages to rows and back),
  :mod:`.search` (full-text search), :mod:`.connections` (connections, busy retries, file modes),
  :mod:`.session_locks` (one turn per session at a time) and :mod:`.errors`;
- :mod:`.recovery`: :func:`repair` of a damaged database.

The names below are imported on first use, so importing the package (as the agent does for the
in-memory store) does not load SQLite.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .codec import INSERT_MESSAGE_SQL, iter_message_rows, make_title, substrings_of
    from .errors import SessionStoreError
    from .memory_store import MemorySessionStore
    from .recovery import repair
    from .schema import SCHEMA_VERSION
    from .search import SearchHit
    from .sqlite_store import SQLiteSessionStore

_WHERE = {
    "INSERT_MESSAGE_SQL": "codec",
    "MemorySessionStore": "memory_store",
    "SCHEMA_VERSION": "schema",
    "SQLiteSessionStore": "sqlite_store",
    "SearchHit": "search",
    "SessionStoreError": "errors",
    "iter_message_rows": "codec",
    "make_title": "codec",
    "repair": "recovery",
    "substrings_of": "codec",
}

__all__ = [
    "INSERT_MESSAGE_SQL",
    "SCHEMA_VERSION",
    "MemorySessionStore",
    "SQLiteSessionStore",
    "SearchHit",
    "SessionStoreError",
    "iter_message_rows",
    "make_title",
    "repair",
    "substrings_of",
]


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from the module that holds it."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
