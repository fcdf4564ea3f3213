"""The in-memory session store, used when no persistent store is configured, with a plain
search over what it holds."""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from hermes_hookspecs import HermesError, SearchHit, SessionInfo, check_person

from .surrogates import encodable, replace_surrogates

_TERM = re.compile(r'"([^"]*)"|(\S+)')


class MemorySessionStore:
    """Keeps sessions and messages in this process only (implements
    ``hermes_hookspecs.PersonalSessionStore``)."""

    def __init__(self) -> None:
        self._sessions: dict[str, SessionInfo] = {}
        self._messages: dict[str, list[dict[str, Any]]] = {}
        self._ids: dict[str, list[int]] = {}
        self._unclean: dict[str, set[int]] = {}
        """Per session, the positions of the messages holding text UTF-8 cannot carry."""
        self._next_id = 1
        self._lock = threading.Lock()

    def create_session(self, session: SessionInfo) -> None:
        """Record a new session."""
        check_person(session.person)
        with self._lock:
            self._sessions[session.id] = replace(session)
            self._messages.setdefault(session.id, [])

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session, or ``None``."""
        with self._lock:
            found = self._sessions.get(session_id)
            return replace(found) if found else None

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change fields of a session; unknown fields go to ``metadata`` and a ``metadata`` dict
        is merged into it; an unknown session is a :class:`HermesError`."""
        if "person" in fields:
            raise HermesError("a session's person cannot be changed")
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise HermesError(f"session {session_id!r} does not exist")
            for key, value in fields.items():
                if key == "metadata":
                    session.metadata.update(value or {})
                elif hasattr(session, key):
                    setattr(session, key, value)
                else:
                    session.metadata[key] = value

    def append_message(self, session_id: str, message: dict[str, Any]) -> None:
        """Persist one completed message."""
        with self._lock:
            kept = _copied(message)
            messages = self._messages.setdefault(session_id, [])
            if not encodable(kept):
                self._unclean.setdefault(session_id, set()).add(len(messages))
            messages.append(kept)
            self._ids.setdefault(session_id, []).append(self._next_id)
            self._next_id += 1

    def get_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages, in order."""
        with self._lock:
            return copy.deepcopy(self._messages.get(session_id, []))

    def get_clean_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages, in order, with text UTF-8 cannot carry (lone surrogates)
        replaced by U+FFFD, as a conversation replays them."""
        with self._lock:
            unclean = self._unclean.get(session_id, set())
            return [
                replace_surrogates(message) if index in unclean else message
                for index, message in enumerate(copy.deepcopy(self._messages.get(session_id, [])))
            ]

    def search(
        self,
        query: str,
        limit: int = 20,
        snippet_chars: int = 160,
        *,
        exclude_session: str | None = None,
        people: Collection[str | None] | None = None,
    ) -> list[SearchHit]:
        """Messages holding every term of ``query`` (or, when none does, any term), case
        insensitive, as substrings; ``"quoted words"`` are one term. The best first (most
        terms, then most occurrences), then the most recent.

        :param limit: at most this many hits (1..200).
        :param snippet_chars: the length of each snippet (40..2000).
        :param exclude_session: leave out this session's messages (e.g. the current one).
        :param people: only the sessions of these people (``None`` in it: the owner's).
        """
        terms = _terms(query or "")
        if not terms:
            return []
        limit = max(1, min(int(limit), 200))
        snippet_chars = max(40, min(int(snippet_chars), 2000))
        with self._lock:
            rows = [
                (self._ids[sid][i], sid, message.get("role") or "", _text(message))
                for sid, messages in self._messages.items()
                if sid != exclude_session and (people is None or self._person_of(sid) in people)
                for i, message in enumerate(messages)
            ]
            sessions = {sid: replace(info) for sid, info in self._sessions.items()}
        found: list[tuple[int, int, int, str, str, str]] = []
        for message_id, sid, role, text in rows:
            lowered = text.lower()
            counts = [lowered.count(term) for term in terms]
            matched = sum(1 for c in counts if c)
            if matched:
                found.append((matched, sum(counts), message_id, sid, role, text))
        if any(matched == len(terms) for matched, *_ in found):
            found = [row for row in found if row[0] == len(terms)]
        found.sort(key=lambda row: (-row[0], -row[1], -row[2]))
        hits = []
        for matched, occurrences, message_id, sid, role, text in found[:limit]:
            session = sessions.get(sid)
            hits.append(
                SearchHit(
                    session_id=sid,
                    title=session.title if session else None,
                    started_at=session.started_at if session else 0.0,
                    role=role,
                    snippet=_snippet(text, terms, snippet_chars),
                    message_id=message_id,
                    score=float(matched * 1000 + occurrences),
                )
            )
        return hits

    def _person_of(self, session_id: str) -> str | None | bool:
        """The person of a session; ``False`` (nobody's) for messages without a session."""
        session = self._sessions.get(session_id)
        return session.person if session is not None else False

    def search_people(
        self,
        people: Collection[str | None],
        query: str,
        *,
        limit: int = 20,
        snippet_chars: int = 160,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """:meth:`search` over the sessions of ``people`` only."""
        return self.search(
            query,
            limit,
            snippet_chars,
            exclude_session=exclude_session,
            people=[check_person(p) for p in people],
        )

    def list_people_sessions(
        self, people: Collection[str | None], limit: int = 50, offset: int = 0
    ) -> list[SessionInfo]:
        """The sessions of ``people``, newest first."""
        with self._lock:
            found = [replace(s) for s in self._sessions.values() if s.person in people]
        found.sort(key=lambda s: -s.started_at)
        return found[max(0, offset) : max(0, offset) + max(0, limit)]

    def people_counts(self) -> dict[str | None, int]:
        """How many sessions each person has."""
        counts: dict[str | None, int] = {}
        with self._lock:
            for session in self._sessions.values():
                counts[session.person] = counts.get(session.person, 0) + 1
        return counts

    def forget_person(self, person: str) -> int:
        """Delete every session of ``person`` with its messages."""
        check_person(person)
        with self._lock:
            ids = [sid for sid, s in self._sessions.items() if s.person == person]
            for sid in ids:
                self._sessions.pop(sid, None)
                self._messages.pop(sid, None)
                self._ids.pop(sid, None)
                self._unclean.pop(sid, None)
        return len(ids)


def _terms(query: str) -> list[str]:
    """The lower-cased terms of a query: quoted phrases and single words."""
    terms = []
    for match in _TERM.finditer(query):
        text = match.group(1) if match.group(1) is not None else match.group(2)
        text = " ".join(text.split()).lower()
        if text and text not in terms:
            terms.append(text)
    return terms


def _text(message: dict[str, Any]) -> str:
    """The searchable text of a message: its text content and its tool calls."""
    content = message.get("content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        texts = [
            part if isinstance(part, str) else str(part.get("text") or "")
            for part in content
            if isinstance(part, (str, dict))
        ]
    else:
        texts = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False) if arguments else ""
            texts.append(f"tool call: {function.get('name') or ''} {arguments}")
    return " ".join(" ".join(texts).split())


def _snippet(text: str, terms: list[str], chars: int) -> str:
    """About ``chars`` characters of ``text`` around its first match, matches marked ``[``
    ... ``]``."""
    lowered = text.lower()
    first = min((i for i in (lowered.find(t) for t in terms) if i >= 0), default=0)
    begin = max(0, first - min(chars // 4, 40))
    end = min(len(text), begin + chars)
    begin = max(0, end - chars)
    window = text[begin:end]
    pattern = re.compile("|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)), re.I)
    marked = pattern.sub(lambda m: f"[{m.group(0)}]", window)
    return ("…" if begin > 0 else "") + marked + ("…" if end < len(text) else "")


_ATOMS = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    """A deep copy of ``value``; several times faster than ``copy.deepcopy`` for the JSON-like
    values messages hold (anything else is deep-copied as usual)."""
    if isinstance(value, _ATOMS):
        return value
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    if type(value) is list:
        return [_copied(item) for item in value]
    return copy.deepcopy(value)
