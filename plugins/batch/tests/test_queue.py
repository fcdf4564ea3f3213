"""Rows as jobs of the team's work queue (``--executor queue``) on a real PostgreSQL: two
``hermes batch queue-worker`` processes take the jobs, one is killed with SIGKILL while it runs
a row, and every row is still completed exactly once (the failing one recorded failed)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from typing import Any

import psycopg
import pytest

pytest.importorskip("procrastinate")
pytest.importorskip("hermes_queue_procrastinate")


def _stop(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_rows_as_queue_jobs_through_a_killed_worker(
    tmp_path, fake_model, postgres_database, kit: Any
):
    env = kit.make_home(tmp_path / "home", fake_model, f"store: {{url: '{postgres_database}'}}\n")
    rows = [
        {"id": f"r{n}", "prompt": f"SLOW row {n}" if n % 3 == 1 else f"row {n}"} for n in range(9)
    ]
    rows += [{"id": "twin", "prompt": "row 0"}, {"id": "bad", "prompt": "FAIL x"}]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    workers = [kit.hermes_process("batch", "queue-worker", env=env) for _ in range(2)]
    args = ("--name", "q", "--executor", "queue", "--workers", "2", "--max-attempts", "1")
    coordinator = kit.hermes_process(
        "batch", "run", str(dataset), *args, "--lease-seconds", "30", env=env
    )
    killed: tuple[str, int] | None = None
    try:
        with psycopg.connect(postgres_database, autocommit=True) as conn:
            deadline = time.monotonic() + 60
            while killed is None and time.monotonic() < deadline:
                assert coordinator.poll() is None, coordinator.communicate()
                found = None
                with contextlib.suppress(psycopg.errors.UndefinedTable):  # not made yet
                    found = conn.execute(
                        "SELECT key, worker FROM batch_rows WHERE run = 'q' AND state = 'running'"
                        " AND data LIKE '%SLOW%' AND worker NOT LIKE 'queue:%' LIMIT 1"
                    ).fetchone()
                if found is not None:
                    pid = int(str(found[1]).rpartition(":")[2])
                    assert pid in {w.pid for w in workers}
                    os.kill(pid, signal.SIGKILL)  # the worker dies in the middle of the row
                    killed = (str(found[0]), pid)
                time.sleep(0.05)
        assert killed is not None, "no worker ran a slow row"
        out, err = coordinator.communicate(timeout=90)
    finally:
        _stop([coordinator, *workers])
    assert coordinator.returncode == 0, err
    assert "10 completed, 1 failed" in out, out
    with psycopg.connect(postgres_database) as conn:
        states = dict(conn.execute("SELECT key, state FROM batch_rows WHERE run = 'q'").fetchall())
        attempts = conn.execute(
            "SELECT key, outcome FROM batch_attempts WHERE run = 'q' ORDER BY key, attempt"
        ).fetchall()
        ran_by = {
            str(w).rpartition(":")[2]
            for (w,) in conn.execute("SELECT worker FROM batch_rows WHERE run = 'q'").fetchall()
        }
        jobs = conn.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE queue_name = 'hermes-batch'"
        ).fetchone()
    assert states == {**{r["id"]: "completed" for r in rows}, "bad": "failed"}
    outcomes: dict[str, list[str]] = {}
    for key, outcome in attempts:
        outcomes.setdefault(key, []).append(outcome)
    assert outcomes[killed[0]] == ["lost", "completed"]  # lost with its worker, then run again
    assert all(o.count("completed") == (k != "bad") for k, o in outcomes.items())
    assert ran_by <= {str(w.pid) for w in workers}  # the queue's workers ran every row
    assert jobs is not None and jobs[0] >= len(rows) + 1  # each attempt a job of the queue


def test_the_queue_executor_needs_the_run_table_in_postgresql(tmp_path, fake_model, kit: Any):
    env = kit.make_home(tmp_path / "home", fake_model)
    dataset = kit.write_dataset(tmp_path / "d.jsonl", [{"prompt": "a"}])
    ran = kit.hermes("batch", "run", str(dataset), "--name", "n", "--executor", "queue", env=env)
    assert ran.returncode != 0 and "Traceback" not in ran.stderr
    assert "needs the run table in PostgreSQL" in ran.stderr and "store.url" in ran.stderr
    listed = kit.hermes("batch", "list", "--json", env=env)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []  # refused before made
