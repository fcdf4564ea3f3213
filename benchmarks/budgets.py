"""The spend check made before every model call, with four caps set (session, person a day,
gateway user a day, scheduled job a day): the median over several runs of the time one check
takes (``SpendGuard.check``, what the loop calls before each request), and of a turn start
(reading what each cap has counted from the SQLite ledger, once per turn).

Usage: python benchmarks/budgets.py [--runs 7] [--checks 20000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hermes_core.budgets import SpendGuard
from hermes_core.models.pricing import PriceBook
from hermes_core.session_store import SQLiteSessionStore
from hermes_hookspecs import UsageRecord

CONFIG = {
    "budgets": {
        "session_usd": 5.0,
        "person_day_usd": 20.0,
        "gateway_user_day_usd": 10.0,
        "cron_job_day_usd": 3.0,
    }
}


def main() -> None:
    """Print the medians."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--checks", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteSessionStore(Path(tmp) / "sessions.db")
        now = time.time()
        for i in range(2000):
            store.record_usage(
                UsageRecord(
                    now - i,
                    f"s{i % 50}",
                    "alice",
                    "telegram",
                    "job1",
                    "gpt-4o",
                    "openai",
                    "",
                    1000,
                    100,
                    cost_usd=0.001,
                )
            )
        guard = SpendGuard(
            CONFIG,
            PriceBook({}),
            store,
            person="alice",
            source="cron",
            job="job1",
            say=lambda line: None,
        )
        checks, starts = [], []
        for _ in range(args.runs):
            began = time.perf_counter()
            guard.start_turn("s1")
            starts.append(time.perf_counter() - began)
            began = time.perf_counter()
            for _ in range(args.checks):
                guard.check("gpt-4o", 0.01, 4000)
            checks.append((time.perf_counter() - began) / args.checks)
        store.close()
    print(
        f"budget check per call: {statistics.median(checks) * 1e3:.5f} ms (median of "
        f"{args.runs} runs of {args.checks} checks, 4 caps)"
    )
    print(
        f"turn start (4 ledger reads over 2000 records): "
        f"{statistics.median(starts) * 1e3:.3f} ms (median)"
    )


if __name__ == "__main__":
    main()
