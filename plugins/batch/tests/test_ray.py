"""Rows as tasks of a real local Ray cluster (``ray.init(num_cpus=2)``): every row completed
exactly once although the Ray worker process running a row is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_batch.dataset import dataset_hash, read_rows
from hermes_batch.schema import Counts
from hermes_batch.table_sqlite import SQLiteRunTable

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A Ray of two CPUs on this machine for the module's tests."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])


def test_rows_as_ray_tasks_through_a_killed_ray_worker(tmp_path, fake_model, kit, local_ray):
    from hermes_batch.ray_executor import coordinate_ray

    folder = tmp_path / "home"
    env = kit.make_home(folder, fake_model)
    rows = [{"prompt": f"row {n}"} for n in range(6)]
    rows += [
        {"prompt": "row 1"},
        {"id": "slow", "prompt": "SLOW one"},
        {"id": "bad", "prompt": "FAIL x"},
    ]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    table = SQLiteRunTable(folder / "batch.db")
    digest = dataset_hash(dataset)
    settings = {"lease_seconds": 5, "max_attempts": 1, "seed": 1, "dataset_dir": str(tmp_path)}
    table.create_run("ray", str(dataset), digest, settings)
    table.add_rows("ray", read_rows(dataset, digest))
    table.set_run("ray", state="running")

    done: list[Counts] = []
    log = folder / "batch" / "ray" / "workers.log"
    worker = threading.Thread(
        target=lambda: done.append(
            coordinate_ray(SQLiteRunTable(folder / "batch.db"), "ray", env, log, 2)
        )
    )
    worker.start()
    deadline = time.monotonic() + 60
    victim = None
    while victim is None and time.monotonic() < deadline:
        running = {r.key: r for r in table.rows("ray", ["running"])}
        slow = running.get("slow")
        if slow is not None and slow.worker and not slow.worker.startswith("ray:"):
            victim = slow
        time.sleep(0.05)
    assert victim is not None, "the slow row never ran"
    served_by = int(str(victim.worker).rpartition(":")[2])
    os.kill(_parent(served_by), signal.SIGKILL)  # the Ray worker process of the row's task
    worker.join(timeout=90)
    assert not worker.is_alive() and done

    counts = table.counts("ray")
    assert (counts["completed"], counts["failed"], counts.total) == (8, 1, 9)
    outcomes = [a["outcome"] for a in table.attempts("ray", "slow")]
    assert outcomes == ["lost", "completed"]
    for record in table.rows("ray"):
        tried = [a["outcome"] for a in table.attempts("ray", record.key)]
        assert tried.count("completed") == (record.state == "completed")
        assert record.output is not None and record.output["id"] == record.key


def test_the_cli_joins_a_running_ray_cluster(tmp_path, fake_model, kit, local_ray):
    folder = tmp_path / "home"
    env = kit.make_home(folder, fake_model)
    env.update({k: v for k, v in os.environ.items() if k.startswith("RAY_")})  # its auth mode
    address = local_ray.get_runtime_context().gcs_address
    dataset = kit.write_dataset(tmp_path / "d.jsonl", [{"prompt": "a"}, {"prompt": "a"}])
    args = ("--name", "c", "--executor", "ray", "--ray-address", address, "--workers", "2")
    ran = kit.hermes("batch", "run", str(dataset), *args, "--json", env=env)
    assert ran.returncode == 0, ran.stderr
    assert '"completed": 2' in ran.stdout
    workers = {r.worker for r in SQLiteRunTable(folder / "batch.db").rows("c")}
    assert all(w and not w.startswith("ray:") for w in workers)  # the slots' processes ran them
