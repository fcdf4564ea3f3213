"""Resuming a stored session: the text replayed is encodable (lone surrogates from sessions
written before text was cleaned where it entered are replaced), ``get_messages`` still gives
back exactly what was appended, and a database of an older schema opens, migrates and resumes."""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

import pytest

from hermes_core.session_store import MemorySessionStore, SQLiteSessionStore
from hermes_core.session_store.codec import INSERT_MESSAGE_SQL, message_row
from hermes_core.session_store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from hermes_core.testing import make_agent, text
from hermes_hookspecs import SessionInfo

UNCLEAN = [
    {"role": "user", "content": "bytes \udcff here"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "t", "arguments": '{"q": "\ud800"}'},
            }
        ],
        "_provider_data": {"note": "half \udc80"},
    },
    {"role": "tool", "tool_call_id": "c1", "content": "fine", "tool_name": "t"},
    {"role": "assistant", "content": [{"type": "text", "text": "parts \U0001f600 and \udcfe"}]},
]
CLEANED = [
    {"role": "user", "content": "bytes \ufffd here"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "t", "arguments": '{"q": "\ufffd"}'},
            }
        ],
        "_provider_data": {"note": "half \ufffd"},
    },
    {"role": "tool", "tool_call_id": "c1", "content": "fine", "tool_name": "t"},
    {"role": "assistant", "content": [{"type": "text", "text": "parts \U0001f600 and \ufffd"}]},
]


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "memory":
        yield MemorySessionStore()
        return
    with SQLiteSessionStore(tmp_path / "sessions.db") as sqlite_store:
        yield sqlite_store


def test_clean_messages_replace_lone_surrogates_and_keep_the_rest(store) -> None:
    store.create_session(SessionInfo(id="s1"))
    for message in UNCLEAN:
        store.append_message("s1", message)
    assert store.get_messages("s1") == UNCLEAN  # exactly as appended
    clean = store.get_clean_messages("s1")
    assert clean == CLEANED
    assert [list(m) for m in clean] == [list(m) for m in UNCLEAN]  # key order too


def test_text_that_only_looks_like_an_escape_is_kept(store) -> None:
    store.create_session(SessionInfo(id="s1"))
    message = {"role": "user", "content": [{"type": "text", "text": "a literal \\ud800 escape"}]}
    store.append_message("s1", message)
    assert store.get_clean_messages("s1") == [message]


def test_a_long_session_of_every_shape_reads_back_exactly(store) -> None:
    shapes = [
        {},
        {"role": "user"},
        {"content": "no role"},
        {"role": "tool", "tool_call_id": None, "content": "x", "_meta": None},
        *UNCLEAN,
        {"role": "assistant", "content": "fine", "finish_reason": "stop", "token_count": 3},
    ]
    store.create_session(SessionInfo(id="s1"))
    messages = [shapes[i % len(shapes)] for i in range(300)]
    for message in messages:
        store.append_message("s1", message)
    assert store.get_messages("s1") == messages
    clean = store.get_clean_messages("s1")
    assert clean == [CLEANED[UNCLEAN.index(m)] if m in UNCLEAN else m for m in messages]
    assert [list(m) for m in clean] == [list(m) for m in messages]


def test_reading_leaves_the_garbage_collector_as_it_was(store) -> None:
    store.create_session(SessionInfo(id="s1"))
    store.append_message("s1", UNCLEAN[1])
    assert gc.isenabled()
    store.get_clean_messages("s1")
    assert gc.isenabled()
    gc.disable()
    try:
        assert store.get_messages("s1") == [UNCLEAN[1]]
        assert not gc.isenabled()  # paused by someone else: still paused
    finally:
        gc.enable()


def _version_1_database(path: Path, session_id: str, messages: list[dict]) -> None:
    """A sessions.db as the first schema wrote it, holding one session."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO sessions (id, source, model, provider, started_at, message_count) "
        "VALUES (?, 'cli', 'm', 'scripted', 1.0, ?)",
        (session_id, len(messages)),
    )
    # the columns of the first schema: every one but the last (``body``, added by version 3)
    columns = INSERT_MESSAGE_SQL[INSERT_MESSAGE_SQL.index("(") + 1 : INSERT_MESSAGE_SQL.index(")")]
    names = [name.strip() for name in columns.split(",")]
    assert names[-1] == "body"
    marks = ", ".join("?" * (len(names) - 1))
    conn.executemany(
        f"INSERT INTO messages ({', '.join(names[:-1])}) VALUES ({marks})",
        [message_row(m, session_id, 1.0)[:-1] for m in messages],
    )
    conn.close()


def test_an_old_database_opens_migrates_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    _version_1_database(db, "old", UNCLEAN)
    with SQLiteSessionStore(db) as store:
        assert store.stats()["schema_version"] == SCHEMA_VERSION
        agent = make_agent(text("resumed"), session_store=store, session_id="old")
        with agent:
            assert agent.chat("still there?") == "resumed"
        sent = agent.client.last_request.messages
        assert [m["content"] for m in sent[-5:-1]] == [m["content"] for m in CLEANED]
        stored = store.get_messages("old")
    assert stored[:4] == UNCLEAN
    assert [m["content"] for m in stored[4:]] == ["still there?", "resumed"]
    conn = sqlite3.connect(db)
    bodies = [row[0] for row in conn.execute("SELECT body FROM messages ORDER BY id")]
    conn.close()
    assert bodies[:4] == [None] * 4  # the old rows are read from their columns
    assert None not in bodies[4:]  # the new ones from their body


def test_a_session_of_old_and_new_rows_reads_back_in_order(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    _version_1_database(db, "mixed", UNCLEAN[:2])
    later = [*UNCLEAN[2:], {"role": "user", "content": "new"}, UNCLEAN[0]]
    with SQLiteSessionStore(db) as store:
        for message in later:
            store.append_message("mixed", message)
        assert store.get_messages("mixed") == [*UNCLEAN, *later[2:]]
        assert store.get_clean_messages("mixed") == [*CLEANED, later[2], CLEANED[0]]
