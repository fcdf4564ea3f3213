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
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hermes_gateway.settings import load_settings
from hermes_gateway.team import drop_secrets, secret_variables
from team_kit import Member, ask, team_config

from hermes_core.testing import FakeLLM, isolated_environ, wait_until


def _count_users(request: Any) -> dict[str, Any]:
    """Answers with how many user messages the model was sent: the session's history so far."""
    users = [m for m in request.json["messages"] if m["role"] == "user"]
    return {"text": f"seen {len(users)}: {users[-1]['content']}", "delay": 0.3}


def _slow(request: Any) -> dict[str, Any]:
    users = [m for m in request.json["messages"] if m["role"] == "user"]
    return {"text": f"slow answer to {users[-1]['content']}", "delay": 3.0}


def _messages(database: str, session: str) -> list[tuple[str, str]]:
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT role, coalesce(content, '') FROM messages WHERE session_id = %s ORDER BY id",
            (session,),
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def _team(tmp_path: Path, database: str, server: FakeLLM, workers: int, **gateway: Any) -> Any:
    config = team_config(database, server.openai_base_url, **gateway)
    ran = [Member(tmp_path / f"worker{n}", config, "worker") for n in range(1, workers + 1)]
    front = Member(tmp_path / "front", config, "front")
    for member in [*ran, front]:
        member.ready()
    return front, ran


def _stop_all(*members: Member) -> None:
    for member in members:
        member.stop()


def test_turns_of_one_session_run_one_at_a_time_on_two_workers_and_stream_back(tmp_path, database):
    with FakeLLM() as server:
        server.add(*([_count_users] * 12))
        front, workers = _team(tmp_path, database, server, 2)
        try:
            status, answer, session = ask(front.url, "start")
            assert (status, answer) == (200, "seen 1: start")
            answers: list[str] = []

            def one(word: str) -> None:
                answers.append(ask(front.url, word, session)[1])

            askers = [threading.Thread(target=one, args=(f"w{n}",)) for n in range(4)]
            for asker in askers:
                asker.start()
            for asker in askers:
                asker.join(60)
            streamed = ask(front.url, "streamed", session, stream=True)
        finally:
            _stop_all(front, *workers)
    # one at a time: each turn saw every earlier one, so each saw a different history
    assert sorted(int(a.split()[1].rstrip(":")) for a in answers) == [2, 3, 4, 5], answers
    started = sorted(r.received_at for r in server.model_requests)
    assert all(b - a >= 0.25 for a, b in zip(started, started[1:], strict=False)), started
    assert streamed[:2] == (200, "seen 6: streamed")
    users = [c for role, c in _messages(database, session) if role == "user"]
    assert users[0] == "start" and len(users) == 6 and len(set(users)) == 6
    with psycopg.connect(database) as conn:
        left = conn.execute("SELECT count(*) FROM hermes_turn_events").fetchone()
    assert left == (0,)  # each front end forgets a turn's events once it has its outcome
    for worker in workers:
        assert "Traceback" not in worker.log, worker.log


def test_an_interrupt_and_stop_reach_the_worker_running_the_turn(tmp_path, database):
    with FakeLLM() as server:
        server.add(_count_users, _slow, _count_users, _slow)
        front, workers = _team(tmp_path, database, server, 2, busy="interrupt")
        try:
            _, _, session = ask(front.url, "first")
            results: dict[str, Any] = {}

            def slow() -> None:
                began = time.monotonic()
                results["slow"] = ask(front.url, "long one", session)
                results["slow_took"] = time.monotonic() - began

            asker = threading.Thread(target=slow)
            asker.start()
            assert wait_until(lambda: len(server.model_requests) >= 2, timeout=30)
            sent = time.monotonic()
            results["next"] = ask(front.url, "instead", session)
            results["next_took"] = time.monotonic() - sent
            asker.join(30)
        finally:
            _stop_all(front, *workers)
    status, body, _ = results["slow"]
    assert status == 409, body
    # the slow model call (3 s) was cut short: the interrupt reached its worker within a second
    assert results["slow_took"] < 2.5, results
    assert results["next_took"] < 2.5, results
    assert results["next"][:2] == (200, "seen 2: long one\n\ninstead")


def test_a_killed_workers_turn_is_run_by_another(tmp_path, database):
    with FakeLLM() as server:
        server.add(_count_users, _slow, _slow, _count_users)
        front, workers = _team(tmp_path, database, server, 2)
        try:
            _, _, session = ask(front.url, "first")
            results: dict[str, Any] = {}
            asker = threading.Thread(
                target=lambda: results.update(slow=ask(front.url, "crash here", session))
            )
            asker.start()
            assert wait_until(lambda: len(server.model_requests) >= 2, timeout=30)
            with psycopg.connect(database) as conn:
                worker = conn.execute(
                    "SELECT data->>'worker' FROM hermes_turn_events WHERE kind = 'started'"
                ).fetchone()
            assert worker is not None
            pid = int(worker[0].rsplit(":", 1)[1])
            victim = next(w for w in workers if w.process.pid == pid)
            killed = time.monotonic()
            victim.kill()
            asker.join(60)
            resumed_in = time.monotonic() - killed
            after = ask(front.url, "after", session)
        finally:
            _stop_all(front, *workers)
    assert results["slow"][:2] == (200, "slow answer to crash here"), results
    assert resumed_in < 10, resumed_in
    # the repeat found the first attempt's user message unanswered in the store: the loop closed
    # it with a note, as after any interrupted turn, and answered the repeat (the loop has no
    # way yet to continue a stored turn without adding its message again)
    assert after[:2] == (200, "seen 4: after")
    transcript = _messages(database, session)
    users = [c for role, c in transcript if role == "user"]
    assert users == ["first", "crash here", "crash here", "after"], users
    assert [c for role, c in transcript if role == "assistant"][-1] == "seen 4: after"


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
