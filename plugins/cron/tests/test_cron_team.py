"""Scheduled jobs on a team's machines: each machine has its own copy of the jobs, and the
claims in the shared PostgreSQL database let exactly one process run each due time, however many
tick at once; a run missed during downtime runs once; a claim that cannot be decided runs
nothing. Needs the cluster ``bash .ci/services.sh start postgres`` starts (skipped without it,
failed under CI)."""

from __future__ import annotations

import datetime as _dt
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hermes_cron.claims import PostgresRunClaims, run_claims
from hermes_cron.jobs import JobStore
from hermes_cron.scheduler import tick

from hermes_core.testing import ScriptedModel, make_runner
from hermes_core.testing.services import fresh_database

NOW = _dt.datetime(2026, 3, 2, 8, 59, 30).astimezone().timestamp()  # a Monday


@pytest.fixture
def database(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url, "hermes_cron") as url:
        yield url


def _machines(tmp_path: Path, schedule: str, count: int = 3) -> list[JobStore]:
    """``count`` homes holding the same job (as deployed to each machine)."""
    first = JobStore(tmp_path / "m0")
    first.create(schedule, "the daily report", name="report", now=NOW - 86400 * 3)
    stores = [first]
    for n in range(1, count):
        shutil.copytree(tmp_path / "m0" / "cron", tmp_path / f"m{n}" / "cron")
        stores.append(JobStore(tmp_path / f"m{n}"))
    return stores


def _tick_all(stores: list[JobStore], url: str, now: float, skew: float = 0.0) -> int:
    """Every machine ticks at once (machine n ``n * skew`` seconds late); how many runs."""
    runs: list[int] = []

    def one(n: int, store: JobStore) -> None:
        model = ScriptedModel(fn=lambda request: "done")
        runner = make_runner(model=model, plugins=["cron"], home=store.home, config={})
        done = tick(store, runner, now=now + n * skew, claims=PostgresRunClaims(url))
        runs.append(len(done))

    threads = [threading.Thread(target=one, args=(n, s)) for n, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return sum(runs)


def test_three_machines_run_each_due_time_once(tmp_path, database):
    stores = _machines(tmp_path, "0 9 * * *")
    # three days missed while every machine was down: one run, by one of them
    assert _tick_all(stores, database, NOW + 60) == 1
    assert _tick_all(stores, database, NOW + 120) == 0
    assert _tick_all(stores, database, NOW + 86400 + 60) == 1  # the next day's
    assert sum(s.load()[0]["runs"] for s in stores) == 2
    assert {s.load()[0]["next_run_at"] for s in stores} == {stores[0].load()[0]["next_run_at"]}


def test_an_interval_job_ticked_at_different_moments_runs_once(tmp_path, database):
    stores = _machines(tmp_path, "every 30m")
    assert _tick_all(stores, database, NOW, skew=10) == 1
    # each machine counted the next run from its own tick: 30 minutes later, one run again
    assert _tick_all(stores, database, NOW + 1800 + 25, skew=10) == 1


def test_an_undecidable_claim_runs_nothing_and_waits(tmp_path):
    store = _machines(tmp_path, "0 9 * * *", count=1)[0]
    due = store.load()[0]["next_run_at"]
    model = ScriptedModel(fn=lambda request: "done")
    runner = make_runner(model=model, plugins=["cron"], home=store.home, config={})
    claims = PostgresRunClaims("postgresql://nobody@127.0.0.1:9/none")
    assert tick(store, runner, now=NOW, claims=claims) == []
    assert model.requests == [] and store.load()[0]["next_run_at"] == due


def test_claims_only_with_a_postgresql_store():
    assert run_claims({}) is None
    assert run_claims({"store": {"url": "sqlite:/tmp/s.db"}}) is None
    claims = run_claims({"store": {"url": "postgresql://h/db"}})
    assert isinstance(claims, PostgresRunClaims) and claims.url == "postgresql://h/db"
