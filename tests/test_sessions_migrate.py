"""``hermes sessions migrate``: every session and message copied, counters not doubled, a second
run copying nothing, a grown session extended, a diverged one left alone, one person's only, and
one-line errors (SQLite to SQLite here; PostgreSQL in the store plugin's tests)."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_core.session_store.migrate import copy_sessions
from hermes_core.session_store.sqlite_store import SQLiteSessionStore
from hermes_hookspecs import SessionInfo


def fill(store: SQLiteSessionStore, sid: str, n: int, person: str | None = None) -> list[dict]:
    store.create_session(
        SessionInfo(id=sid, title=f"t-{sid}", person=person, model="m", started_at=float(n))
    )
    messages = []
    for i in range(n):
        message = {"role": "user" if i % 2 == 0 else "assistant", "content": f"{sid} {i} ü"}
        store.append_message(sid, message)
        messages.append(message)
    store.update_session(sid, input_tokens=100 * n, estimated_cost_usd=0.5)
    return messages


def test_copy_is_complete_and_idempotent(tmp_path: Path):
    source = SQLiteSessionStore(tmp_path / "a.db")
    target = SQLiteSessionStore(tmp_path / "b.db")
    kept = {sid: fill(source, sid, n) for sid, n in (("s1", 3), ("s2", 5), ("s3", 0))}
    report = copy_sessions(source, target)
    assert (report.new, report.messages, report.conflicts) == (3, 8, [])
    for sid, messages in kept.items():
        assert target.get_messages(sid) == messages
        copied, original = target.get_session(sid), source.get_session(sid)
        assert copied.title == original.title and copied.metadata == original.metadata
    again = copy_sessions(source, target)
    assert (again.new, again.extended, again.unchanged, again.messages) == (0, 0, 3, 0)


def test_a_grown_session_is_extended_and_a_diverged_one_left_alone(tmp_path: Path):
    source = SQLiteSessionStore(tmp_path / "a.db")
    target = SQLiteSessionStore(tmp_path / "b.db")
    fill(source, "grows", 2)
    fill(source, "diverges", 2)
    copy_sessions(source, target)
    source.append_message("grows", {"role": "user", "content": "later"})
    source.update_session("grows", input_tokens=999)
    target.append_message("diverges", {"role": "user", "content": "only in the target"})
    report = copy_sessions(source, target)
    assert (report.extended, report.messages, report.conflicts) == (1, 1, ["diverges"])
    assert target.get_messages("grows") == source.get_messages("grows")
    grown = target.get_session("grows").metadata
    assert grown["input_tokens"] == 999 and grown["message_count"] == 3
    assert "left alone" in report.line() and "diverges" in report.line()


def test_one_persons_sessions_only(tmp_path: Path):
    source = SQLiteSessionStore(tmp_path / "a.db")
    target = SQLiteSessionStore(tmp_path / "b.db")
    fill(source, "mine", 1)
    fill(source, "alices", 1, person="alice")
    fill(source, "bobs", 1, person="bob")
    assert copy_sessions(source, target, people=["alice"]).new == 1
    assert [s.id for s in target.list_sessions()] == ["alices"]
    assert target.get_session("alices").person == "alice"


def test_the_command_copies_this_homes_store_out_and_back(hermes_cli, hermes_home: Path, tmp_path):
    home_store = SQLiteSessionStore(hermes_home / "sessions.db")
    fill(home_store, "s1", 4)
    home_store.close()
    out = tmp_path / "elsewhere"
    done = hermes_cli("sessions", "migrate", "--to", f"sqlite:{out}", "--json")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.output)["new"] == 1
    assert SQLiteSessionStore(out / "sessions.db").get_messages("s1")[3]["content"] == "s1 3 ü"
    back = hermes_cli(
        "sessions", "migrate", "--from", str(out / "sessions.db"), "--to", str(tmp_path / "x.db")
    )
    assert back.exit_code == 0 and back.output.startswith("1 sessions copied")


def test_errors_are_one_line(hermes_cli, hermes_home: Path):
    same = hermes_cli("sessions", "migrate", "--to", str(hermes_home))
    assert same.exit_code == 1 and "the store the sessions come from" in same.stderr
    unknown = hermes_cli("sessions", "migrate", "--to", "nosuch://host/db")
    assert unknown.exit_code == 1 and "no installed plugin serves" in unknown.stderr
    for result in (same, unknown):
        assert result.stderr.count("\n") == 1
