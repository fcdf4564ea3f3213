"""hermes-cron: schedules, the jobs file under two processes, ticks that run agents, the
cronjob tool, the CLI and the daemon, with real files, processes and the fake LLM server."""

from __future__ import annotations

import datetime as _dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hermes_cron.jobs import JobError, JobStore
from hermes_cron.schedule import ScheduleError, parse
from hermes_cron.scheduler import due_jobs, tick

from hermes_core.testing import (
    FakeLLM,
    HostRunner,
    ScriptedModel,
    load_plugin,
    make_agent,
    make_runner,
    tool_call,
)

NOW = _dt.datetime(2026, 3, 2, 8, 59, 30).astimezone().timestamp()  # a Monday


def _runner(model: ScriptedModel, home: Path) -> HostRunner:
    return make_runner(model=model, plugins=["cron", "todo", "clarify"], home=home, config={})


# --- schedules ---------------------------------------------------------------------------------


def test_schedules():
    cron = parse("0 9 * * 1-5", NOW)
    assert cron.kind == "cron"
    assert cron.next_after(NOW) == NOW + 30  # 09:00 the same Monday
    every = parse("every 30m", NOW)
    assert (every.kind, every.seconds, every.next_after(NOW)) == ("interval", 1800, NOW + 1800)
    once = parse("in 2h", NOW)
    assert once.kind == "once" and once.next_after(NOW) == pytest.approx(NOW + 7200)
    assert once.next_after(NOW + 7200) is None
    assert parse(once.text, 0).at == pytest.approx(once.at)  # stored absolute
    at = parse("at 2026-12-24T09:00", NOW)
    assert _dt.datetime.fromtimestamp(at.at).hour == 9


@pytest.mark.parametrize(
    "bad, says",
    [
        ("", "empty"),
        ("every 10s", "too often"),
        ("every soon", "not a duration"),
        ("at 2020-01-01T00:00", "in the past"),
        ("at tomorrow", "ISO"),
        ("61 * * * *", "not a"),
        ("* * * * * *", "not a"),
    ],
)
def test_bad_schedules_say_what_is_accepted(bad, says):
    with pytest.raises(ScheduleError, match=says):
        parse(bad, NOW)


# --- the jobs file ----------------------------------------------------------------------------


def test_job_operations_and_the_file(tmp_path):
    store = JobStore(tmp_path)
    job = store.create("every 1h", "check the logs", name="logs", toolsets=["terminal"])
    assert store.load()[0]["id"] == job["id"]
    assert json.loads((tmp_path / "cron" / "jobs.json").read_text())["version"] == 1
    assert store.pause("logs")["state"] == "paused"
    with pytest.raises(JobError, match="paused"):
        store.trigger(job["id"])
    assert store.resume(job["id"][:4])["state"] == "scheduled"
    changed = store.update(job["id"], schedule="0 9 * * *", deliver="telegram:42")
    assert changed["kind"] == "cron" and changed["deliver"] == "telegram:42"
    with pytest.raises(JobError, match="PLATFORM:CHAT_ID"):
        store.update(job["id"], deliver="telegram")
    with pytest.raises(JobError, match="no job"):
        store.remove("nope")
    store.remove("logs")
    assert store.load() == []
    assert not list((tmp_path / "cron").glob(".jobs-*"))  # no temporary file left behind


def test_a_broken_jobs_file_is_one_readable_error(tmp_path):
    (tmp_path / "cron").mkdir()
    (tmp_path / "cron" / "jobs.json").write_text("{not json")
    with pytest.raises(JobError, match="not valid JSON"):
        JobStore(tmp_path).load()


WRITER = textwrap.dedent("""
    import sys, time
    from hermes_cron.jobs import JobStore
    store, tag = JobStore(sys.argv[1]), sys.argv[2]
    while time.time() < float(sys.argv[3]):
        time.sleep(0.005)
    for n in range(40):
        store.create("every 1h", f"{tag} job {n}")
""")


def test_two_processes_changing_jobs_at_once_lose_nothing(tmp_path):
    start = time.time() + 1.0
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), tag, str(start)])
        for tag in ("a", "b")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    prompts = sorted(j["prompt"] for j in JobStore(tmp_path).load())
    assert prompts == sorted(f"{t} job {n}" for t in "ab" for n in range(40))


# --- running jobs -----------------------------------------------------------------------------


def test_a_missed_job_runs_once_in_its_own_cron_session(tmp_path):
    store = JobStore(tmp_path)
    job = store.create("*/5 * * * *", "summarise the news", name="news", now=NOW - 86400)
    model = ScriptedModel("Today: nothing happened.")
    runner = _runner(model, tmp_path)
    done = tick(store, runner, now=NOW)
    assert [(j["id"], o.status) for j, o in done] == [(job["id"], "completed")]
    assert len(model.requests) == 1  # a day of missed runs: one run
    assert tick(store, runner, now=NOW) == []
    stored = store.load()[0]
    assert stored["next_run_at"] > NOW and stored["runs"] == 1 and stored["running"] is None
    assert stored["last_status"] == "completed"
    session = runner.session_store.get_session(stored["last_session_id"])
    assert session.source == "cron"
    output = Path(stored["last_output"])
    assert output.parent == tmp_path / "cron" / "output" / job["id"]
    assert "Today: nothing happened." in output.read_text()
    # a job's agent cannot ask questions nor schedule more jobs
    assert "clarify" not in model.last_request.tool_names
    assert "cronjob" not in model.last_request.tool_names
    assert "scheduled job 'news'" in model.last_request.messages[0]["content"]


def test_one_time_job_completes_and_a_failure_is_recorded(tmp_path):
    store = JobStore(tmp_path)
    store.create("in 1m", "once please", now=NOW - 120)
    model = ScriptedModel()  # nothing scripted: the run fails
    tick(store, _runner(model, tmp_path), now=NOW)
    job = store.load()[0]
    assert job["state"] == "completed" and job["next_run_at"] is None
    assert job["last_status"] == "error" and job["last_error"]
    assert "status: error" in Path(job["last_output"]).read_text()


def test_a_chat_target_is_queued_for_the_gateway(tmp_path):
    store = JobStore(tmp_path)
    store.create("every 1h", "report", deliver="telegram:42", now=NOW - 3600)
    tick(store, _runner(ScriptedModel("the report"), tmp_path), now=NOW)
    (queued,) = (tmp_path / "cron" / "outbox").glob("*.json")
    message = json.loads(queued.read_text())
    assert (message["platform"], message["chat_id"], message["text"]) == (
        "telegram",
        "42",
        "the report",
    )


def test_a_job_claimed_by_a_live_process_is_not_run_twice(tmp_path):
    store = JobStore(tmp_path)
    store.create("every 1h", "x", now=NOW - 3600)
    assert len(due_jobs(store, NOW)) == 1
    with store.transaction() as jobs:  # due again, but still marked running by this process
        jobs[0]["next_run_at"] = NOW
    assert due_jobs(store, NOW) == []
    with store.transaction() as jobs:  # a claim of a dead process is stale
        jobs[0]["running"]["pid"] = 2**22 + 12345
    assert len(due_jobs(store, NOW)) == 1


# --- the cronjob tool ---------------------------------------------------------------------------


def test_the_agent_schedules_with_the_cronjob_tool(tmp_path):
    agent = make_agent(
        tool_call(
            "cronjob",
            {
                "action": "create",
                "schedule": "0 9 * * 1-5",
                "prompt": "Post the standup reminder",
                "name": "standup",
            },
        ),
        tool_call("cronjob", {"action": "create", "schedule": "every sometimes", "prompt": "x"}),
        tool_call("cronjob", {"action": "list"}),
        "Scheduled.",
        plugins=["cron"],
        home=tmp_path,
    )
    assert agent.chat("remind us of standup at 9 on weekdays") == "Scheduled."
    created, bad, listed = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert json.loads(created)["created"]["name"] == "standup"
    assert "not a duration" in bad
    assert [j["name"] for j in json.loads(listed)["jobs"]] == ["standup"]
    assert JobStore(tmp_path).load()[0]["prompt"] == "Post the standup reminder"


def test_loads_through_its_entry_point():
    record = load_plugin("cron")
    assert record.dist == "hermes-cron"


# --- the CLI and the daemon in real processes, against the fake LLM server --------------------


def _home(tmp_path: Path, server: FakeLLM) -> dict[str, str]:
    (tmp_path / "config.yaml").write_text(
        textwrap.dedent(f"""
        model:
          provider: custom
          base_url: {server.openai_base_url}
          default: m
          api_key: test
        toolsets: [todo]
        agent: {{api_max_retries: 0}}
    """)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(tmp_path)
    return env


def _hermes(*args: str, env: dict[str, str], **kwargs: Any) -> subprocess.CompletedProcess:
    code = "import sys; from hermes_core.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def test_two_ticking_processes_run_a_due_job_once(tmp_path):
    with FakeLLM() as server:
        server.add({"text": "ran", "delay": 0.5}, "ran again?")
        env = _home(tmp_path, server)
        JobStore(tmp_path).create("every 1h", "do it", now=time.time() - 3600)
        code = "import sys; from hermes_core.cli import main; sys.exit(main())"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, "cron", "tick"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        assert len(server.model_requests) == 1
        assert sorted(o[0].strip().split(":")[-1].strip() for o in outs) == [
            "completed",
            "no job is due",
        ]


def test_cli_run_and_errors(tmp_path):
    with FakeLLM() as server:
        server.add("the answer")
        env = _home(tmp_path, server)
        created = _hermes("cron", "create", "every 2h", "answer me", "--name", "q", env=env)
        assert created.returncode == 0, created.stderr
        ran = _hermes("cron", "run", "q", env=env)
        assert ran.returncode == 0 and ran.stdout.strip() == "the answer"
        listed = _hermes("cron", "list", env=env)
        assert "completed" in listed.stdout and " q" in listed.stdout
        bad = _hermes("cron", "create", "whenever", "x", env=env)
        assert bad.returncode == 1 and bad.stderr.count("\n") == 1
        assert "Traceback" not in bad.stderr
        missing = _hermes("cron", "pause", "nope", env=env)
        assert missing.returncode == 1 and "no job 'nope'" in missing.stderr


def test_daemon_runs_due_jobs_refuses_a_second_and_stops_on_sigterm(tmp_path):
    with FakeLLM() as server:
        server.add("from the daemon")
        env = _home(tmp_path, server)
        code = "import sys; from hermes_core.cli import main; sys.exit(main())"
        daemon = subprocess.Popen(
            [sys.executable, "-c", code, "cron", "daemon", "--interval", "0.2"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.time() + 30
            while not (tmp_path / "cron" / "daemon.json").exists() and time.time() < deadline:
                time.sleep(0.05)
            second = _hermes("cron", "daemon", env=env)
            assert second.returncode == 1 and "already runs" in second.stderr
            assert "daemon: running" in _hermes("cron", "status", env=env).stdout
            JobStore(tmp_path).create("every 1h", "hello", now=time.time() - 3600)
            while not list((tmp_path / "cron" / "output").glob("*/*.md")):
                assert time.time() < deadline, "the daemon did not run the due job"
                time.sleep(0.1)
        finally:
            daemon.send_signal(signal.SIGTERM)
            _, err = daemon.communicate(timeout=30)
        assert daemon.returncode == 0, err
        assert "stopped" in err
        (output,) = (tmp_path / "cron" / "output").glob("*/*.md")
        assert "from the daemon" in output.read_text()
        assert "daemon: not running" in _hermes("cron", "status", env=env).stdout


@pytest.mark.parametrize("text", ['{"pid": 7, "started_at": 1.5}', "[1, 2]", "3", "not json"])
def test_daemon_status_is_a_mapping_or_nothing(tmp_path: Path, text: str) -> None:
    from hermes_cron.daemon import read_status

    store = JobStore(tmp_path)
    store.dir.mkdir(parents=True, exist_ok=True)
    (store.dir / "daemon.json").write_text(text, encoding="utf-8")
    expected = {"pid": 7, "started_at": 1.5} if text.startswith("{") else None
    assert read_status(store) == expected
