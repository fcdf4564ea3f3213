"""Credential pools: the median over several runs of the time to choose the key of a request
and attach it (``KeyRouter.take`` plus setting ``ModelRequest.key_id``, what every pooled
request pays), and of one shared state update (a compare-and-swap of a key's row in SQLite,
``KeyPool.used``).

Usage: python benchmarks/credentials.py [--runs 7] [--leases 20000] [--updates 500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from hermes_core.credentials import KeyRouter, make_pool
from hermes_core.session_store import SQLiteSessionStore
from hermes_hookspecs import ModelRequest, ProviderSettings


def main() -> None:
    """Print the medians."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--leases", type=int, default=20000)
    parser.add_argument("--updates", type=int, default=500)
    args = parser.parse_args()
    names = [f"BENCH_KEY_{i}" for i in range(5)]
    for name in names:
        os.environ[name] = f"sk-{name.lower()}"
    config = {
        "providers": {"bench": {"strategy": "round_robin", "keys": [{"env": n} for n in names]}}
    }
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteSessionStore(Path(tmp) / "sessions.db")
        pool = make_pool(config, "bench", store)
        assert pool is not None
        router = KeyRouter(
            pool,
            ProviderSettings(provider="bench", model="m"),
            lambda s: object(),
            lambda line: None,
        )
        request = ModelRequest(model="m", messages=[])
        leases, updates = [], []
        for _ in range(args.runs):
            began = time.perf_counter()
            for _ in range(args.leases):
                lease, _client = router.take()
                request.key_id = lease.key.id
            leases.append((time.perf_counter() - began) / args.leases)
            began = time.perf_counter()
            for _ in range(args.updates):
                pool.used(lease)
            updates.append((time.perf_counter() - began) / args.updates)
        store.close()
    print(
        f"key selection + attribution per request: {statistics.median(leases) * 1e3:.5f} ms "
        f"(median of {args.runs} runs of {args.leases})"
    )
    print(
        f"pool state update (SQLite compare-and-swap): {statistics.median(updates) * 1e3:.3f} "
        f"ms (median of {args.runs} runs of {args.updates})"
    )


if __name__ == "__main__":
    main()
