"""A team's gateway on the procrastinate queue: throughput with 1 and 2 workers, the queue's
pickup delay, how fast an interrupt reaches the worker running a turn, and hermes's CPU per
request.

Real processes on this machine: one front end (``hermes gateway run --role front``) and N
workers (``--role worker``), each with a home of its own, sharing a fresh PostgreSQL database
(the cluster ``bash .ci/services.sh start postgres`` starts) for the sessions and the queue. The
model is the test kit's fake server answering after 200 ms. Each run starts ``CONVERSATIONS``
conversations one at a time (the queue's pickup when idle), then sends ``TURNS`` turns over
them at once (by default one per conversation: the pickup under load is then the queue's, not
a wait behind the session's previous turn); every figure is the median of ``RUNS`` runs.

    python benchmarks/team.py [--runs 3] [--conversations 40] [--turns 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "plugins" / "queue_procrastinate" / "tests"))

from team_kit import Member, ask, team_config  # noqa: E402

from hermes_core.testing import FakeLLM  # noqa: E402

LATENCY = 0.2


def _answer(request: Any) -> dict[str, Any]:
    """The fake model: 200 ms per answer, 5 s for the turn the interrupt measure stops."""
    last = request.json["messages"][-1].get("content") or ""
    return {"text": "ok", "delay": 5.0 if "long" in str(last) else LATENCY}


def _postgres_url() -> str:
    from hermes_core.testing.services import service_variables

    url = service_variables().get("HERMES_TEST_POSTGRES_URL")
    if not url:
        sys.exit("no PostgreSQL: start one with bash .ci/services.sh start postgres")
    return url


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Pickups:
    """Reads each turn's ``started`` event as it comes (the front end forgets the events once
    the turn is answered): the delay between queueing and a worker starting it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.delays: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        seen: set[str] = set()
        with (
            psycopg.connect(self.url, autocommit=True) as conn,
            psycopg.connect(self.url, autocommit=True) as reader,
        ):
            conn.execute("LISTEN hermes_turn_events")
            while not self._stop.is_set():
                for note in conn.notifies(timeout=0.2):
                    if note.payload in seen:
                        continue
                    row = reader.execute(
                        "SELECT data FROM hermes_turn_events WHERE turn_id = %s AND "
                        "kind = 'started' LIMIT 1",
                        (note.payload,),
                    ).fetchone()
                    if row is not None and row[0].get("pickup") is not None:
                        seen.add(note.payload)
                        self.delays.append(float(row[0]["pickup"]))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _database(base: str) -> str:
    name = f"hermes_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.rsplit("/", 1)[0] + "/" + name


def _drop(base: str, url: str) -> None:
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def one_run(base: str, workers: int, conversations: int, turns: int) -> dict[str, float]:
    """One team of ``workers`` workers answering ``turns`` turns; its figures."""
    database = _database(base)
    folder = Path(tempfile.mkdtemp(prefix="hermes-team-bench-"))
    try:
        with FakeLLM() as server:
            server.add(*([_answer] * (turns + 2 * conversations + 20)))
            config = team_config(database, server.openai_base_url)
            ran = [Member(folder / f"w{n}", config, "worker") for n in range(workers)]
            front = Member(folder / "front", config, "front")
            members = [*ran, front]
            try:
                for member in members:
                    member.ready()
                paced = Pickups(database)
                sessions = []
                for _ in range(conversations):  # one at a time: the queue's own delay
                    sessions.append(ask(front.url, "hello")[2])
                    time.sleep(0.05)
                time.sleep(0.3)
                paced.stop()
                pickups = Pickups(database)
                cpu_before = sum(_cpu_seconds(m.process.pid) for m in members)
                front_before = _cpu_seconds(front.process.pid)
                started = time.monotonic()
                with ThreadPoolExecutor(conversations) as pool:
                    done = list(
                        pool.map(
                            lambda n: ask(front.url, f"turn {n}", sessions[n % conversations]),
                            range(turns),
                        )
                    )
                took = time.monotonic() - started
                cpu = sum(_cpu_seconds(m.process.pid) for m in members) - cpu_before
                front_cpu = _cpu_seconds(front.process.pid) - front_before
                pickups.stop()
                assert all(status == 200 for status, _, _ in done), done[:3]
                interrupt = _interrupt_latency(front, server)
            finally:
                for member in members:
                    member.stop()
    finally:
        _drop(base, database)
    delays = sorted(pickups.delays) or [float("nan")]
    alone = sorted(paced.delays) or [float("nan")]
    return {
        "throughput": turns / took,
        "paced_p50_ms": 1000 * alone[len(alone) // 2],
        "paced_p95_ms": 1000 * alone[min(len(alone) - 1, int(len(alone) * 0.95))],
        "pickup_p50_ms": 1000 * delays[len(delays) // 2],
        "pickup_p95_ms": 1000 * delays[min(len(delays) - 1, int(len(delays) * 0.95))],
        "cpu_ms_per_request": 1000 * cpu / turns,
        "front_cpu_ms_per_request": 1000 * front_cpu / turns,
        "interrupt_ms": 1000 * interrupt,
    }


def _interrupt_latency(front: Member, server: FakeLLM) -> float:
    """Seconds from an abort of a running turn (what ``/stop`` and ``busy: interrupt`` ask the
    queue for) to its client's answer, the turn's worker having stopped it."""
    _, _, session = ask(front.url, "start")
    results: dict[str, Any] = {}

    def slow() -> None:
        results["slow"] = ask(front.url, "long", session)
        results["ended"] = time.monotonic()

    asker = threading.Thread(target=slow)
    count = len(server.model_requests)
    asker.start()
    while len(server.model_requests) == count:
        time.sleep(0.01)
    time.sleep(0.2)
    sent = time.monotonic()
    with psycopg.connect(_front_database(front), autocommit=True) as conn:
        job = conn.execute(
            "SELECT id FROM procrastinate_jobs WHERE status = 'doing' ORDER BY id DESC LIMIT 1"
        ).fetchone()
        assert job is not None
        conn.execute("SELECT procrastinate_cancel_job_v1(%s::bigint, true, false)", (job[0],))
    asker.join(30)
    return float(results["ended"] - sent)


def _front_database(front: Member) -> str:
    return str(json.loads((front.home / "config.yaml").read_text())["gateway"]["queue"]["url"])


def main() -> None:
    """Print the medians."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=40)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    base = _postgres_url()
    results: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for _ in range(args.runs):
        for workers in (1, 2):
            results[workers].append(one_run(base, workers, args.conversations, args.turns))
    print(
        f"team gateway, fake model {int(LATENCY * 1000)} ms, {args.turns} turns over "
        f"{args.conversations} conversations, medians of {args.runs} runs"
    )
    for workers, runs in results.items():
        line = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"  {workers} worker(s): {line['throughput']:.1f} turns/s; pickup one at a time p50 "
            f"{line['paced_p50_ms']:.1f} ms p95 {line['paced_p95_ms']:.1f} ms, under load p50 "
            f"{line['pickup_p50_ms']:.1f} ms p95 {line['pickup_p95_ms']:.1f} ms; interrupt "
            f"{line['interrupt_ms']:.0f} ms; hermes CPU {line['cpu_ms_per_request']:.1f} ms/turn "
            f"(front end {line['front_cpu_ms_per_request']:.1f})"
        )


if __name__ == "__main__":
    main()
