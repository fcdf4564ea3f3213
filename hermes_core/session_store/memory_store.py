"""The in-memory session store, used when no persistent store is configured."""

from __future__ import annotations

import copy
import threading
from dataclasses import replace
from typing import Any

from hermes_hookspecs import SessionInfo


class MemorySessionStore:
    """Keeps sessions and messages in this process only (implements ``SessionStore``)."""

    def __init__(self) -> None:
        self._sessions: dict[str, SessionInfo] = {}
        self._messages: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def create_session(self, session: SessionInfo) -> None:
        """Record a new session."""
        with self._lock:
            self._sessions[session.id] = replace(session)
            self._messages.setdefault(session.id, [])

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session, or ``None``."""
        with self._lock:
            found = self._sessions.get(session_id)
            return replace(found) if found else None

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change fields of a session; unknown fields go to ``metadata``."""
        with self._lock:
            session = self._sessions[session_id]
            for key, value in fields.items():
                if hasattr(session, key) and key != "metadata":
                    setattr(session, key, value)
                else:
                    session.metadata[key] = value

    def append_message(self, session_id: str, message: dict[str, Any]) -> None:
        """Persist one completed message."""
        with self._lock:
            self._messages.setdefault(session_id, []).append(copy.deepcopy(message))

    def get_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages, in order."""
        with self._lock:
            return copy.deepcopy(self._messages.get(session_id, []))
