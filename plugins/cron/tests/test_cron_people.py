"""Scheduled jobs per person: a person's jobs live in their own folder, the tool sees no one
else's, and the scheduler runs each person's jobs for that person (their limits, their data)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import pytest
from hermes_cron import hermes_register_toolsets
from hermes_cron.daemon import run_daemon
from hermes_cron.jobs import JobStore, all_stores
from hermes_cron.scheduler import tick

from hermes_core.testing import (
    ScriptedModel,
    SQLiteSessionStore,
    check_keeps_people_apart,
    make_agent,
    make_runner,
    text,
    tool_call,
)
from hermes_hookspecs import PersonScope, Tool, Toolset, hookimpl

NOW = _dt.datetime(2026, 3, 2, 8, 59, 30).astimezone().timestamp()
CANARY = "alice-canary-a41e07"


def cronjob_tool() -> Tool:
    """The ``cronjob`` tool as the plugin registers it."""
    found: list[Toolset] = []
    hermes_register_toolsets(found.append)
    return found[0].tools[0]


def as_person(home: Path, person: str | None, *calls: dict) -> list[str]:
    """One turn of ``person``'s agent making the ``cronjob`` calls; the tool results."""
    agent = make_agent(
        *(tool_call("cronjob", args) for args in calls),
        text("done"),
        plugins=["cron"],
        config={},
        home=home,
        person=person,
    )
    agent.chat("schedule")
    agent.close()
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def create(prompt: str, name: str = "report") -> dict:
    return {"action": "create", "schedule": "every 1h", "prompt": prompt, "name": name}


class Limits:
    """Defines people: each may have the todo toolset only. Records whom it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    def hermes_person_scope(self, person: str, config: Any) -> PersonScope:
        self.asked.append(person)
        return PersonScope(toolsets=["todo"])


# --- the cronjob tool ---------------------------------------------------------------------------


def test_a_persons_jobs_are_kept_in_their_own_folder(tmp_path):
    [created] = as_person(tmp_path, "alice", create(CANARY))
    job_id = json.loads(created)["created"]["job_id"]
    path = tmp_path / "people" / "alice" / "cron" / "jobs.json"
    [job] = json.loads(path.read_text())["jobs"]
    assert (job["id"], job["prompt"]) == (job_id, CANARY)
    assert not (tmp_path / "cron").exists()  # nothing in the owner's jobs


def test_a_person_sees_and_changes_only_their_own_jobs(tmp_path):
    owner_job = JobStore(tmp_path).create("every 1h", "the owner's job", name="owners")
    [created] = as_person(tmp_path, "alice", create(CANARY, name="alices"))
    alice_job = json.loads(created)["created"]["job_id"]
    bob = as_person(
        tmp_path,
        "bob",
        {"action": "list"},
        *({"action": a, "job_id": alice_job} for a in ("pause", "resume", "remove", "run")),
        *({"action": a, "job_id": owner_job["id"]} for a in ("pause", "remove")),
        {"action": "remove", "job_id": "alices"},  # by name
    )
    assert json.loads(bob[0]) == {"jobs": []}
    for result in bob[1:]:
        assert result.startswith("Error: no job "), result
    assert CANARY not in "".join(bob)
    [listed] = as_person(tmp_path, "alice", {"action": "list"})
    assert [j["name"] for j in json.loads(listed)["jobs"]] == ["alices"]
    [owners] = as_person(tmp_path, None, {"action": "list"})
    assert [j["name"] for j in json.loads(owners)["jobs"]] == ["owners"]
    assert JobStore(tmp_path, "alice").load()[0]["state"] == "scheduled"
    assert JobStore(tmp_path).load()[0]["state"] == "scheduled"


def test_the_cronjob_tool_keeps_people_apart(tmp_path):
    reads = check_keeps_people_apart(
        cronjob_tool(),
        write_args=create(f"Send the report to {CANARY}", name=CANARY),
        read_args={"action": "list"},
        secret=CANARY,
        home=tmp_path / "home",
        owner=True,
    )
    assert json.loads(reads["guest"]) == json.loads(reads[None]) == {"jobs": []}


# --- the scheduler ---------------------------------------------------------------------------


def test_each_persons_jobs_run_for_them_with_their_limits_and_outputs(tmp_path):
    JobStore(tmp_path).create("every 1h", "owner task", name="owners", now=NOW - 3600)
    JobStore(tmp_path, "alice").create("every 1h", CANARY, name="alices", now=NOW - 3600)
    limits = Limits()
    model = ScriptedModel(fn=lambda request: text(f"answer to {request.messages[-1]['content']}"))
    runner = make_runner(
        model=model, plugins=["cron", "todo", "clarify", limits], home=tmp_path, config={}
    )
    try:
        done = tick(all_stores(tmp_path), runner, now=NOW, max_parallel=1)
        assert [job["person"] for job, _ in done] == [None, "alice"]  # the owner's first
        by_person = {job["person"]: outcome for job, outcome in done}
        assert limits.asked == ["alice"]  # the owner's run has no person to limit
        store = runner.host.session_store
        alice_session = store.get_session(by_person["alice"].session_id)
        owner_session = store.get_session(by_person[None].session_id)
        assert (alice_session.person, alice_session.source) == ("alice", "cron")
        assert owner_session.person is None
    finally:
        runner.host.close()
    alice_request = next(r for r in model.requests if r.messages[-1]["content"] == CANARY)
    assert alice_request.tool_names == ["todo"]  # her limits applied

    [alice_job] = JobStore(tmp_path, "alice").load()
    output = Path(alice_job["last_output"])
    assert output.parent == tmp_path / "people" / "alice" / "cron" / "output" / alice_job["id"]
    assert f"answer to {CANARY}" in output.read_text()
    [owner_job] = JobStore(tmp_path).load()
    assert Path(owner_job["last_output"]).parent == tmp_path / "cron" / "output" / owner_job["id"]
    owner_outputs = list((tmp_path / "cron" / "output").rglob("*.md"))
    assert owner_outputs and all(CANARY not in p.read_text() for p in owner_outputs)


def test_a_persons_chat_delivery_is_queued_naming_them(tmp_path):
    JobStore(tmp_path, "alice").create("every 1h", "report", deliver="telegram:42", now=NOW - 3600)
    runner = make_runner(text(CANARY), plugins=["cron"], home=tmp_path, config={})
    try:
        tick(all_stores(tmp_path), runner, now=NOW)
    finally:
        runner.host.close()
    (queued,) = (tmp_path / "cron" / "outbox").glob("*.json")  # the gateway's one queue
    message = json.loads(queued.read_text())
    assert (message["person"], message["chat_id"], message["text"]) == ("alice", "42", CANARY)
    assert message["output_file"].startswith(str(tmp_path / "people" / "alice" / "cron"))


def test_an_owners_delivery_is_queued_as_before(tmp_path):
    JobStore(tmp_path).create("every 1h", "report", deliver="telegram:42", now=NOW - 3600)
    runner = make_runner(text("the report"), plugins=["cron"], home=tmp_path, config={})
    try:
        tick(all_stores(tmp_path), runner, now=NOW)
    finally:
        runner.host.close()
    (queued,) = (tmp_path / "cron" / "outbox").glob("*.json")
    assert "person" not in json.loads(queued.read_text())


def test_the_daemon_runs_the_jobs_of_people_added_while_it_runs(tmp_path):
    owners = JobStore(tmp_path)
    JobStore(tmp_path, "bob").create("every 1h", "bob task", name="bobs", now=NOW - 7200)
    lines: list[str] = []
    runner = make_runner(text("ok"), plugins=["cron"], home=tmp_path, config={})
    try:
        runs = run_daemon(owners, runner, interval=0, max_parallel=1, log=lines.append, once=True)
    finally:
        runner.host.close()
    assert runs == 1
    assert any("'bobs' (person bob)" in line for line in lines), lines
    [job] = JobStore(tmp_path, "bob").load()
    assert job["last_status"] == "completed" and job["runs"] == 1
    sessions = SQLiteSessionStore(tmp_path / "sessions.db")
    try:
        assert sessions.get_session(job["last_session_id"]).person == "bob"
    finally:
        sessions.close()


def test_folders_that_are_not_people_are_ignored(tmp_path):
    JobStore(tmp_path, "alice").create("every 1h", "x")
    stray = tmp_path / "people" / "Not A Person" / "cron"
    stray.mkdir(parents=True)
    (stray / "jobs.json").write_text('{"version": 1, "jobs": []}')
    (tmp_path / "people" / "carol").mkdir()  # a person without jobs
    assert [s.person for s in all_stores(tmp_path)] == [None, "alice"]


# --- hermes cron ------------------------------------------------------------------------------


@pytest.fixture
def cli(hermes_cli, hermes_home, monkeypatch):
    monkeypatch.setenv("HERMES_PLUGINS", "cron")
    return hermes_cli


def test_list_marks_each_job_with_its_person(cli, hermes_home):
    JobStore(hermes_home).create("every 1h", "owner task", name="owners")
    JobStore(hermes_home, "alice").create("every 2h", "alice task", name="alices")
    listed = cli("cron", "list")
    assert listed.exit_code == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.startswith("PERSON       ID ")
    assert [(r.split()[0], r.split()[-1]) for r in rows] == [
        ("owner", "owners"),
        ("alice", "alices"),
    ]
    as_json = json.loads(cli("cron", "list", "--json").stdout)
    assert [(j["person"], j["name"]) for j in as_json] == [(None, "owners"), ("alice", "alices")]
    only = cli("cron", "list", "--person", "alice")
    assert "alices" in only.stdout and "owners" not in only.stdout


def test_list_of_the_owner_alone_is_unmarked(cli, hermes_home):
    JobStore(hermes_home).create("every 1h", "owner task", name="owners")
    listed = cli("cron", "list")
    assert listed.stdout.splitlines()[0].startswith("ID ")
    assert "owner " not in listed.stdout


def test_commands_act_on_one_persons_jobs(cli, hermes_home):
    job = JobStore(hermes_home, "alice").create("every 1h", "alice task", name="alices")
    missing = cli("cron", "pause", job["id"])
    assert missing.exit_code == 1 and f"no job '{job['id']}'" in missing.stderr
    paused = cli("cron", "pause", "--person", "alice", job["id"])
    assert paused.exit_code == 0, paused.stderr
    assert JobStore(hermes_home, "alice").load()[0]["state"] == "paused"
    created = cli("cron", "create", "every 3h", "for bob", "--person", "bob", "--name", "bobs")
    assert created.exit_code == 0, created.stderr
    assert [j["name"] for j in JobStore(hermes_home, "bob").load()] == ["bobs"]
    assert JobStore(hermes_home).load() == []


@pytest.mark.parametrize("bad", ["../alice", "Alice", ""])
def test_an_invalid_person_is_a_one_line_error(cli, hermes_home, bad):
    result = cli("cron", "create", "every 1h", "x", "--person", bad)
    assert result.exit_code == 1
    assert "is not a person id" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (hermes_home / "people").exists()
