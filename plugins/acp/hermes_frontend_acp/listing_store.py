"""What ``hermes acp`` needs of a session store beyond the contract's minimum."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hermes_hookspecs import SessionInfo, SessionStore


@runtime_checkable
class ListingStore(SessionStore, Protocol):
    """A store that can list and delete sessions (the SQLite and PostgreSQL stores can)."""

    def list_sessions(
        self, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionInfo]:
        """Sessions, newest first."""
        ...

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages; ``False`` when unknown."""
        ...
