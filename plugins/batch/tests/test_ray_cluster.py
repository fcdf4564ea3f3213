"""The Ray executor on a cluster of two nodes started with the ``ray`` command on this machine
(``ray start --head`` and ``ray start --address``, separate processes, loopback addresses,
a temporary folder of their own): rows land on both nodes, the raylet of one node is killed
with SIGKILL mid-run, and every row is still completed exactly once."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_batch.table_sqlite import SQLiteRunTable

pytest.importorskip("ray")

HEAD_IP, NODE_IP = "127.0.0.1", "127.0.0.2"
FAST_FAILURE = {
    # the cluster declares a silent node dead after about 1.5 s (by default: about 15 s)
    "RAY_health_check_initial_delay_ms": "500",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "3",
    "RAY_USAGE_STATS_ENABLED": "0",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _processes_under(folder: str) -> list[int]:
    """Processes whose command line names ``folder`` (every process of the test's cluster
    does: its session lives there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if folder in command:
            found.append(int(entry.name))
    return found


def _stop(folder: str) -> None:
    """End every process of the cluster in ``folder``: TERM, then KILL what is left."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 2.0)):
        for pid in _processes_under(folder):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while _processes_under(folder) and time.monotonic() < deadline:
            time.sleep(0.1)


def _raylet(folder: str, port: int) -> int:
    """The pid of the raylet listening on node manager port ``port``."""
    for pid in _processes_under(folder):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command[0].endswith(b"raylet") and f"--node_manager_port={port}".encode() in command:
            return pid
    raise AssertionError(f"no raylet on port {port}")


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])


def _node_of(pid: int, raylets: dict[int, str]) -> str | None:
    """The node (``head`` or ``node``) whose raylet ``pid`` descends from."""
    while pid > 1:
        if pid in raylets:
            return raylets[pid]
        try:
            pid = _parent(pid)
        except (OSError, ValueError, IndexError):
            return None
    return None


@pytest.fixture
def two_nodes() -> Iterator[dict[str, Any]]:
    """A Ray cluster of two nodes of 2 CPUs each, on 127.0.0.1 and 127.0.0.2, in a temporary
    folder (short: Ray's socket paths must fit in 107 bytes); stopped whatever happens."""
    ray_cli = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
    folder = tempfile.mkdtemp(prefix="hb-ray-", dir="/tmp")
    # the cluster's own token (Ray's token authentication), for its nodes and the coordinator
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {**os.environ, **FAST_FAILURE, **auth}
    port, head_nm, node_nm = _free_port(), _free_port(), _free_port()
    common = ["--num-cpus", "2", "--disable-usage-stats"]
    try:
        for ip, manager, extra in (
            (
                HEAD_IP,
                head_nm,
                ["--head", "--port", str(port), "--temp-dir", folder, "--include-dashboard", "0"],
            ),
            (NODE_IP, node_nm, ["--address", f"{HEAD_IP}:{port}"]),
        ):
            ports = ["--node-manager-port", str(manager)]
            for option in ("--dashboard-agent-listen-port", "--runtime-env-agent-port"):
                ports += [option, str(_free_port())]
            started = subprocess.run(
                [*ray_cli, "start", *extra, "--node-ip-address", ip, *common, *ports],
                env=env,
                capture_output=True,
                text=True,
                timeout=90,
            )
            assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
        raylets = {_raylet(folder, head_nm): "head", _raylet(folder, node_nm): "node"}
        yield {"address": f"{HEAD_IP}:{port}", "raylets": raylets, "env": auth}
    finally:
        _stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_two_nodes_and_a_raylet_killed_mid_run(tmp_path, fake_model, kit, two_nodes):
    folder = tmp_path / "home"
    env = {**kit.make_home(folder, fake_model), **two_nodes["env"]}
    # two long rows, far enough apart that each slot takes one (the other slot is busy with
    # the first): the second node's is running when its raylet is killed
    rows = [
        {"id": f"r{n}", "prompt": f"LONG row {n}" if n in (5, 8) else f"row {n}"} for n in range(12)
    ]
    rows.append({"id": "twin", "prompt": "row 0"})  # the same prompt: another row
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    args = ("--name", "two", "--executor", "ray", "--ray-address", two_nodes["address"])
    coordinator = kit.hermes_process(
        "batch", "run", str(dataset), *args, "--workers", "2", "--lease-seconds", "30", env=env
    )
    raylets: dict[int, str] = two_nodes["raylets"]
    node_raylet = next(pid for pid, name in raylets.items() if name == "node")
    nodes: dict[str, str] = {}  # worker (host:pid) -> the node it ran on
    killed_row = None
    table = None
    try:
        deadline = time.monotonic() + 90
        while coordinator.poll() is None and time.monotonic() < deadline:
            if table is None:
                if (folder / "batch.db").exists():
                    table = SQLiteRunTable(folder / "batch.db")
                time.sleep(0.1)
                continue
            records = list(table.rows("two", ["running", "completed"]))
            for record in records:
                worker = record.worker or ""
                if worker and worker not in nodes and not worker.startswith("ray:"):
                    node = _node_of(int(worker.rpartition(":")[2]), raylets)
                    if node is not None:
                        nodes[worker] = node
            there = [r for r in records if nodes.get(r.worker or "") == "node"]
            running = [r for r in there if r.state == "running" and "LONG" in r.data["prompt"]]
            if killed_row is None and running and any(r.state == "completed" for r in there):
                killed_row = running[0].key
                os.kill(node_raylet, signal.SIGKILL)  # the second node is gone
            time.sleep(0.05)
        out, err = coordinator.communicate(timeout=5)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
            coordinator.wait()
    assert killed_row is not None, f"no long row ran on the second node: {nodes}; {err}"
    assert coordinator.returncode == 0, err
    assert "13 completed" in out, out
    table = SQLiteRunTable(folder / "batch.db")
    records = list(table.rows("two"))
    assert [r.state for r in records] == ["completed"] * 13
    landed = {nodes.get(r.worker or "") for r in records}
    assert {"head", "node"} <= landed  # rows completed on both nodes
    for record in records:
        outcomes = [a["outcome"] for a in table.attempts("two", record.key)]
        assert outcomes.count("completed") == 1, (record.key, outcomes)
        assert record.output is not None and record.output["id"] == record.key
    lost = [a["outcome"] for a in table.attempts("two", killed_row)]
    assert lost == ["lost", "completed"]  # the killed node's row: lost once, then run again
    assert nodes[str(records[[r.key for r in records].index(killed_row)].worker)] == "head"
