"""Kept for compatibility: the session store now lives in :mod:`hermes_core.session_store`.

Plugins' tests and embedders import these names from here; new code imports them from
:mod:`hermes_core.session_store` (or its modules).
"""

from __future__ import annotations

from .session_store.codec import INSERT_MESSAGE_SQL, iter_message_rows, make_title, substrings_of
from .session_store.errors import SessionStoreError
from .session_store.recovery import repair
from .session_store.schema import SCHEMA_VERSION
from .session_store.search import SearchHit
from .session_store.sqlite_store import SQLiteSessionStore

__all__ = [
    "INSERT_MESSAGE_SQL",
    "SCHEMA_VERSION",
    "SQLiteSessionStore",
    "SearchHit",
    "SessionStoreError",
    "iter_message_rows",
    "make_title",
    "repair",
    "substrings_of",
]
