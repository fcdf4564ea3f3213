"""The session store as one person's tools see it: their own sessions, and those of the people
who share with them, and nothing else.

The host hands a person's tool calls this view as ``ToolContext.session_store``, so a tool
(``session_search``, ``todo``, a third-party one) cannot reach another person's conversations
by id or by search, whatever it asks. A store that cannot keep people apart (one that is not a
:class:`~hermes_hookspecs.PersonalSessionStore`) gives a person no search at all: the search
fails closed rather than running over everyone's sessions.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from hermes_hookspecs import (
    HermesError,
    PersonalSessionStore,
    SearchHit,
    SessionInfo,
    SessionStore,
)


class PersonalView:
    """``store`` limited to the sessions of ``person`` and of ``shared`` (other people whose
    sessions ``person`` may read and search: a group that shares). Writes go to ``person``'s
    own sessions only; a new session is always ``person``'s.

    Implements :class:`~hermes_hookspecs.SearchableSessionStore`.
    """

    def __init__(self, store: SessionStore, person: str, shared: Collection[str] = ()) -> None:
        self.store = store
        self.person = person
        self.people: frozenset[str | None] = frozenset({person, *shared})

    def __repr__(self) -> str:
        return f"PersonalView({self.store!r}, person={self.person!r})"

    def _visible(self, session_id: str) -> SessionInfo | None:
        session = self.store.get_session(session_id)
        return session if session is not None and session.person in self.people else None

    def _own(self, session_id: str) -> None:
        session = self.store.get_session(session_id)
        if session is None or session.person != self.person:
            raise HermesError(f"session {session_id!r} does not exist")

    # --- SessionStore --------------------------------------------------------------------

    def create_session(self, session: SessionInfo) -> None:
        """Record a new session of this view's person."""
        if session.person != self.person:
            raise HermesError("a session made here belongs to the person it is made for")
        self.store.create_session(session)

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session when it is visible to this person, else ``None``."""
        return self._visible(session_id)

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change fields of one of this person's own sessions."""
        self._own(session_id)
        self.store.update_session(session_id, **fields)

    def append_message(self, session_id: str, message: dict[str, Any]) -> None:
        """Append a message to one of this person's own sessions."""
        self._own(session_id)
        self.store.append_message(session_id, message)

    def get_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The messages of a visible session; ``[]`` for any other."""
        if self._visible(session_id) is None:
            return []
        return self.store.get_messages(session_id)

    def get_clean_messages(self, session_id: str) -> list[dict[str, Any]]:
        """:meth:`get_messages`, text UTF-8 cannot carry replaced (when the store can)."""
        if self._visible(session_id) is None:
            return []
        clean = getattr(self.store, "get_clean_messages", None)
        return clean(session_id) if clean is not None else self.store.get_messages(session_id)

    def batch(self) -> AbstractContextManager[Any]:
        """The store's batch of writes, when it has one."""
        batch = getattr(self.store, "batch", None)
        return batch() if batch is not None else nullcontext()

    # --- SearchableSessionStore ----------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int = 20,
        snippet_chars: int = 160,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """The messages matching ``query`` in the sessions visible to this person.

        :raises HermesError: the store cannot keep people's sessions apart.
        """
        if not isinstance(self.store, PersonalSessionStore):
            raise HermesError(
                f"the session store in use ({type(self.store).__name__}) cannot keep people's "
                "sessions apart, so searching them is turned off for people of a gateway"
            )
        return self.store.search_people(
            self.people,
            query,
            limit=limit,
            snippet_chars=snippet_chars,
            exclude_session=exclude_session,
        )

    def sessions(self, limit: int = 50) -> Iterator[SessionInfo]:
        """The visible sessions, newest first (none when the store cannot tell whose)."""
        if isinstance(self.store, PersonalSessionStore):
            yield from self.store.list_people_sessions(self.people, limit=limit)
