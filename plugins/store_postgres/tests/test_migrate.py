"""``hermes sessions migrate`` into the real PostgreSQL store and back out: a person's history
moves whole, twice moves nothing more, and what comes back equals what went in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hermes_store_postgres.store import PostgresSessionStore

from hermes_core.session_store.migrate import copy_sessions
from hermes_core.session_store.sqlite_store import SQLiteSessionStore
from hermes_hookspecs import SessionInfo


@pytest.fixture
def target(database: str, wipe):
    wipe(database)
    yield database
    wipe(database)


def history(store: SQLiteSessionStore) -> None:
    for sid, person, n in (("s-own", None, 3), ("s-alice", "alice", 4)):
        store.create_session(SessionInfo(id=sid, person=person, title=sid, started_at=float(n)))
        for i in range(n):
            content = [{"type": "text", "text": f"part {i} 日本"}] if i == 1 else f"{sid} {i}"
            store.append_message(sid, {"role": "user", "content": content, "_extra": {"i": i}})
        store.update_session(sid, output_tokens=7 * n)


def test_sqlite_to_postgresql_and_back(tmp_path: Path, target: str):
    source = SQLiteSessionStore(tmp_path / "sessions.db")
    history(source)
    pg = PostgresSessionStore(target)
    try:
        assert copy_sessions(source, pg).new == 2
        assert copy_sessions(source, pg).messages == 0
        back = SQLiteSessionStore(tmp_path / "back.db")
        assert copy_sessions(pg, back).new == 2
        for sid in ("s-own", "s-alice"):
            assert back.get_messages(sid) == source.get_messages(sid)
            assert pg.get_session(sid).person == source.get_session(sid).person
            assert back.get_session(sid).metadata["output_tokens"] == 7 * len(
                source.get_messages(sid)
            )
        assert [h.session_id for h in pg.search_people(["alice"], "日本")] == ["s-alice"]
    finally:
        pg.close()


def test_the_command_moves_one_persons_history(hermes_cli, hermes_home: Path, target: str):
    home_store = SQLiteSessionStore(hermes_home / "sessions.db")
    history(home_store)
    home_store.close()
    done = hermes_cli("sessions", "migrate", "--to", target, "--person", "alice", "--json")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.output)["new"] == 1
    pg = PostgresSessionStore(target)
    try:
        assert pg.get_session("s-alice") is not None and pg.get_session("s-own") is None
    finally:
        pg.close()
