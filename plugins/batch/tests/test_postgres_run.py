"""A batch run whose home keeps its sessions in PostgreSQL (``store.url``): the run table is
there too, shared by every machine that runs the run's rows."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import psycopg


def test_a_run_on_postgresql(tmp_path, fake_model, postgres_database, kit: Any):
    env = kit.make_home(tmp_path / "home", fake_model, f"store: {{url: '{postgres_database}'}}\n")
    rows = [{"prompt": "a"}, {"prompt": "a"}, {"id": "t", "prompt": "TOOL x"}, {"prompt": "b"}]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    ran = kit.hermes("batch", "run", str(dataset), "--name", "pg", "--workers", "2", env=env)
    assert ran.returncode == 0, ran.stderr
    assert "4 completed" in ran.stdout
    assert not (tmp_path / "home" / "batch.db").exists()  # no SQLite table beside
    with psycopg.connect(postgres_database) as conn:
        states = conn.execute(
            "SELECT state, count(*) FROM batch_rows WHERE run = 'pg' GROUP BY state"
        ).fetchall()
        sessions = conn.execute(
            "SELECT count(*) FROM sessions WHERE id IN (SELECT session_id FROM batch_rows)"
        ).fetchone()
    assert states == [("completed", 4)]
    assert sessions == (4,)  # each row's session is in the shared session store
    status = kit.hermes("batch", "status", "pg", "--json", env=env)
    assert json.loads(status.stdout)["completed"] == 4
    assert "@" not in json.loads(status.stdout)["run"]
    shown = kit.hermes("batch", "status", "pg", env=env).stdout
    password = urlsplit(postgres_database).password
    assert password and password not in shown  # the URL's secret is never shown
