"""The SQLite session store: the SessionStore contract, exact round trips, search, lineage,
titles, migrations, bad files, and concurrent writers (threads, processes, SIGKILL)."""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from hermes_core.session_store import (
    SCHEMA_VERSION,
    SearchHit,
    SessionStoreError,
    SQLiteSessionStore,
    make_title,
    repair,
)
from hermes_core.testing import make_agent, text, tool_call
from hermes_hookspecs import HermesError, SessionInfo, SessionStore, Usage


@pytest.fixture
def db(tmp_path):
    return tmp_path / "state.db"


@pytest.fixture
def store(db):
    store = SQLiteSessionStore(db)
    yield store
    store.close()


def new_session(store, session_id="s1", **fields):
    store.create_session(SessionInfo(id=session_id, **fields))
    return session_id


def fts_integrity(path):
    conn = sqlite3.connect(path)
    try:
        for table in ("messages_fts", "messages_trigram"):
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    finally:
        conn.close()


# --- the contract ---------------------------------------------------------------------------


def test_is_a_session_store_and_a_hermes_error(store):
    assert isinstance(store, SessionStore)
    assert issubclass(SessionStoreError, HermesError)


def test_create_and_get_a_session(store):
    info = SessionInfo(
        id="s1",
        source="cli",
        model="gpt-x",
        provider="openai",
        system_prompt="You are hermes.\n\n  exact  bytes \u00e9\u4e2d",
        parent_session_id=None,
        started_at=1_700_000_000.5,
        metadata={"system_message": "be brief"},
    )
    store.create_session(info)
    got = store.get_session("s1")
    assert got.id == "s1" and got.model == "gpt-x" and got.provider == "openai"
    assert got.system_prompt == info.system_prompt  # byte for byte
    assert got.started_at == 1_700_000_000.5
    assert got.ended_at is None and got.end_reason is None and got.title is None
    assert got.metadata["system_message"] == "be brief"
    assert got.metadata["message_count"] == 0
    assert store.get_session("nope") is None


def test_creating_an_existing_id_is_an_error(store):
    new_session(store)
    with pytest.raises(SessionStoreError, match="already exists"):
        new_session(store)


def test_a_session_without_start_time_gets_now(store):
    before = time.time()
    new_session(store)
    assert store.get_session("s1").started_at >= before


def test_update_session_columns_and_metadata(store):
    new_session(store)
    store.update_session(
        "s1",
        system_prompt="new prompt",
        ended_at=123.0,
        end_reason="completed",
        input_tokens=5,
        fallbacks=["openai/gpt-x"],
        todo=[{"id": "1", "content": "write tests", "status": "pending"}],
    )
    store.update_session("s1", metadata={"extra": 1}, todo=[])
    got = store.get_session("s1")
    assert got.system_prompt == "new prompt"
    assert got.ended_at == 123.0 and got.end_reason == "completed"
    assert got.metadata["input_tokens"] == 5
    assert got.metadata["fallbacks"] == ["openai/gpt-x"]
    assert got.metadata["todo"] == []
    assert got.metadata["extra"] == 1


def test_update_of_an_unknown_session_says_how_to_find_ids(store):
    with pytest.raises(SessionStoreError) as info:
        store.update_session("ghost", title="x")
    message = str(info.value)
    assert "ghost" in message and "hermes sessions list" in message
    assert "\n" not in message


def test_the_id_cannot_be_changed(store):
    new_session(store)
    with pytest.raises(SessionStoreError):
        store.update_session("s1", id="s2")


MESSAGES = [
    {"role": "user", "content": "Read config.yaml and tell me the port."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "config.yaml"}'},
            }
        ],
        "reasoning": "I should read the file first.",
        "finish_reason": "tool_calls",
        "_responses_items": [{"type": "reasoning", "id": "rs_1", "summary": []}],
        "_anthropic_thinking": {"signature": "abc==", "thinking": "hmm"},
    },
    {"role": "tool", "tool_call_id": "call_1", "tool_name": "read_file", "content": "port: 8080"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "and this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    },
    {"role": "assistant", "content": "It shows a cat.", "finish_reason": "stop", "token_count": 7},
]


def test_messages_round_trip_exactly(store):
    new_session(store)
    for message in MESSAGES:
        store.append_message("s1", copy.deepcopy(message))
    got = store.get_messages("s1")
    assert got == MESSAGES
    assert [list(m) for m in got] == [list(m) for m in MESSAGES]  # key order too
    assert all("timestamp" not in m for m in got)
    assert isinstance(got[3]["content"], list)


def test_messages_of_sessions_written_in_turn_come_back_in_their_own_order(store):
    new_session(store, "s1")
    new_session(store, "s2")
    expected: dict[str, list[dict[str, str]]] = {"s1": [], "s2": []}
    for n in range(600):
        sid = "s1" if n % 3 else "s2"
        message = {"role": "user" if n % 2 else "assistant", "content": f"{sid} message {n}"}
        expected[sid].append(message)
        store.append_message(sid, message)
    assert store.get_messages("s1") == expected["s1"]
    assert store.get_clean_messages("s2") == expected["s2"]
    new_session(store, "empty")
    assert store.get_messages("empty") == []


def test_unusual_values_round_trip(store):
    new_session(store)
    odd = [
        {"content": "no role"},
        {"role": None, "content": 42},
        {"role": "assistant", "content": "", "tool_calls": None, "reasoning": None},
        {"role": "tool", "tool_call_id": 7, "tool_name": ["x"], "content": {"a": 1}},
        {"role": "user", "content": "lone surrogate \udcff kept", "timestamp": "mine"},
        {"role": "user", "content": "x", "token_count": True, "_x": {"nested": [1, 2.5, None]}},
        {"role": "assistant", "content": "k", "weird\x1fkey": 1, "[bracket": 2},
        {"role": "assistant", "reasoning": {"structured": True}, "finish_reason": 3},
    ]
    for message in odd:
        store.append_message("s1", message)
    assert store.get_messages("s1") == odd


def test_a_value_that_is_not_json_is_a_clear_error(store):
    new_session(store)
    with pytest.raises(SessionStoreError, match="_obj"):
        store.append_message("s1", {"role": "user", "content": "x", "_obj": object()})
    assert store.get_messages("s1") == []


def test_appending_to_an_unknown_session_is_an_error(store):
    with pytest.raises(SessionStoreError, match="hermes sessions list"):
        store.append_message("ghost", {"role": "user", "content": "hi"})


def test_counters(store):
    new_session(store)
    for message in MESSAGES:
        store.append_message("s1", message)
    meta = store.get_session("s1").metadata
    assert meta["message_count"] == len(MESSAGES)
    assert meta["tool_call_count"] == 1


def test_add_usage_accumulates(store):
    new_session(store)
    store.add_usage("s1", {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 50})
    store.add_usage("s1", Usage(input_tokens=10, reasoning_tokens=3), cost_usd=0.25)
    store.add_usage("s1", {"output_tokens": 1, "unknown": 9}, cost_usd=0.5)
    meta = store.get_session("s1").metadata
    assert meta["input_tokens"] == 110 and meta["output_tokens"] == 21
    assert meta["cache_read_tokens"] == 50 and meta["reasoning_tokens"] == 3
    assert meta["estimated_cost_usd"] == pytest.approx(0.75)
    with pytest.raises(SessionStoreError):
        store.add_usage("ghost", {"input_tokens": 1})


def test_cost_stays_unknown_until_one_is_given(store):
    new_session(store)
    store.add_usage("s1", {"input_tokens": 1})
    assert store.get_session("s1").metadata["estimated_cost_usd"] is None


# --- titles -----------------------------------------------------------------------------------


def test_the_first_user_message_becomes_the_title(store):
    new_session(store)
    store.append_message("s1", {"role": "system", "content": "ignored"})
    long = (
        "Please   help me\nmigrate the billing service from Python 2 to Python 3 without downtime"
    )
    store.append_message("s1", {"role": "user", "content": long})
    store.append_message("s1", {"role": "user", "content": "second message"})
    title = store.get_session("s1").title
    assert title == make_title(long)
    assert len(title) <= 60 and "\n" not in title and title.endswith("…")
    assert title.startswith("Please help me migrate")


def test_a_set_title_wins_and_clearing_lets_the_next_message_title(store):
    new_session(store)
    store.set_title("s1", "  My   title ")
    store.append_message("s1", {"role": "user", "content": "hello"})
    assert store.get_session("s1").title == "My title"
    store.set_title("s1", None)
    store.append_message("s1", {"role": "user", "content": [{"type": "text", "text": "parts"}]})
    assert store.get_session("s1").title == "parts"
    with pytest.raises(SessionStoreError):
        store.set_title("ghost", "x")


def test_make_title():
    assert make_title("short") == "short"
    assert make_title("a " * 100).endswith("…")
    assert len(make_title("x" * 500)) == 60


# --- listing and lineage ----------------------------------------------------------------------


def test_list_sessions_newest_first_with_paging_and_source(store):
    for n in range(5):
        new_session(store, f"s{n}", started_at=1000.0 + n, source="cli" if n % 2 else "cron")
    assert [s.id for s in store.list_sessions()] == ["s4", "s3", "s2", "s1", "s0"]
    assert [s.id for s in store.list_sessions(limit=2, offset=1)] == ["s3", "s2"]
    assert [s.id for s in store.list_sessions(source="cli")] == ["s3", "s1"]
    assert store.latest_session_id() == "s4"
    assert store.latest_session_id(source="cron") == "s4"
    assert store.latest_session_id(source="cli") == "s3"
    assert store.latest_session_id(source="gateway") is None


def test_latest_of_an_empty_store_is_none(store):
    assert store.latest_session_id() is None
    assert store.list_sessions() == []


def test_newest_in_lineage_follows_compression_children(store):
    new_session(store, "a", started_at=1.0)
    new_session(store, "b", started_at=2.0, parent_session_id="a")
    new_session(store, "c", started_at=3.0, parent_session_id="b")
    new_session(store, "other", started_at=4.0)
    assert store.newest_in_lineage("a") == "c"
    assert store.newest_in_lineage("b") == "c"
    assert store.newest_in_lineage("c") == "c"
    assert store.newest_in_lineage("other") == "other"
    new_session(store, "b2", started_at=5.0, parent_session_id="a")  # a second branch
    assert store.newest_in_lineage("a") == "b2"
    assert store.newest_in_lineage("ghost") == "ghost"  # a new id passes through


def test_following_a_lineage_looks_up_children_by_parent_not_by_source(store):
    # a gateway's state.db holds thousands of sessions of one source: each turn looks up its
    # session's lineage, which must go through the parent index, never over that source
    from hermes_core.session_store.sqlite_store import _NEWEST_IN_LINEAGE

    with sqlite3.connect(store.path) as conn:
        plan = [r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {_NEWEST_IN_LINEAGE}", ("a",))]
    assert any("sessions_by_parent" in step for step in plan), plan
    assert not any("sessions_by_source" in step for step in plan), plan


def test_a_lineage_cycle_does_not_hang(store):
    new_session(store, "a", started_at=1.0, parent_session_id="b")
    new_session(store, "b", started_at=2.0, parent_session_id="a")
    assert store.newest_in_lineage("a") == "b"


# --- search -------------------------------------------------------------------------------------


@pytest.fixture
def corpus(store):
    new_session(store, "en", started_at=1.0)
    store.append_message("en", {"role": "user", "content": "The postgres connection was refused"})
    store.append_message("en", {"role": "assistant", "content": "Check that the server listens."})
    new_session(store, "zh", started_at=2.0)
    store.append_message("zh", {"role": "user", "content": "为什么数据库连接失败了？"})
    new_session(store, "tools", started_at=3.0)
    store.append_message(
        "tools",
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "terminal", "arguments": '{"command": "cat deploy.sh"}'},
                }
            ],
        },
    )
    store.append_message(
        "tools",
        {
            "role": "tool",
            "tool_call_id": "c1",
            "tool_name": "terminal",
            "content": "curl https://example.com/path/to/api?id=7 failed with E1234\n"
            "see (config.yaml).",
        },
    )
    return store


def ids(hits):
    return [h.session_id for h in hits]


def test_search_english_words_and_prefixes(corpus):
    hits = corpus.search("postgres")
    assert ids(hits) == ["en"]
    hit = hits[0]
    assert isinstance(hit, SearchHit)
    assert hit.role == "user" and hit.started_at == 1.0
    assert hit.title == "The postgres connection was refused"
    assert "[postgres]" in hit.snippet
    assert ids(corpus.search("connect")) == ["en"]  # a word prefix
    assert ids(corpus.search("postgres refused")) == ["en"]
    assert ids(corpus.search('"connection was refused"')) == ["en"]
    assert corpus.search('"refused was connection"') == []


def test_search_cjk(corpus):
    for query in ("数据库连接失败", "数据库", "连接失败"):
        hits = corpus.search(query)
        assert ids(hits) == ["zh"], query
        assert f"[{query}]" in hits[0].snippet


def test_search_url_file_name_and_error_code_substrings(corpus):
    for query, marked in [
        ("example.com/path", "[example.com/path]"),
        ("https://example.com", "[https://example.com]"),
        ("config.yaml", "[config.yaml]"),
        ("E1234", "[E1234]"),
        ("1234", "E[1234]"),
    ]:
        hits = corpus.search(query)
        assert ids(hits) == ["tools"], query
        assert marked in hits[0].snippet, (query, hits[0].snippet)
        assert hits[0].role == "tool"


def test_search_tool_call_arguments(corpus):
    hits = corpus.search("deploy.sh")
    assert ids(hits) == ["tools"]
    assert hits[0].role == "assistant"
    assert hits[0].snippet.startswith("tool call: terminal")
    assert "[deploy.sh]" in hits[0].snippet


def test_search_text_is_never_fts_syntax(corpus):
    for query in ['"', '"unbalanced', "NEAR(a b)", "a AND OR", "*", "col:x", "^x", "-", "()"]:
        corpus.search(query)  # no exception
    assert corpus.search("") == [] and corpus.search("   ") == []


def test_search_falls_back_to_any_word(corpus):
    assert ids(corpus.search("postgres zebra")) == ["en"]


def test_deleting_a_session_removes_its_hits(corpus, db):
    assert corpus.search("E1234")
    assert corpus.delete_session("tools") is True
    assert corpus.delete_session("tools") is False
    assert corpus.search("E1234") == []
    assert corpus.search("deploy.sh") == []
    assert corpus.get_messages("tools") == []
    fts_integrity(db)


def test_new_messages_are_searchable_at_once(store):
    new_session(store)
    for n in range(3):
        store.append_message("s1", {"role": "user", "content": f"unique-token-{n} zanzibar"})
        assert len(store.search("zanzibar")) == n + 1


def test_ids_reused_after_deleting_the_newest_messages_are_indexed(store, db):
    new_session(store, "a")
    new_session(store, "b")
    store.append_message("a", {"role": "user", "content": "alpha words"})
    store.append_message("b", {"role": "user", "content": "bravo words"})
    assert len(store.search("words")) == 2  # both indexed
    store.delete_session("b")  # the newest row: its id will be given out again
    store.append_message("a", {"role": "user", "content": "charlie words"})
    assert {h.snippet for h in store.search("words")} == {"alpha [words]", "charlie [words]"}
    assert [h.snippet for h in store.search("charlie")] == ["[charlie] words"]
    assert store.search("bravo") == []
    fts_integrity(db)


def test_edited_messages_stay_in_step_with_the_indexes(store, db):
    new_session(store)
    store.append_message("s1", {"role": "user", "content": "original wording"})
    assert store.search("original")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE messages SET content = 'replaced wording' WHERE session_id = 's1'")
    conn.close()
    assert store.search("original") == []
    assert len(store.search("replaced")) == 1
    fts_integrity(db)


def test_search_ranks_better_matches_first_then_recent(store):
    new_session(store, "old", started_at=1.0)
    new_session(store, "new", started_at=2.0)
    store.append_message("old", {"role": "user", "content": "ferret ferret ferret care"})
    store.append_message("new", {"role": "user", "content": "a ferret among many other words"})
    store.append_message("new", {"role": "user", "content": "a ferret among many other words"})
    hits = store.search("ferret")
    assert hits[0].session_id == "old"  # most relevant
    assert hits[1].message_id > hits[2].message_id  # equal relevance: newest first
    assert hits[0].score >= hits[1].score >= hits[2].score


def test_search_limit_snippet_size_and_exclusion(store):
    new_session(store, "a")
    new_session(store, "b")
    for n in range(30):
        store.append_message("a", {"role": "user", "content": f"{'pad ' * 200} walrus {n}"})
    store.append_message("b", {"role": "user", "content": "walrus"})
    hits = store.search("walrus", limit=5, snippet_chars=80)
    assert len(hits) == 5
    assert all(len(h.snippet) <= 80 + 4 for h in hits)
    assert all("[walrus]" in h.snippet for h in hits)
    assert ids(store.search("walrus", limit=50, exclude_session="a")) == ["b"]


# --- maintenance ------------------------------------------------------------------------------


def test_prune_deletes_old_sessions_but_keeps_recently_active_ones(store):
    now = time.time()
    new_session(store, "old", started_at=now - 40 * 86400)
    store.append_message("old", {"role": "user", "content": "ancient"})
    new_session(store, "old-but-active", started_at=now - 40 * 86400)
    store.append_message("old-but-active", {"role": "user", "content": "still going"})
    new_session(store, "recent", started_at=now - 86400)
    conn = sqlite3.connect(store.path)
    with conn:
        conn.execute(
            "UPDATE messages SET timestamp = ? WHERE session_id = 'old'", (now - 40 * 86400,)
        )
    conn.close()
    assert store.prune(30) == 1
    assert {s.id for s in store.list_sessions()} == {"old-but-active", "recent"}
    assert store.search("ancient") == []
    with pytest.raises(SessionStoreError):
        store.prune(-1)


def test_a_long_session_is_deleted_in_several_transactions(store, db):
    new_session(store, "long")
    new_session(store, "other")
    for n in range(2100):
        store.append_message("long", {"role": "user", "content": f"ocelot {n}"})
    store.append_message("other", {"role": "user", "content": "ocelot elsewhere"})
    assert store.delete_session("long") is True
    assert store.get_session("long") is None and store.get_messages("long") == []
    assert ids(store.search("ocelot", limit=50)) == ["other"]
    fts_integrity(db)


def test_stats(store, db):
    empty = store.stats()
    assert empty["sessions"] == 0 and empty["messages"] == 0 and empty["oldest"] is None
    new_session(store, "a", started_at=10.0)
    new_session(store, "b", started_at=20.0)
    store.append_message("a", {"role": "user", "content": "x"})
    stats = store.stats()
    assert stats["sessions"] == 2 and stats["messages"] == 1
    assert stats["oldest"] == 10.0 and stats["newest"] == 20.0
    assert stats["db_size_bytes"] > 0
    assert stats["schema_version"] == SCHEMA_VERSION
    assert stats["path"] == str(db)
    assert stats["waiting_for_index"] == 1
    store.search("x")
    assert store.stats()["waiting_for_index"] == 0


def test_close_is_final(store):
    store.close()
    with pytest.raises(SessionStoreError, match="closed"):
        store.get_session("s1")


def test_the_file_is_in_wal_mode(store, db):
    new_session(store)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


# --- the agent on the store -------------------------------------------------------------------


def test_an_agent_may_start_a_new_session_with_its_own_id(store):
    agent = make_agent(text("hello"), session_store=store, session_id="my-own-id")
    agent.chat("hi")
    assert store.get_session("my-own-id").title == "hi"


def test_resuming_an_old_id_continues_its_newest_child(store):
    new_session(store, "parent", started_at=1.0)
    store.append_message("parent", {"role": "user", "content": "old"})
    new_session(store, "child", started_at=2.0, parent_session_id="parent", system_prompt="sp")
    store.append_message("child", {"role": "user", "content": "summary of old"})
    store.append_message("child", {"role": "assistant", "content": "ok"})
    agent = make_agent(text("continued"), session_store=store, session_id="parent")
    agent.chat("next")
    assert agent.session_id == "child"
    assert [m["content"] for m in store.get_messages("child")] == [
        "summary of old",
        "ok",
        "next",
        "continued",
    ]


def test_the_agent_persists_and_resumes_on_the_store(store):
    agent = make_agent(tool_call("missing_tool", {}), text("first answer"), session_store=store)
    result = agent.run_conversation("remember the magic word xylophone", system_message="brief")
    assert result["final_response"] == "first answer"
    session_id = agent.session_id
    saved = store.get_messages(session_id)
    assert saved == agent.messages
    assert store.get_session(session_id).title == "remember the magic word xylophone"
    assert store.get_session(session_id).metadata["input_tokens"] > 0

    resumed = make_agent(text("second answer"), session_store=store, session_id=session_id)
    resumed.chat("what was the word?")
    prompt = store.get_session(session_id).system_prompt
    assert prompt and "brief" in prompt
    assert resumed.client.last_request.messages[0] == {"role": "system", "content": prompt}
    assert store.get_messages(session_id)[: len(saved)] == saved
    assert ids(store.search("xylophone")) == [session_id]


# --- schema versions and bad files -------------------------------------------------------------


def test_an_empty_file_is_upgraded(db):
    db.write_bytes(b"")
    with SQLiteSessionStore(db) as store:
        new_session(store)
        assert store.stats()["schema_version"] == SCHEMA_VERSION


def test_a_version_0_database_without_tables_is_upgraded(db):
    sqlite3.connect(db).execute("PRAGMA user_version = 0").connection.close()
    with SQLiteSessionStore(db) as store:
        new_session(store)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_reopening_keeps_everything(db):
    with SQLiteSessionStore(db) as store:
        new_session(store)
        store.append_message("s1", MESSAGES[1])
    with SQLiteSessionStore(db) as store:
        assert store.get_messages("s1") == [MESSAGES[1]]


def test_a_newer_schema_is_refused_clearly(db):
    SQLiteSessionStore(db).close()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(SessionStoreError) as info:
        SQLiteSessionStore(db)
    message = str(info.value)
    assert str(db) in message and "newer hermes" in message and "99" in message
    assert "upgrade hermes" in message
    assert "left alone" in repair(db)
    assert db.exists()


def test_a_foreign_database_is_refused_and_left_exactly_as_it_is(db):
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    os.chmod(db, 0o644)
    before = db.read_bytes()
    with pytest.raises(SessionStoreError) as info:
        SQLiteSessionStore(db)
    assert str(db) in str(info.value) and "move it away yourself" in str(info.value)
    assert "repair" not in str(info.value)
    report = repair(db)  # never moves another program's file
    assert "left as it is" in report and db.read_bytes() == before
    assert oct(db.stat().st_mode & 0o777) == "0o644"  # not even its mode changes
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA application_id = 1234")
    conn.close()
    with pytest.raises(SessionStoreError, match="another program"):
        SQLiteSessionStore(db)
    assert "left as it is" in repair(db)


def test_a_file_that_is_not_sqlite_names_the_file_and_the_way_out(db):
    db.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(SessionStoreError) as info:
        SQLiteSessionStore(db)
    message = str(info.value)
    assert str(db) in message
    assert "move it away" in message and "hermes sessions repair" in message
    assert "\n" not in message


def test_repair_moves_a_corrupt_file_aside(db):
    db.write_bytes(b"garbage" * 1000)
    report = repair(db)
    moved = [p for p in db.parent.iterdir() if p.name.startswith("state.db.corrupt-")]
    assert len(moved) == 1 and moved[0].read_bytes() == b"garbage" * 1000
    assert moved[0].name in report
    assert not db.exists()
    with SQLiteSessionStore(db) as store:
        new_session(store)


def test_repair_leaves_a_healthy_file_alone(db):
    with SQLiteSessionStore(db) as store:
        new_session(store)
    assert "nothing to repair" in repair(db)
    assert repair(db.parent / "missing.db").endswith("a new one is created when needed")
    with SQLiteSessionStore(db) as store:
        assert store.get_session("s1") is not None


def test_damaged_pages_are_reported_and_repair_salvages_what_it_can(db):
    with SQLiteSessionStore(db) as store:
        for n in range(20):
            new_session(store, f"s{n}", started_at=float(n))
            for i in range(20):
                store.append_message(f"s{n}", {"role": "user", "content": f"message {i} " * 50})
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    with open(db, "r+b") as handle:  # smash pages in the second half of the file
        for page in range(pages // 2, pages, 3):
            handle.seek(page * page_size)
            handle.write(b"\xff" * page_size)
    with pytest.raises(SessionStoreError) as info:
        with SQLiteSessionStore(db) as store:
            for n in range(20):
                store.get_messages(f"s{n}")
            store.search("message")
    assert "hermes sessions repair" in str(info.value)
    report = repair(db)
    assert "moved" in report and "corrupt-" in report and "recovered" in report
    assert "\n" not in report
    with SQLiteSessionStore(db) as store:
        stats = store.stats()
        assert stats["sessions"] == 20  # session rows sit in the undamaged first half
        assert 0 < stats["messages"] < 400
        assert store.search("message")  # the recovered messages are searchable again


# --- busy databases and concurrency -----------------------------------------------------------


def test_a_busy_database_is_waited_for(store, db):
    new_session(store)
    blocker = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    releaser = threading.Timer(0.5, lambda: blocker.execute("COMMIT"))
    releaser.start()
    quick = SQLiteSessionStore(db, timeout=10)
    try:
        quick.append_message("s1", {"role": "user", "content": "waited"})
    finally:
        releaser.join()
        quick.close()
        blocker.close()
    assert store.get_messages("s1") == [{"role": "user", "content": "waited"}]


def test_a_lock_that_persists_is_reported_not_swallowed(store, db):
    new_session(store)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    impatient = SQLiteSessionStore(db, timeout=0.3)
    try:
        with pytest.raises(SessionStoreError) as info:
            impatient.append_message("s1", {"role": "user", "content": "lost?"})
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        impatient.close()
    message = str(info.value)
    assert "locked" in message and "attempts over 0.3s" in message and str(db) in message
    assert store.get_messages("s1") == []


def test_four_threads_appending(store):
    for n in range(4):
        new_session(store, f"t{n}")
    new_session(store, "shared")
    errors = []

    def work(n):
        try:
            for i in range(200):
                store.append_message(f"t{n}", {"role": "user", "content": f"thread {n} msg {i}"})
                store.append_message("shared", {"role": "user", "content": f"{n}:{i}"})
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for n in range(4):
        got = store.get_messages(f"t{n}")
        assert [m["content"] for m in got] == [f"thread {n} msg {i}" for i in range(200)]
    shared = [m["content"] for m in store.get_messages("shared")]
    assert len(shared) == 800
    for n in range(4):  # each thread's messages in its own order
        mine = [c for c in shared if c.startswith(f"{n}:")]
        assert mine == [f"{n}:{i}" for i in range(200)]
    assert store.get_session("shared").metadata["message_count"] == 800
    assert len(store.search("thread", limit=200)) == 200


def _process_writer(path, n, count, results):
    try:
        with SQLiteSessionStore(path) as store:
            store.create_session(SessionInfo(id=f"p{n}"))
            for i in range(count):
                store.append_message(f"p{n}", {"role": "user", "content": f"proc {n} {i}"})
        results.put((n, None))
    except BaseException as exc:  # pragma: no cover - reported to the parent
        results.put((n, f"{type(exc).__name__}: {exc}"))


def test_three_processes_appending(db):
    SQLiteSessionStore(db).close()
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=_process_writer, args=(db, n, 300, results)) for n in range(3)]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert outcomes == {0: None, 1: None, 2: None}
    assert all(p.exitcode == 0 for p in procs)
    with SQLiteSessionStore(db) as store:
        for n in range(3):
            got = [m["content"] for m in store.get_messages(f"p{n}")]
            assert got == [f"proc {n} {i}" for i in range(300)]
        assert len(store.search("proc", limit=200)) == 200
    fts_integrity(db)


def _opener(path, results):
    try:
        with SQLiteSessionStore(path) as store:
            store.create_session(SessionInfo(id=f"o{os.getpid()}"))
        results.put(None)
    except BaseException as exc:  # pragma: no cover - reported to the parent
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_creating_the_file_at_the_same_time(db):
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=_opener, args=(db, results)) for _ in range(4)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert outcomes == [None] * 4
    with SQLiteSessionStore(db) as store:
        assert store.stats()["sessions"] == 4


def test_a_store_used_before_fork_works_in_the_child_and_the_parent(store):
    new_session(store)
    store.append_message("s1", {"role": "user", "content": "before fork"})
    ctx = multiprocessing.get_context("fork")

    def child():
        store.append_message("s1", {"role": "user", "content": "from the child"})
        os._exit(0)

    proc = ctx.Process(target=child)
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == 0
    store.append_message("s1", {"role": "user", "content": "after fork"})
    assert [m["content"] for m in store.get_messages("s1")] == [
        "before fork",
        "from the child",
        "after fork",
    ]


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from hermes_core.session_store import SQLiteSessionStore
    from hermes_hookspecs import SessionInfo

    store = SQLiteSessionStore(sys.argv[1])
    store.create_session(SessionInfo(id="victim"))
    i = 0
    while True:
        store.append_message("victim", {"role": "user", "content": f"seq {i}", "_seq": i})
        print(i, flush=True)  # reported only once append_message has returned
        i += 1
    """
)


def test_sigkill_loses_nothing_that_was_committed(db):
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(db)],
        stdout=subprocess.PIPE,
        text=True,
    )
    reported = []
    try:
        for line in proc.stdout:
            reported.append(int(line))
            if len(reported) >= 300:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        reported += [int(line) for line in proc.stdout.read().split()]
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with SQLiteSessionStore(db) as store:
        got = store.get_messages("victim")
        seqs = [m["_seq"] for m in got]
        assert seqs[: len(reported)] == reported  # every reported message, in order
        assert seqs == list(range(len(seqs)))  # and nothing half-written
        assert store.get_session("victim").metadata["message_count"] == len(got)
        assert len(store.search("seq", limit=200)) == 200
    fts_integrity(db)


def test_messages_are_json_objects_in_exports(store):
    new_session(store)
    store.append_message("s1", MESSAGES[1])
    assert json.loads(json.dumps(store.get_messages("s1"))) == [MESSAGES[1]]


def test_the_state_file_path_may_be_a_string_and_parents_are_created(tmp_path):
    path = tmp_path / "deep" / "er" / "state.db"
    with SQLiteSessionStore(str(path)) as store:
        assert store.path == Path(path)
    assert path.exists()


# --- file modes ---------------------------------------------------------------------------------


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_the_database_and_its_wal_and_shm_are_owner_only(tmp_path):
    old = os.umask(0o022)  # the usual umask would make them 644
    try:
        db = tmp_path / "new-home" / "state.db"
        store = SQLiteSessionStore(db)
        new_session(store)
        store.append_message("s1", {"role": "user", "content": "hello"})
        wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
        assert wal.exists() and shm.exists()  # WAL mode, the store still open
        assert (mode(db), mode(wal), mode(shm)) == (0o600, 0o600, 0o600)
        assert mode(db.parent) == 0o700  # a folder the store makes is private too
        store.close()
    finally:
        os.umask(old)


def test_an_existing_database_open_to_others_is_made_owner_only(tmp_path):
    db = tmp_path / "state.db"
    SQLiteSessionStore(db).close()
    os.chmod(db, 0o644)
    Path(f"{db}-wal").write_bytes(b"")
    os.chmod(f"{db}-wal", 0o666)
    store = SQLiteSessionStore(db)
    try:
        new_session(store)
        assert mode(db) == 0o600
        assert mode(Path(f"{db}-wal")) == 0o600
    finally:
        store.close()


# --- the package -----------------------------------------------------------------------------


def test_the_package_exports_the_store_api():
    import hermes_core.session_store as session_store

    assert callable(session_store.repair)  # the function, not the module that holds it
    with pytest.raises(AttributeError):
        session_store.no_such_name  # noqa: B018


def test_the_in_memory_store_does_not_load_sqlite():
    code = (
        "import sys\n"
        "from hermes_core.session_store import MemorySessionStore\n"
        "MemorySessionStore()\n"
        "assert 'sqlite3' not in sys.modules, sorted(m for m in sys.modules if 'sqlite' in m)\n"
        "from hermes_core.session_store import SQLiteSessionStore\n"
        "assert 'sqlite3' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
