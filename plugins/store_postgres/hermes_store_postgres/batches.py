"""Writes that go to the database together: the messages appended to one session in a row
(one ``UPDATE`` of its counters, token usage included, and one ``INSERT`` of all the rows), and
the block of :meth:`PostgresSessionStore.batch`, committed in one transaction."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .connections import Connection, PostgresStoreError
from .rows import INSERT_MESSAGE, EncodedMessage
from .schema import TOKEN_COLUMNS
from .text import make_title

Write = Callable[[Connection], None]
"""One write, run inside the transaction of its batch."""

FIND_IDS_HINT = "`hermes sessions list` or `hermes sessions search TEXT` show the ids"


def unknown_session(session_id: str) -> PostgresStoreError:
    """The error for a session that is not stored."""
    return PostgresStoreError(f"no session {session_id!r}; {FIND_IDS_HINT}")


class Appends:
    """Messages appended to one session one after the other, and the token usage added to it
    right after them (either may be missing): written with one ``UPDATE`` of the session row
    (which also keeps two writers of one session in order) and one ``INSERT``."""

    __slots__ = ("session_id", "rows", "tool_calls", "title", "usage", "cost")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.rows: list[tuple[Any, ...]] = []
        self.tool_calls = 0
        self.title: str | None = None
        """The title the first user message with text gives an untitled session."""
        self.usage: list[int] | None = None
        self.cost: float | None = None

    def add(self, encoded: EncodedMessage) -> None:
        """Add one message (encoded), after those already added."""
        self.rows.append((self.session_id, *encoded.row))
        self.tool_calls += encoded.tool_call_count
        if self.title is None and encoded.text.strip():
            self.title = make_title(encoded.text)

    def open_to(self, session_id: str) -> bool:
        """Whether messages or token usage for ``session_id`` can be added to this write (not
        after usage, which would then count a later step's tokens before its messages)."""
        return session_id == self.session_id and self.usage is None

    def add_usage(self, counts: list[int], cost: float | None) -> None:
        """Add token counts (in the order of ``TOKEN_COLUMNS``) and a cost to the write."""
        self.usage = counts
        self.cost = cost

    def __call__(self, conn: Connection) -> None:
        """Write the messages and the counters (inside the caller's transaction).

        :raises PostgresStoreError: the session is not stored.
        """
        sets: list[str] = []
        params: list[Any] = []
        if self.rows:
            sets.append(
                "message_count = message_count + %s, tool_call_count = tool_call_count + %s, "
                "title = COALESCE(title, %s)"
            )
            params += [len(self.rows), self.tool_calls, self.title]
        if self.usage is not None:
            sets += [f"{name} = {name} + %s" for name in TOKEN_COLUMNS]
            params += self.usage
            if self.cost is not None:
                sets.append("estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + %s")
                params.append(self.cost)
        if not sets:
            return
        params.append(self.session_id)
        cursor = conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = %s", params)
        if cursor.rowcount == 0:
            raise unknown_session(self.session_id)
        if len(self.rows) == 1:
            conn.execute(INSERT_MESSAGE, self.rows[0])
        elif self.rows:
            with conn.cursor() as insert:
                insert.executemany(INSERT_MESSAGE, self.rows)


def run_all(conn: Connection, writes: list[Write]) -> None:
    """Run ``writes`` in order (inside the caller's transaction)."""
    for write in writes:
        write(conn)


class Batch:
    """The block of :meth:`PostgresSessionStore.batch`: the writes this thread makes inside it
    are kept, then committed in one transaction when the outermost block ends without an
    exception (none of them when one fails)."""

    __slots__ = ("local", "commit", "outer")

    def __init__(self, local: threading.local, commit: Callable[[list[Write]], None]) -> None:
        self.local = local
        self.commit = commit
        self.outer = False

    def __enter__(self) -> None:
        if getattr(self.local, "batch", None) is None:
            self.outer = True
            self.local.batch = []

    def __exit__(self, kind: object, *rest: object) -> None:
        if not self.outer:
            return
        pending: list[Write] = self.local.batch
        self.local.batch = None
        if kind is None and pending:
            self.commit(pending)
