"""People: whom a run acts for, where that person's own data lives, and the store capability
that keeps one person's sessions from another's.

A hermes home has one owner (whoever runs ``hermes`` on the command line) and, when a gateway
serves it, any number of *people*: each platform user, mapped through ``gateway.users`` to a
person id. What the agent remembers for a person (memory, the user profile, the skills it
writes, todo lists, sessions, scheduled jobs) is that person's alone. A run's person is
:attr:`AgentTask.person <hermes_hookspecs.AgentTask>`; a tool sees it as
:attr:`ToolContext.person <hermes_hookspecs.ToolContext>` and keeps what it stores under
:func:`person_home`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .errors import HermesError
from .sessions import SearchableSessionStore, SearchHit, SessionInfo

PEOPLE_DIR = "people"
"""The folder of a home that holds one folder per person."""

PERSON_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
"""What a person id may be: lower-case letters, digits, ``_``, ``.`` and ``-``, at most 64,
starting with a letter or digit (it names a folder, so it can never climb out of ``people/``)."""


def check_person(person: str | None) -> str | None:
    """``person`` when it is ``None`` (the owner) or a valid person id.

    :raises HermesError: anything else, in one line (a path, an upper-case name, ``..``).
    """
    if person is None:
        return None
    if not isinstance(person, str) or not PERSON_ID_RE.match(person) or ".." in person:
        raise HermesError(
            f"{person!r} is not a person id (lower-case letters, digits, '_', '.' and '-', "
            "at most 64, starting with a letter or digit)"
        )
    return person


def person_home(home: Path, person: str | None) -> Path:
    """The folder that holds ``person``'s own data in the hermes home ``home``: ``home`` itself
    for the owner (``None``), else ``home/people/<person>``. Nothing is created.

    :raises HermesError: ``person`` is not a valid person id.
    """
    if check_person(person) is None:
        return home
    return home / PEOPLE_DIR / str(person)


@dataclass(frozen=True)
class PersonScope:
    """What every run of one person may do, as the plugin that defines people decides
    (returned by ``hermes_person_scope``). The host applies it to each run for that person,
    whoever starts it: a gateway turn, a scheduled job, a subagent.

    :param toolsets: when given, the toolsets the person may have (and what they include): a
        narrowing of what the run would get, never a widening.
    :param shared_people: other people whose sessions the person may also search (the members
        of a group configured to share).
    :param config_overrides: dotted configuration keys and values applied over the run's
        configuration, last, so that nothing the run asks for overrides them (``model.default``,
        ``approvals.mode``, ``terminal.sandbox.network``, ``memory.memory_enabled`` ...).
    """

    toolsets: Sequence[str] | None = None
    shared_people: Sequence[str] = ()
    config_overrides: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class PersonalSessionStore(SearchableSessionStore, Protocol):
    """A searchable store that records whose each session is (:attr:`SessionInfo.person`) and
    keeps a search or a listing to some people's sessions.

    ``isinstance(store, PersonalSessionStore)`` tells whether a store can keep people apart.
    The host gives a person's tools a view of the store limited to that person's sessions
    (and those of the groups that share with them); with a store that cannot, a person's
    search is refused rather than run over everyone's sessions.
    """

    def search_people(
        self,
        people: Collection[str | None],
        query: str,
        *,
        limit: int = 20,
        snippet_chars: int = 160,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """:meth:`~hermes_hookspecs.SearchableSessionStore.search` over the sessions of
        ``people`` only (``None`` in it stands for the owner's sessions)."""
        ...

    def list_people_sessions(
        self, people: Collection[str | None], limit: int = 50, offset: int = 0
    ) -> list[SessionInfo]:
        """The sessions of ``people``, newest first."""
        ...

    def people_counts(self) -> dict[str | None, int]:
        """How many sessions each person has (``None``: the owner's)."""
        ...

    def forget_person(self, person: str) -> int:
        """Delete every session of ``person`` with its messages (and their search entries);
        returns how many sessions were deleted."""
        ...


__all__ = [
    "PEOPLE_DIR",
    "PERSON_ID_RE",
    "PersonScope",
    "PersonalSessionStore",
    "check_person",
    "person_home",
]
