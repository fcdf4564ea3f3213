"""Which session each conversation is in, kept in ``$HERMES_HOME/gateway/sessions.json`` so that
a restarted gateway continues every conversation where it was. Several processes may share the
file (the workers of one gateway): each reads it again when it changed, and a change is made
under a lock on ``sessions.json.lock`` to the file as it is then."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Protocol

MAX_RESPONSE_IDS = 10_000
"""Responses API ids remembered (for ``previous_response_id``); the oldest are forgotten first."""


def route_key(platform: str, chat_id: str, user_id: str) -> str:
    """The key of one conversation: a user in a chat on a platform."""
    return json.dumps([platform, chat_id, user_id], ensure_ascii=False)


class Routes(Protocol):
    """Which session each conversation is in (what the gateway asks of a route store)."""

    def session_of(self, key: str) -> str | None:
        """The session the conversation ``key`` is in, if any."""
        ...

    def assign(self, key: str, session_id: str) -> None:
        """Put the conversation ``key`` in ``session_id``."""
        ...

    def forget(self, key: str) -> str | None:
        """Take the conversation out of its session; the session it was in."""
        ...

    def session_of_response(self, response_id: str) -> str | None:
        """The session that produced a Responses API ``response_id``."""
        ...

    def remember_response(self, response_id: str, session_id: str) -> None:
        """Record that ``response_id`` was an answer in ``session_id``."""
        ...

    def chats_of(self, platform: str, user_ids: Collection[str]) -> set[str]:
        """The chats of ``platform`` in which one of ``user_ids`` has a conversation."""
        ...

    def leading_to(self, session_ids: Collection[str]) -> int:
        """How many conversations and response ids lead to one of ``session_ids``."""
        ...

    def forget_sessions(self, session_ids: Collection[str]) -> int:
        """Forget every conversation and response id leading to one of ``session_ids``; how
        many were forgotten."""
        ...


class RouteStore:
    """Conversation -> session id, and Responses API response id -> session id, saved on every
    change (replaced atomically, so a killed gateway leaves the previous or the new file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._routes: dict[str, dict[str, Any]] = {}
        self._responses: dict[str, str] = {}
        self._stamp: tuple[int, int, int] | None = None
        self._fresh()

    def _fresh(self) -> None:
        """Read the file again when another process changed it (called holding the lock)."""
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return
        stamp = (status.st_mtime_ns, status.st_size, status.st_ino)
        if stamp == self._stamp:
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise ValueError(f"{self.path} is not a readable sessions file: {exc}") from None
        self._routes = dict(data.get("routes") or {})
        self._responses = dict(data.get("responses") or {})
        self._stamp = stamp

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        """Hold the lock of this process and of the file, with the file's latest content
        read, while the block changes it."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._fresh()
                yield
            finally:
                os.close(fd)

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"version": 1, "routes": self._routes, "responses": self._responses}
        fd, tmp = tempfile.mkstemp(prefix=".sessions-", dir=self.path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False)
        os.replace(tmp, self.path)
        status = os.stat(self.path)
        self._stamp = (status.st_mtime_ns, status.st_size, status.st_ino)

    def session_of(self, key: str) -> str | None:
        """The session the conversation ``key`` is in, if any."""
        with self._lock:
            self._fresh()
            entry = self._routes.get(key)
            return entry["session_id"] if entry else None

    def assign(self, key: str, session_id: str) -> None:
        """Put the conversation ``key`` in ``session_id``."""
        with self._changing():
            self._routes[key] = {"session_id": session_id, "updated_at": time.time()}
            self._save()

    def forget(self, key: str) -> str | None:
        """Take the conversation out of its session (the next message starts a new one);
        return the session it was in."""
        with self._changing():
            entry = self._routes.pop(key, None)
            if entry is not None:
                self._save()
            return entry["session_id"] if entry else None

    def session_of_response(self, response_id: str) -> str | None:
        """The session that produced a Responses API ``response_id``."""
        with self._lock:
            self._fresh()
            return self._responses.get(response_id)

    def remember_response(self, response_id: str, session_id: str) -> None:
        """Record that ``response_id`` was an answer in ``session_id``."""
        with self._changing():
            self._responses[response_id] = session_id
            while len(self._responses) > MAX_RESPONSE_IDS:
                self._responses.pop(next(iter(self._responses)))
            self._save()

    def chats_of(self, platform: str, user_ids: Collection[str]) -> set[str]:
        """The chats of ``platform`` in which one of ``user_ids`` has a conversation."""
        users = set(user_ids)
        chats: set[str] = set()
        with self._lock:
            self._fresh()
            for key in self._routes:
                try:
                    where, chat, user = json.loads(key)
                except (ValueError, TypeError):
                    continue
                if where == platform and user in users:
                    chats.add(str(chat))
        return chats

    def leading_to(self, session_ids: Collection[str]) -> int:
        """How many conversations and response ids lead to one of ``session_ids``."""
        wanted = set(session_ids)
        with self._lock:
            self._fresh()
            routes = sum(1 for e in self._routes.values() if e.get("session_id") in wanted)
            return routes + sum(1 for s in self._responses.values() if s in wanted)

    def forget_sessions(self, session_ids: Collection[str]) -> int:
        """Forget every conversation and response id that leads to one of ``session_ids``;
        how many were forgotten."""
        wanted = set(session_ids)
        with self._changing():
            routes = {k: e for k, e in self._routes.items() if e.get("session_id") not in wanted}
            responses = {r: s for r, s in self._responses.items() if s not in wanted}
            gone = len(self._routes) - len(routes) + len(self._responses) - len(responses)
            if gone:
                self._routes, self._responses = routes, responses
                self._save()
            return gone
