"""A scheduled job's run stopped by a spend cap is recorded as such, with the cap's message,
and its spending is kept per job."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from hermes_cron.jobs import JobStore
from hermes_cron.scheduler import tick

from hermes_core.testing import ScriptedModel, make_runner

NOW = _dt.datetime(2026, 3, 2, 8, 59, 30).astimezone().timestamp()


def test_a_run_past_the_jobs_cap_is_recorded_as_stopped_by_budget(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = store.create("*/5 * * * *", "summarise the news", name="news", now=NOW - 600)
    model = ScriptedModel("Today: nothing happened.", "Again nothing.")
    config = {
        "pricing": {"scripted": {"input": 1000.0, "output": 1000.0}},
        "budgets": {"cron_jobs": {job["id"]: {"day_usd": 0.0001}}, "reserve_output_tokens": 1},
    }
    runner = make_runner(model=model, plugins=["cron"], home=tmp_path, config=config)
    done = tick(store, runner, now=NOW)
    assert [o.status for _, o in done] == ["budget_exhausted"]
    assert model.requests == []  # stopped before the call
    stored = store.load()[0]
    assert stored["last_status"] == "budget_exhausted"
    assert f"budgets.cron_jobs.{job['id']}.day_usd" in stored["last_error"]
    assert "hermes config set" in Path(stored["last_output"]).read_text()


def test_a_jobs_calls_are_recorded_under_its_id(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = store.create("*/5 * * * *", "say hi", name="hi", now=NOW - 600)
    runner = make_runner(model=ScriptedModel("hi"), plugins=["cron"], home=tmp_path, config={})
    tick(store, runner, now=NOW)
    rows = runner.session_store.usage_rows(0.0, "job")
    assert [(r["group"], r["calls"]) for r in rows] == [(job["id"], 1)]
