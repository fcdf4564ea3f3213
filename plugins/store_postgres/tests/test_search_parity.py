"""Search parity: the PostgreSQL store finds what the SQLite store finds.

The same sessions go into both stores; every query of a fixed set (words, prefixes, phrases,
file names, URLs, paths, error codes, CJK, accents, tool calls, the any-term fallback) must
give the same messages in both. Ranking is each engine's own (BM25 in SQLite, ``ts_rank``
here), so the hits are compared as sets; every hit's snippet marks what matched.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hermes_store_postgres.store import PostgresSessionStore

from hermes_core.testing import SQLiteSessionStore
from hermes_hookspecs import SessionInfo


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{name}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        ],
    }


CORPUS: dict[str, list[Any]] = {
    "db": [
        "How do I connect to the Postgres database from my laptop?",
        "Use a connection string like postgresql://app@db.internal:5432/main; see pg_hba.conf.",
        "Connecting failed: FATAL password authentication failed (SQLSTATE 28P01).",
        "The connector library reconnects by itself.",
    ],
    "build": [
        "The build failed with ERR_E1234 in src/hermes_core/loop/agent.py line 88",
        "Error E1234 means the cache at ~/.cache/hermes/build-v2.lock is stale; delete it.",
        "Run `make clean && make -j4` then retry the 2nd build.",
    ],
    "web": [
        "Read https://example.com/docs/getting-started?lang=en#install before installing.",
        "Also see docs.python.org/3/library/re.html for regular expressions.",
        _call("web_extract", '{"url": "https://example.com/zebra-guide", "max_chars": 5000}'),
        "The zebra guide says: zebras are striped.",
    ],
    "cjk": [
        "数据库连接失败了，怎么办？",
        "请检查防火墙设置和数据库的端口。",
        "東京の天気は晴れです",
        "한국어 검색 테스트입니다",
        "mixed 数据 and English words",
    ],
    "accents": [
        "Le café est très bon à Zürich",
        "naïve résumé of the Ærø trip",
        "A plain cafe on the corner",
    ],
    "words": [
        "the red car is parked outside",
        "a car that is red and fast",
        "alpha beta gamma delta",
        "alpha only here",
        "snake_case_name and camelCaseName and kebab-case-name",
        "email me at someone@example.org tomorrow",
        "version 3.11.7 fixes it; 42 is the answer; pi is 3.14159",
        "it's the user's choice (see config.yaml).",
        "C++ and C# are languages; so is Go.",
    ],
    "parts": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What breed is the dog in picture_0042.png?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        "It looks like a border collie.",
        _call("read_file", '{"path": "/srv/data/dogs/border_collie.md"}'),
        {"role": "tool", "tool_call_id": "call_read_file", "content": "Border collies herd sheep."},
    ],
}


QUERIES = [
    "postgres",
    "Postgres database",
    "connect",
    "connection",
    "connec",
    "reconnects",
    "connect laptop",
    '"connection string"',
    '"string connection"',
    "postgresql://app@db.internal:5432/main",
    "db.internal",
    "pg_hba.conf",
    "pg_hba",
    "hba",
    "28P01",
    "SQLSTATE",
    "E1234",
    "ERR_E1234",
    "err",
    "agent.py",
    "src/hermes_core/loop/agent.py",
    "hermes_core",
    "build-v2.lock",
    "~/.cache/hermes",
    "make -j4",
    "2nd",
    "https://example.com/docs/getting-started?lang=en#install",
    "example.com",
    "getting-started",
    "docs.python.org",
    "re.html",
    "zebra",
    "zebras",
    "zebra-guide",
    "web_extract",
    "max_chars",
    "数据库",
    "数据",
    "防火墙",
    "连接失败",
    "東京",
    "天気",
    "한국어",
    "검색",
    "café",
    "cafe",
    "Zurich",
    "zürich",
    "resume",
    "naive",
    "ærø",
    '"red car"',
    "red car",
    "car red",
    '"car that"',
    "alpha beta",
    "alpha zzzzunknown",
    "gamma delta",
    "snake_case_name",
    "camelCaseName",
    "kebab-case-name",
    "kebab",
    "someone@example.org",
    "example.org",
    "3.11.7",
    "3.14",
    "42",
    "user's",
    "config.yaml",
    "(see config.yaml).",
    "C++",
    "Go",
    "picture_0042.png",
    "0042",
    "border_collie.md",
    "border collie",
    "collies",
    "herd sheep",
    "breed dog",
    "nothing-matches-this-query-xyz",
    "qqqq wwww",
    '"unterminated quote',
    "   ",
    "!!!",
]


def _load(store: Any, start: float) -> None:
    """Write the corpus into ``store``."""
    for offset, (name, messages) in enumerate(CORPUS.items()):
        store.create_session(SessionInfo(id=name, started_at=start + offset, title=name.title()))
        for index, message in enumerate(messages):
            if isinstance(message, str):
                message = {"role": "user" if index % 2 == 0 else "assistant", "content": message}
            store.append_message(name, message)


def _positions(rows: list[tuple[int, str]]) -> dict[int, tuple[str, int]]:
    """(session, position in the session) of each message id, from (id, session) rows."""
    seen: dict[str, int] = {}
    positions = {}
    for message_id, session_id in sorted(rows):
        positions[message_id] = (session_id, seen.get(session_id, 0))
        seen[session_id] = seen.get(session_id, 0) + 1
    return positions


class Indexed:
    """A store loaded with the corpus, and where each of its message ids is in the corpus."""

    def __init__(self, store: Any, positions: dict[int, tuple[str, int]]) -> None:
        self.store = store
        self.positions = positions

    def found(self, query: str) -> set[tuple[str, int]]:
        """The messages ``query`` finds, as (session, position); every snippet marks a match."""
        hits = self.store.search(query, limit=50)
        for hit in hits:
            assert "[" in hit.snippet and "]" in hit.snippet, (query, hit.snippet)
        return {self.positions[hit.message_id] for hit in hits}


@pytest.fixture(scope="module")
def stores(
    database: str, tmp_path_factory: pytest.TempPathFactory, wipe: Callable[[str], None]
) -> Iterator[tuple[Indexed, Indexed]]:
    """Both stores, loaded with the same corpus."""
    path = Path(tmp_path_factory.mktemp("parity")) / "sessions.db"
    sqlite = SQLiteSessionStore(path)
    postgres = PostgresSessionStore(database)
    start = time.time() - 1000
    for store in (sqlite, postgres):
        _load(store, start)
    with sqlite3.connect(path) as conn:
        lite_rows = conn.execute("SELECT id, session_id FROM messages").fetchall()
    with psycopg.connect(database) as pg:
        pg_rows = pg.execute("SELECT id, session_id FROM messages").fetchall()
    yield Indexed(sqlite, _positions(lite_rows)), Indexed(postgres, _positions(pg_rows))
    sqlite.close()
    postgres.close()
    wipe(database)


@pytest.mark.parametrize("query", QUERIES)
def test_the_same_messages_are_found(stores: tuple[Indexed, Indexed], query: str) -> None:
    sqlite, postgres = stores
    expected = sqlite.found(query)
    got = postgres.found(query)
    assert got == expected, f"{query!r}: PostgreSQL {sorted(got)}, SQLite {sorted(expected)}"


def test_the_query_set_exercises_every_path(stores: tuple[Indexed, Indexed]) -> None:
    sqlite, _ = stores
    found = {query: sqlite.found(query) for query in QUERIES}
    assert sum(1 for hits in found.values() if hits) >= len(QUERIES) * 3 // 4
    assert found["nothing-matches-this-query-xyz"] == set()
    assert len(found["alpha zzzzunknown"]) == 2  # no message has both: any term


TEXTS = [
    "Hello, World! How's it going?",
    "snake_case_name camelCaseName kebab-case-name",
    "Café naïve résumé Ærø Zürich İstanbul straße ǅemal",
    "e\u0301te\u0301 (decomposed accents)",
    "数据库连接失败了，怎么办？ 東京の天気は晴れです 한국어 검색",
    "हिन्दी भाषा",
    "x²y ½ Ⅻ 3.14159 v2.0-rc1 ERR_E1234 0xDEADbeef",
    "https://example.com/a_b/c?d=e#f user@example.org ~/.cache/x.lock",
    "tabs\tand\nnewlines  and \x00 nul",
    "private use \ue000abc\ue001 and emoji 👋 done",
    "ﬁnance ｆｕｌｌ width",
]


@pytest.mark.parametrize("text", TEXTS)
def test_words_are_cut_as_sqlite_cuts_them(text: str) -> None:
    from hermes_store_postgres.words import words_of

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.execute("INSERT INTO t (x) VALUES (?)", (text,))
    expected = [row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset")]
    conn.close()
    assert words_of(text) == expected
