"""Sessions: the record of a conversation, and the store that keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class SessionInfo:
    """A session as hooks see it.

    :param id: the session id.
    :param source: where it came from (``cli``, ``library``...).
    :param model: the model name.
    :param provider: the provider name.
    :param system_prompt: the assembled system prompt, stored and replayed byte for byte.
    :param parent_session_id: the session this one continues after compression.
    :param started_at: UNIX time it started.
    :param ended_at: UNIX time it ended, once ended.
    :param end_reason: why it ended (``completed``, ``interrupted``, ``error``...).
    :param title: a short title.
    :param metadata: anything else a store keeps.
    """

    id: str
    source: str = "cli"
    model: str = ""
    provider: str = ""
    system_prompt: str | None = None
    parent_session_id: str | None = None
    started_at: float = 0.0
    ended_at: float | None = None
    end_reason: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions and their messages are persisted; each call is one short transaction."""

    def create_session(self, session: SessionInfo) -> None:
        """Record a new session."""
        ...

    def get_session(self, session_id: str) -> SessionInfo | None:
        """Return the session, or ``None`` when unknown."""
        ...

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change fields of a session (``system_prompt``, ``ended_at``, token counts...)."""
        ...

    def append_message(self, session_id: str, message: dict[str, Any]) -> None:
        """Persist one completed message (internal fields included)."""
        ...

    def get_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order."""
        ...
