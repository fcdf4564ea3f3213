"""Sessions: the record of a conversation, the store that keeps it, and searching it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
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
    :param person: whose session it is: the person a gateway ran it for (see
        :mod:`hermes_hookspecs.people`); ``None`` for the home's owner.
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
    person: str | None = None


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions and their messages are persisted; each call is one short transaction.

    A store may also offer two methods that the core uses when they are there (looked up by
    name: a simple store need not write them):

    - ``batch()``: a context manager whose calls are written in one transaction, committed
      when the block ends, none of them kept when it raises; a block inside another joins it.
      The agent writes each step of a turn in one.
    - ``get_clean_messages(session_id)``: :meth:`get_messages` with the text UTF-8 cannot
      carry (lone surrogates) replaced by U+FFFD; without it, the agent cleans each message.
    """

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


@dataclass
class SearchHit:
    """One stored message that matched a search of past sessions.

    :param session_id: the session it belongs to.
    :param title: the session's title.
    :param started_at: when the session started (UNIX time).
    :param role: the message's role (``user``, ``assistant``, ``tool``).
    :param snippet: a one-line excerpt with each match marked ``[`` ... ``]``.
    :param message_id: the message's id in the store (unique within it).
    :param score: relevance, higher is better (only the order is meaningful).
    """

    session_id: str
    title: str | None
    started_at: float
    role: str
    snippet: str
    message_id: int = 0
    score: float = 0.0


@runtime_checkable
class SearchableSessionStore(SessionStore, Protocol):
    """A :class:`SessionStore` that can also search the messages of every stored session.

    ``isinstance(store, SearchableSessionStore)`` tells whether a store offers search.
    """

    def search(
        self,
        query: str,
        *,
        limit: int = 20,
        snippet_chars: int = 160,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """The messages matching ``query``, best first.

        ``query`` is plain words (not a query language): a message matches when it holds every
        word (or, when none does, any of them); ``"quoted words"`` match as a phrase.

        :param limit: at most this many hits.
        :param snippet_chars: about this many characters of text in each snippet.
        :param exclude_session: leave out this session's messages (e.g. the current one).
        """
        ...


@runtime_checkable
class LockingSessionStore(SessionStore, Protocol):
    """A :class:`SessionStore` that can hold one turn of a session at a time across every
    process (and machine) using it.

    ``isinstance(store, LockingSessionStore)`` tells whether a store offers the lock. A
    gateway holds it around each turn, so that two processes sharing the store never run two
    turns of one session at once.
    """

    def hold_session(
        self, session_id: str, cancel: threading.Event
    ) -> AbstractContextManager[bool]:
        """Hold the lock of one turn of ``session_id`` across every process (and machine)
        using this store while the block runs; wait for the holder.

        ``with store.hold_session(session_id, cancel) as held:`` is ``True`` once the lock is
        held; ``False`` (holding nothing) when ``cancel`` is set while waiting (a free lock
        is taken at once, whatever ``cancel`` says). The lock is released when the block
        ends, also when it raises, and when its holder's process dies: no stale lock
        outlives a crash. Locks of different sessions are independent. The lock is not
        re-entrant: a second hold of the same session waits for the first one, even in the
        same thread.
        """
        ...


SessionStoreFactory = Callable[[str, Path | None], SessionStore]
"""``factory(url, home)``: the session store at ``url`` (registered through
``hermes_register_session_stores`` for the URL's scheme); ``home`` is the hermes home."""


__all__ = [
    "LockingSessionStore",
    "SearchHit",
    "SearchableSessionStore",
    "SessionInfo",
    "SessionStore",
    "SessionStoreFactory",
]
