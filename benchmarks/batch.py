"""``hermes batch``: medians over several runs of

- throughput with 1, 2 and 4 local workers, the fake model answering after a fixed latency
  (default 200 ms): rows per second for rows of one tool call (two model calls each);
- hermes's own CPU per row (coordinator and workers, the model's time excluded: the fake
  server runs in this process): the CPU of a run of 2N rows minus that of N rows, over N, so
  that the processes' start-up is not counted;
- resume of a 10,000-row run with 9,990 rows completed: seconds from starting ``hermes batch
  resume`` to the first new row's first model call;
- the coordinator's peak memory (RSS) reading in 1,000 and 100,000 rows (it streams the
  dataset: it should not grow with the rows).

Usage: python benchmarks/batch.py [--runs 3] [--rows 20] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from hermes_batch.dataset import dataset_hash, read_rows
from hermes_batch.table_sqlite import SQLiteRunTable

from hermes_core.testing import FakeLLM

HERMES = "import sys; from hermes_core.cli import main; sys.exit(main())"
MEASURE = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
"""


def answer(request: Any, latency: float) -> dict[str, Any]:
    """One todo call, then an answer, each after ``latency`` seconds."""
    messages = (request.json or {}).get("messages") or []
    usage = {"input_tokens": 500, "output_tokens": 50}
    if messages and messages[-1].get("role") == "tool":
        return {"text": "done", "usage": usage, "delay": latency}
    todo = {"todos": [{"id": "1", "content": "step", "status": "pending"}]}
    call = {"name": "todo", "arguments": todo, "id": "call_1"}
    return {"calls": [call], "usage": usage, "delay": latency}


def make_home(folder: Path, server: FakeLLM) -> dict[str, str]:
    """A home on ``server``; its environment."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(
        textwrap.dedent(f"""
        model: {{provider: custom, base_url: {server.openai_base_url}, default: m, api_key: x}}
        toolsets: [todo]
        agent: {{api_max_retries: 0}}
        """)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(folder)
    return env


def dataset(folder: Path, rows: int) -> Path:
    """A dataset of ``rows`` prompts."""
    path = folder / f"rows-{rows}.jsonl"
    with path.open("w") as out:
        for n in range(rows):
            out.write(json.dumps({"prompt": f"plan step {n}"}) + "\n")
    return path


def measured(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Run ``hermes ARGS``: wall seconds, CPU seconds of it and its workers, peak RSS (KiB)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-c", HERMES, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    cpu, rss = done.stdout.split()
    return wall, float(cpu), int(rss)


def throughput(work: Path, server: FakeLLM, rows: int, workers: int, runs: int) -> dict[str, float]:
    """Rows per second and CPU per row of ``workers`` local workers."""
    rates, per_row = [], []
    for run in range(runs):
        home = work / "home"
        env = make_home(home, server)
        small = [str(dataset(work, rows)), "--workers", str(workers), "--json"]
        wall, cpu_small, _ = measured(
            ["batch", "run", *small[:1], "--name", f"a{run}", *small[1:]], env
        )
        big = [str(dataset(work, 2 * rows)), "--workers", str(workers), "--json"]
        wall_big, cpu_big, _ = measured(
            ["batch", "run", big[0], "--name", f"b{run}", *big[1:]], env
        )
        rates.append(2 * rows / wall_big)
        per_row.append((cpu_big - cpu_small) / rows)
    return {
        "rows_per_s": statistics.median(rates),
        "cpu_ms_per_row": 1000 * statistics.median(per_row),
    }


def resume_start(work: Path, server: FakeLLM, runs: int) -> float:
    """Seconds from starting ``resume`` of a 10,000-row run with 9,990 rows completed to the
    first model call of a new row."""
    times = []
    for _ in range(runs):
        home = work / "home"
        env = make_home(home, server)
        path = dataset(work, 10_000)
        digest = dataset_hash(path)
        table = SQLiteRunTable(home / "batch.db")
        table.create_run("r", str(path), digest, {"lease_seconds": 60, "dataset_dir": str(work)})
        table.add_rows("r", read_rows(path, digest))
        with table.transaction() as cur:
            cur.execute(
                "UPDATE batch_rows SET state = 'completed', attempts = 1, output = '{}' "
                "WHERE run = 'r' AND line <= 9990"
            )
        table.set_run("r", state="stopped", total_rows=10_000)
        table.close()
        before = len(server.requests)
        started = time.time()
        proc = subprocess.Popen(
            [sys.executable, "-c", HERMES, "batch", "resume", "r", "--workers", "2"],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        while len(server.requests) == before:
            time.sleep(0.005)
        times.append(server.requests[before].received_at - started)
        proc.wait()
    return statistics.median(times)


def loading_memory(work: Path, server: FakeLLM, rows: int) -> float:
    """Peak RSS (MiB) of a coordinator reading in ``rows`` rows (budget 0: none runs)."""
    env = make_home(work / "home", server)
    path = dataset(work, rows)
    _, _, rss = measured(["batch", "run", str(path), "--name", "m", "--budget-usd", "0"], env)
    return rss / 1024


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hermes-batch-bench-"))
    try:
        with FakeLLM() as server:
            server.add(*[lambda r: answer(r, args.latency)] * 200_000)
            print(f"fake model latency {args.latency * 1000:.0f} ms; medians of {args.runs} runs")
            for workers in (1, 2, 4):
                found = throughput(work, server, args.rows, workers, args.runs)
                print(
                    f"{workers} worker(s): {found['rows_per_s']:.2f} rows/s, "
                    f"{found['cpu_ms_per_row']:.1f} ms CPU per row (one tool call)"
                )
            first = resume_start(work, server, args.runs)
            print(f"resume at 9,990/10,000: {first:.2f} s to the first new row")
            for rows in (1_000, 100_000):
                peak = loading_memory(work, server, rows)
                print(f"coordinator peak RSS reading {rows:,} rows: {peak:.0f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
