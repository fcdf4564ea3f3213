"""A team's gateway over the procrastinate queue, with real processes on a real PostgreSQL: a
front end and workers, each with a home of its own (as on separate machines). A session's turns
run one at a time across workers and stream back to the front end; an interrupt and /stop reach
the worker that runs the turn within a second; a killed worker's turn is run by another."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hermes_gateway.people import guest_id
from hermes_gateway.settings import load_settings
from hermes_gateway.team import drop_secrets, secret_variables
from hermes_gateway.webhook import sign
from team_kit import Member, Receiver, ask, team_config

from hermes_core.testing import FakeLLM, isolated_environ, wait_until

SECRET = "team-webhook-secret"


def _answer(request: Any) -> dict[str, Any]:
    """How many user messages the model was sent (the session's history so far); a prompt
    ending with ``slowly`` takes 3 s."""
    users = [m for m in request.json["messages"] if m["role"] == "user"]
    last = users[-1]["content"]
    if last.endswith("slowly"):
        return {"text": f"slow answer to {last}", "delay": 3.0}
    return {"text": f"seen {len(users)}: {last}", "delay": 0.3}


def _messages(database: str, session: str) -> list[tuple[str, str]]:
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT role, coalesce(content, '') FROM messages WHERE session_id = %s ORDER BY id",
            (session,),
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


class Team:
    """Two workers, a front end with ``busy: queue`` and one with ``busy: interrupt``."""

    def __init__(self, folder: Path, database: str, server: FakeLLM) -> None:
        self.database = database
        self.server = server
        self.receiver = Receiver()
        config = team_config(database, server.openai_base_url)
        hooks = {
            "adapter": "webhook",
            "port": 0,
            "secret": SECRET,
            "deliver_url": self.receiver.url,
            "allowed_users": ["alice"],
        }
        config["gateway"]["platforms"]["hooks"] = hooks
        self.workers = [Member(folder / f"worker{n}", config, "worker") for n in (1, 2)]
        self.front = Member(folder / "front", config, "front")
        interrupting = team_config(database, server.openai_base_url, busy="interrupt")
        interrupting["gateway"]["platforms"]["hooks"] = hooks
        self.interrupting = Member(folder / "front-interrupt", interrupting, "front")
        for member in self.members:
            member.ready()

    @property
    def members(self) -> list[Member]:
        return [*self.workers, self.front, self.interrupting]


@pytest.fixture(scope="module")
def team(tmp_path_factory, module_database) -> Iterator[Team]:
    with FakeLLM() as server:
        server.add(*([_answer] * 200))
        made = Team(tmp_path_factory.mktemp("team"), module_database, server)
        try:
            yield made
        finally:
            for member in made.members:
                member.stop()
            made.receiver.close()
            for member in made.members:
                assert "Traceback" not in member.log, member.log


def test_turns_of_one_session_run_one_at_a_time_on_two_workers_and_stream_back(team):
    status, answer, session = ask(team.front.url, "start")
    assert (status, answer) == (200, "seen 1: start")
    before = len(team.server.model_requests)
    answers: list[str] = []

    def one(word: str) -> None:
        answers.append(ask(team.front.url, word, session)[1])

    askers = [threading.Thread(target=one, args=(f"w{n}",)) for n in range(4)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(60)
    streamed = ask(team.front.url, "streamed", session, stream=True)
    # one at a time: each turn saw every earlier one, so each saw a different history
    assert sorted(int(a.split()[1].rstrip(":")) for a in answers) == [2, 3, 4, 5], answers
    started = sorted(r.received_at for r in team.server.model_requests[before:])
    assert all(b - a >= 0.25 for a, b in zip(started, started[1:], strict=False)), started
    assert streamed[:2] == (200, "seen 6: streamed")
    users = [c for role, c in _messages(team.database, session) if role == "user"]
    assert users[0] == "start" and len(users) == 6 and len(set(users)) == 6
    with psycopg.connect(team.database) as conn:
        left = conn.execute("SELECT count(*) FROM hermes_turn_events").fetchone()
    assert left == (0,)  # each front end forgets a turn's events once it has its outcome


def test_an_interrupt_reaches_the_worker_running_the_turn(team):
    url = team.interrupting.url
    _, _, session = ask(url, "first")
    results: dict[str, Any] = {}

    def slow() -> None:
        began = time.monotonic()
        results["slow"] = ask(url, "take it slowly", session)
        results["slow_took"] = time.monotonic() - began

    count = len(team.server.model_requests)
    asker = threading.Thread(target=slow)
    asker.start()
    assert wait_until(lambda: len(team.server.model_requests) > count, timeout=30)
    sent = time.monotonic()
    results["next"] = ask(url, "instead", session)
    results["next_took"] = time.monotonic() - sent
    asker.join(30)
    status, body, _ = results["slow"]
    assert status == 409, body
    # the slow model call (3 s) was cut short: the interrupt reached its worker within a second
    assert results["slow_took"] < 2.5, results
    assert results["next_took"] < 2.5, results
    # the interrupted message and the new one, joined, as one user message
    assert results["next"][:2] == (200, "seen 2: take it slowly\n\ninstead"), results


def _chat(team: Team, text: str, front: Member | None = None) -> None:
    """Alice writes ``text`` in the chat ``ops`` of the webhook platform (through ``front``,
    the queueing front end by default)."""
    data = json.dumps({"chat_id": "ops", "user_id": "alice", "text": text}).encode()
    headers = {"Content-Type": "application/json", "X-Hermes-Signature": sign(SECRET, data)}
    front = front or team.front
    found = re.search(r"hooks ready at (\S+)", front.log)
    assert found is not None, front.log
    request = urllib.request.Request(found.group(1), data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 202


def _doing(database: str) -> int:
    with psycopg.connect(database) as conn:
        row = conn.execute("SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'")
        return int(row.fetchone()[0])  # type: ignore[index]


def test_status_and_stop_find_the_turn_on_the_worker_that_runs_it(team):
    _chat(team, "hello")
    assert team.receiver.wait_for(1)[-1]["text"] == "seen 1: hello"
    count = len(team.server.model_requests)
    _chat(team, "take it slowly")
    assert wait_until(lambda: len(team.server.model_requests) > count, timeout=30)
    _chat(team, "/status")
    status = team.receiver.wait_for(2)[-1]["text"]
    pids = {str(w.process.pid) for w in team.workers}
    found = re.search(r"State: a turn is running \(\d+s on [^:]+:(\d+)\)", status)
    assert found is not None and found.group(1) in pids, status
    asked = time.monotonic()
    _chat(team, "/stop")
    assert team.receiver.wait_for(3)[-1]["text"] == "Stopped."
    assert wait_until(lambda: _doing(team.database) == 0, timeout=5)
    assert time.monotonic() - asked < 1.5  # the abort reached the worker within a second
    _chat(team, "/status")
    assert "State: idle" in team.receiver.wait_for(4)[-1]["text"]
    time.sleep(0.5)  # the stopped turn sends no answer
    texts = [e["text"] for e in team.receiver.events("message")]
    assert not any(t.startswith("slow answer") for t in texts), texts


def _running_worker(team: Team) -> Member:
    """The worker whose turn has started (the one ``started`` event in the database)."""
    with psycopg.connect(team.database) as conn:
        worker = conn.execute(
            "SELECT data->>'worker' FROM hermes_turn_events WHERE kind = 'started'"
        ).fetchone()
    assert worker is not None
    pid = int(worker[0].rsplit(":", 1)[1])
    return next(w for w in team.workers if w.process.pid == pid)


def _replace(team: Team, gone: Member, folder: Path) -> None:
    config = json.loads((gone.home / "config.yaml").read_text())
    replacement = Member(folder, config, "worker")
    team.workers[team.workers.index(gone)] = replacement
    replacement.ready()


def test_a_conversation_stays_in_its_session_whichever_front_end_gets_it(team):
    _chat(team, "/new")
    already = len(team.receiver.wait_for(1))
    _chat(team, "one")
    assert team.receiver.wait_for(already + 1)[-1]["text"] == "seen 1: one"
    _chat(team, "two", front=team.interrupting)
    assert team.receiver.wait_for(already + 2)[-1]["text"] == "seen 2: two"
    with psycopg.connect(team.database) as conn:
        rows = conn.execute("SELECT platform, chat_id, user_id FROM hermes_gateway_routes")
        assert ("hooks", "ops", "alice") in rows.fetchall()
    assert not (team.front.home / "gateway" / "sessions.json").exists()


def test_forgetting_a_person_forgets_their_shared_routes(team):
    _chat(team, "remember me")
    team.receiver.wait_for(len(team.receiver.events("message")) + 1)
    person = guest_id("hooks", "alice")
    code = "import sys; from hermes_core.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "gateway", "people", "forget", person, "--yes"],
        env=isolated_environ(team.front.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"forgot {person}:" in done.stdout
    with psycopg.connect(team.database) as conn:
        left = conn.execute(
            "SELECT count(*) FROM hermes_gateway_routes WHERE user_id = 'alice'"
        ).fetchone()
    assert left == (0,)


def test_a_stopped_worker_finishes_its_turn_first(team, tmp_path):
    url = team.front.url
    _, _, session = ask(url, "first")
    results: dict[str, Any] = {}
    count = len(team.server.model_requests)
    asker = threading.Thread(target=lambda: results.update(slow=ask(url, "drain, slowly", session)))
    asker.start()
    assert wait_until(lambda: len(team.server.model_requests) > count, timeout=30)
    leaving = _running_worker(team)
    assert leaving.stop() == 0
    asker.join(30)
    assert results["slow"][:2] == (200, "slow answer to drain, slowly"), results
    assert "gateway: stopped" in leaving.log
    _replace(team, leaving, tmp_path / "replacement")


def test_a_killed_workers_turn_is_run_by_another(team, tmp_path):
    url = team.front.url
    _, _, session = ask(url, "first")
    results: dict[str, Any] = {}
    count = len(team.server.model_requests)
    asker = threading.Thread(target=lambda: results.update(slow=ask(url, "crash, slowly", session)))
    asker.start()
    assert wait_until(lambda: len(team.server.model_requests) > count, timeout=30)
    victim = _running_worker(team)
    killed = time.monotonic()
    victim.kill()
    asker.join(60)
    resumed_in = time.monotonic() - killed
    after = ask(url, "after", session)
    assert results["slow"][:2] == (200, "slow answer to crash, slowly"), results
    assert resumed_in < 10, resumed_in
    # the repeat found the first attempt's user message unanswered in the store and continued
    # that turn: no message twice
    assert after[:2] == (200, "seen 3: after"), _messages(team.database, session)
    transcript = _messages(team.database, session)
    users = [c for role, c in transcript if role == "user"]
    assert users == ["first", "crash, slowly", "after"], transcript
    assistants = [c for role, c in transcript if role == "assistant"]
    assert assistants == ["seen 1: first", "slow answer to crash, slowly", "seen 3: after"]
    # a worker started in its place serves the team
    _replace(team, victim, tmp_path / "replacement")


def test_a_role_needs_a_queue_and_a_worker_holds_no_platform_secret(tmp_path, monkeypatch):
    config = {"gateway": {"platforms": {"api": {"adapter": "api_server", "port": 0}}}}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    code = "import sys; from hermes_core.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "gateway", "run", "--role", "worker"],
        env=isolated_environ(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "hermes: error: --role worker needs a work queue shared by the front ends and "
        "workers: set gateway.queue (see docs/team.md)"
    ]
    settings = load_settings(
        {
            "gateway": {
                "platforms": {
                    "api": {"adapter": "api_server"},
                    "hooks": {"adapter": "webhook", "secret_env": "HOOKS_SECRET"},
                },
                "users": {"alice": {"ids": ["api:alice"], "api_key_env": "ALICE_KEY"}},
            }
        }
    )
    names = secret_variables(settings)
    assert names == {"HERMES_API_SERVER_KEY", "HERMES_WEBHOOK_SECRET", "HOOKS_SECRET", "ALICE_KEY"}
    for name in ("HERMES_API_SERVER_KEY", "ALICE_KEY"):
        monkeypatch.setenv(name, "secret")
    monkeypatch.setenv("OPENAI_API_KEY", "kept")
    assert drop_secrets(names) == ["ALICE_KEY", "HERMES_API_SERVER_KEY"]
    assert "ALICE_KEY" not in os.environ and os.environ["OPENAI_API_KEY"] == "kept"


@pytest.mark.parametrize("role", ["front", "worker"])
def test_an_unreachable_queue_is_one_line(tmp_path, role):
    config = {
        "gateway": {
            "queue": {"url": "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2"},
            "platforms": {"api": {"adapter": "api_server", "port": 0, "key": "k"}},
        }
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    code = "import sys; from hermes_core.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "gateway", "run", "--role", role],
        env=isolated_environ(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert re.match(
        r"hermes: error: the work queue at postgresql://nobody@127\.0\.0\.1:9/none\S* cannot be "
        r"reached",
        last,
    ), done.stderr
    assert "Traceback" not in done.stderr
