"""``hermes gateway people`` and ``hermes gateway people forget``, run as the real command in a
process of its own over a home holding two people's data (sessions in the SQLite store, their
own folders, workspaces, routes): the listing, the dry run that leaves everything, the
confirmation, and a forget that removes exactly one person's data and nothing of the other's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hermes_gateway.core import workspace_name
from hermes_gateway.people import guest_id
from hermes_gateway.records import remember_ids
from hermes_gateway.routes import RouteStore, route_key

from hermes_core.testing import SQLiteSessionStore, isolated_environ
from hermes_hookspecs import SessionInfo

ALICE_CANARY = "alice-private-3c9e"
BOB_CANARY = "bob-private-77ab"


def _hermes(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    code = "import sys; from hermes_core.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=isolated_environ(home),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _session(store: SQLiteSessionStore, person: str, n: int, text: str) -> str:
    session_id = f"session_{person[:8]}{n:08d}"
    store.create_session(
        SessionInfo(id=session_id, source="api", person=person, started_at=time.time())
    )
    store.append_message(session_id, {"role": "user", "content": text})
    store.add_usage(session_id, {"input_tokens": 100, "output_tokens": 20}, 0.001)
    return session_id


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home where alice, bob and a guest each have sessions, a folder and a workspace."""
    config = {
        "gateway": {
            "users": {
                "alice": {"ids": ["api:alice", "hooks:U1"], "groups": ["team"]},
                "bob": {"ids": ["api:bob"]},
            },
            "groups": {"team": {"share_sessions": True}},
        }
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    with SQLiteSessionStore(tmp_path / "sessions.db") as store:
        alice = [_session(store, "alice", n, ALICE_CANARY) for n in range(2)]
        bob = [_session(store, "bob", 0, BOB_CANARY)]
        _session(store, guest_id("hooks", "dave"), 0, "hello")
    for person, canary in (("alice", ALICE_CANARY), ("bob", BOB_CANARY)):
        memories = tmp_path / "people" / person / "memories"
        memories.mkdir(parents=True)
        (memories / "USER.md").write_text(canary)
        workspace = tmp_path / "workspaces" / "people" / person
        workspace.mkdir(parents=True)
        (workspace / "diary.txt").write_text(canary)
    dave = tmp_path / "workspaces" / workspace_name("hooks", "dave")
    dave.mkdir(parents=True)
    remember_ids(tmp_path, guest_id("hooks", "dave"), "hooks:dave", str(dave))
    routes = RouteStore(tmp_path / "gateway" / "sessions.json")
    routes.assign(route_key("hooks", "c", "U1"), alice[0])
    routes.remember_response("resp_alice", alice[1])
    routes.assign(route_key("api", "api", "bob"), bob[0])
    return tmp_path


def test_people_lists_each_person_their_ids_and_what_they_own(home: Path):
    done = _hermes(home, "gateway", "people")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "alice  (ids: api:alice, hooks:U1; groups: team)" in out
    assert "bob  (ids: api:bob)" in out
    assert f"{guest_id('hooks', 'dave')}  (a guest; ids: hooks:dave)" in out
    alice = out.split("alice  (")[1].split("\nbob")[0]
    assert "sessions: 2 (240 tokens, $0.0020)" in alice
    assert "own data: memory" in alice
    assert str(home / "workspaces" / "people" / "alice") in alice
    assert ALICE_CANARY not in out and BOB_CANARY not in out  # what they own, not its content


def test_forget_dry_run_lists_what_would_go_and_leaves_everything(home: Path):
    def files() -> list[tuple[str, bytes]]:
        found = [*(home / "people").rglob("*"), *(home / "workspaces").rglob("*")]
        return sorted((str(p), p.read_bytes() if p.is_file() else b"") for p in found)

    before, routes = files(), (home / "gateway" / "sessions.json").read_text()
    done = _hermes(home, "gateway", "people", "forget", "alice", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "would forget alice:" in done.stdout
    assert "2 session(s)" in done.stdout and "2 conversation route(s)" in done.stdout
    assert str(home / "people" / "alice") in done.stdout
    assert str(home / "workspaces" / "people" / "alice") in done.stdout
    assert files() == before
    assert (home / "gateway" / "sessions.json").read_text() == routes
    with SQLiteSessionStore(home / "sessions.db") as store:
        assert store.people_counts()["alice"] == 2


def test_forget_without_a_terminal_or_yes_refuses_in_one_line(home: Path):
    done = _hermes(home, "gateway", "people", "forget", "alice")
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0 and "--yes" in done.stderr
    assert "Traceback" not in done.stderr
    assert (home / "people" / "alice").is_dir()


def test_forget_removes_exactly_that_persons_data(home: Path):
    done = _hermes(home, "gateway", "people", "forget", "alice", "--yes")
    assert done.returncode == 0, done.stderr
    assert "forgot alice: 2 session(s), 2 route(s), 2 folder(s)" in done.stdout
    assert "still in gateway.users" in done.stdout
    with SQLiteSessionStore(home / "sessions.db") as store:
        counts = store.people_counts()
        assert "alice" not in counts and counts["bob"] == 1
        assert store.search_people(["alice", "bob", None], ALICE_CANARY) == []
        assert [h.session_id for h in store.search_people(["bob"], BOB_CANARY)]
    assert not (home / "people" / "alice").exists()
    assert not (home / "workspaces" / "people" / "alice").exists()
    assert (home / "people" / "bob" / "memories" / "USER.md").read_text() == BOB_CANARY
    assert (home / "workspaces" / "people" / "bob" / "diary.txt").read_text() == BOB_CANARY
    routes = json.loads((home / "gateway" / "sessions.json").read_text())
    assert list(routes["routes"]) == [route_key("api", "api", "bob")]
    assert routes["responses"] == {}
    listed = _hermes(home, "gateway", "people").stdout
    assert "alice  (ids: api:alice, hooks:U1; groups: team)\n  sessions: 0" in listed


def test_forget_finds_a_guests_workspace_by_their_record(home: Path):
    dave = guest_id("hooks", "dave")
    done = _hermes(home, "gateway", "people", "forget", dave, "--yes")
    assert done.returncode == 0, done.stderr
    assert not (home / "workspaces" / workspace_name("hooks", "dave")).exists()
    assert not (home / "people" / dave).exists()
    assert (home / "workspaces" / "people" / "bob").is_dir()


@pytest.mark.parametrize(
    ("person", "says"),
    [
        ("nobody", "nothing is kept for nobody"),
        ("../alice", "is not a person id"),
        ("Alice", "is not a person id"),
    ],
)
def test_forget_of_no_one_is_one_line_and_deletes_nothing(home: Path, person: str, says: str):
    done = _hermes(home, "gateway", "people", "forget", person, "--yes")
    assert done.returncode == 1 and says in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert (home / "people" / "alice" / "memories" / "USER.md").read_text() == ALICE_CANARY


def test_a_bad_people_config_is_one_line(home: Path):
    (home / "config.yaml").write_text(json.dumps({"gateway": {"users": {"a": {"ids": "x"}}}}))
    done = _hermes(home, "gateway", "people")
    assert done.returncode == 1 and "gateway.users.a.ids must be a list" in done.stderr
    assert done.stderr.strip().count("\n") == 0
