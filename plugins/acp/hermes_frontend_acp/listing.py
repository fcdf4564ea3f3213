"""The session store as ACP sees it: listing a page, reading a transcript, remembering an
editor session's folder and choices, deleting."""

from __future__ import annotations

import datetime as _dt
import os
import time
from typing import Any

from acp.schema import SessionInfo as AcpSessionInfo

from hermes_hookspecs import PersonalSessionStore, SessionInfo, SessionStore

from .listing_store import ListingStore
from .session_state import METADATA_KEY, OpenSession

PAGE = 50
"""Sessions per ``session/list`` page."""

HIDDEN_SOURCES = frozenset({"subagent"})
"""Sessions no one talks to directly are not listed."""


def _iso(timestamp: float | None) -> str | None:
    if not timestamp:
        return None
    return _dt.datetime.fromtimestamp(timestamp, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def folder_of(session: SessionInfo) -> str | None:
    """The folder an editor session was opened in, when it was one."""
    saved = session.metadata.get(METADATA_KEY) if session.metadata else None
    cwd = saved.get("cwd") if isinstance(saved, dict) else None
    return cwd if isinstance(cwd, str) else None


class SessionCatalog:
    """hermes's sessions, for the ACP session requests."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def get(self, session_id: str) -> SessionInfo | None:
        """The stored session, or ``None``."""
        return self.store.get_session(session_id)

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's transcript."""
        return self.store.get_messages(session_id)

    def create(self, session: OpenSession) -> None:
        """Store a new editor session at once (its first turn fills it in), so that it can be
        loaded and listed before its first prompt, from any process."""
        self.store.create_session(
            SessionInfo(
                id=session.id,
                source="acp",
                model=session.model,
                started_at=time.time(),
                metadata={METADATA_KEY: session.stored_choices()},
            )
        )

    def remember(self, session: OpenSession) -> None:
        """Keep the editor session's folder and choices in its metadata (once stored)."""
        if self.store.get_session(session.id) is not None:
            self.store.update_session(session.id, metadata={METADATA_KEY: session.stored_choices()})

    def page(self, cwd: str | None, cursor: str | None) -> tuple[list[AcpSessionInfo], str | None]:
        """One page of the home owner's sessions (not those of the people a gateway serves),
        newest first, and the cursor of the next page (``None`` at the end). With ``cwd``, the
        sessions opened in that folder and those started outside an editor (no folder).

        :raises ValueError: a cursor this agent did not hand out, or a store that cannot list.
        """
        store = self.store
        if not isinstance(store, ListingStore):
            raise ValueError("this session store cannot list sessions")
        try:
            offset = int(cursor) if cursor else 0
        except ValueError:
            raise ValueError(f"not a cursor of this agent: {cursor!r}") from None
        if offset < 0:
            raise ValueError(f"not a cursor of this agent: {cursor!r}")
        if isinstance(store, PersonalSessionStore):  # the owner's, not a gateway's people's
            found = store.list_people_sessions([None], limit=PAGE, offset=offset)
        else:
            found = store.list_sessions(limit=PAGE, offset=offset)
        listed = []
        for session in found:
            if session.source in HIDDEN_SOURCES:
                continue
            folder = folder_of(session)
            if cwd is not None and folder is not None and folder != cwd:
                continue
            listed.append(
                AcpSessionInfo(
                    session_id=session.id,
                    cwd=folder or cwd or os.getcwd(),
                    title=session.title or None,
                    updated_at=_iso(session.ended_at or session.started_at),
                    field_meta={"source": session.source, "model": session.model},
                )
            )
        more = len(found) == PAGE
        return listed, (str(offset + PAGE) if more else None)

    def delete(self, session_id: str) -> bool:
        """Delete a stored session; ``False`` when there is none.

        :raises ValueError: a store that cannot delete.
        """
        store = self.store
        if not isinstance(store, ListingStore):
            raise ValueError("this session store cannot delete sessions")
        return store.delete_session(session_id)
