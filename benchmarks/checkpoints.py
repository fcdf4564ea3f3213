"""What checkpoints cost on a big workspace: 10,000 files, 200 MB.

The figures, each the median of ``--runs`` runs, with the goals:

- a checkpoint before a turn when nothing changed since the last one (goal: 50 ms); this is
  what the first call of every turn pays;
- a checkpoint after one file changed (goal: 150 ms);
- the record after a call that changed nothing (no goal; every call that may change the
  workspace pays it);
- restoring one file (goal: 100 ms), the whole ``hermes checkpoints restore N PATH`` but the
  command line: a snapshot of now, a checkpoint of it, the write, the record after;
- the store's growth over 100 turns that each change one 20 KB file (goal: at most twice the
  bytes changed), measured as the sizes of the store's files, as they are (loose objects) and
  after ``git gc``.

Also printed, once: the first checkpoint of the workspace (everything hashed and stored).

Usage: python benchmarks/checkpoints.py [--files 10000] [--mb 200] [--runs 15] [--turns 100]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hermes_checkpoints.catalog import list_checkpoints
from hermes_checkpoints.operations import (
    checkpoint_before_turn,
    open_workspace,
    record_after,
    restore,
)
from hermes_checkpoints.settings import MIB, Settings
from hermes_checkpoints.snapshot import Workspace

GOALS_MS = {"unchanged": 50.0, "one change": 150.0, "restore one file": 100.0}


def build(root: Path, files: int, total_mb: int) -> list[Path]:
    """A workspace of ``files`` files holding ``total_mb`` MB, in 50 x 10 folders; half of
    each file is random (it does not compress away)."""
    rng = random.Random(7)
    size = total_mb * MIB // files
    paths = []
    for n in range(files):
        folder = root / f"pkg{n % 50:02d}" / f"mod{(n // 50) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file{n:05d}.txt"
        path.write_bytes(rng.randbytes(size // 2) + b"x" * (size - size // 2))
        paths.append(path)
    return paths


def median_ms(runs: int, prepare: Callable[[int], None], measure: Callable[[], object]) -> float:
    """The median time of ``measure`` over ``runs`` runs, ``prepare(n)`` run untimed before
    each."""
    times = []
    for n in range(runs):
        prepare(n)
        started = time.perf_counter()
        measure()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def touch(path: Path, n: int) -> None:
    """Change one file's content (same size)."""
    data = bytearray(path.read_bytes())
    data[:16] = f"change {n:08d}".encode().ljust(16)
    path.write_bytes(bytes(data))


def store_bytes(workspace: Workspace) -> int:
    """The sizes of the store's files."""
    return workspace.store.footprint()


def main() -> int:
    """Build the workspace, measure, print the figures next to their goals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="hermes-bench-checkpoints-"))
    try:
        root = scratch / "work"
        paths = build(root, args.files, args.mb)
        settings = Settings(max_total_mb=100_000, keep=10_000)
        workspace = open_workspace(scratch / "home", Path(os.path.realpath(root)))
        meta = {"session": "bench", "tool": "terminal"}
        print(f"workspace: {args.files} files, {args.mb} MB; median of {args.runs} runs")

        started = time.perf_counter()
        checkpoint = checkpoint_before_turn(workspace, settings, meta)
        print(f"first checkpoint (everything stored): {time.perf_counter() - started:.1f} s")
        checkpoint_before_turn(workspace, settings, meta)  # warm: the index's stat data

        figures: dict[str, float] = {}

        def turn_changed_something(n: int) -> None:
            touch(paths[(len(paths) // 2 + n) % len(paths)], 30_000 + n)
            record_after(workspace, settings, list_checkpoints(workspace)[0])

        figures["unchanged"] = median_ms(
            args.runs,
            turn_changed_something,
            lambda: checkpoint_before_turn(workspace, settings, meta),
        )
        figures["unchanged, the newest checkpoint serves again"] = median_ms(
            args.runs, lambda n: None, lambda: checkpoint_before_turn(workspace, settings, meta)
        )
        figures["record after, unchanged"] = median_ms(
            args.runs, lambda n: None, lambda: record_after(workspace, settings, checkpoint)
        )
        figures["one change"] = median_ms(
            args.runs,
            lambda n: touch(paths[n], n),
            lambda: checkpoint_before_turn(workspace, settings, meta),
        )

        def damage(n: int) -> None:
            checkpoint_before_turn(workspace, settings, meta)
            touch(paths[(len(paths) // 10 + n) % len(paths)], 10_000 + n)
            record_after(workspace, settings, list_checkpoints(workspace)[0])

        relative = [
            str(paths[(len(paths) // 10 + n) % len(paths)].relative_to(root)).encode()
            for n in range(args.runs)
        ]
        counter = iter(range(args.runs))
        figures["restore one file"] = median_ms(
            args.runs,
            damage,
            lambda: restore(workspace, settings, "1", [relative[next(counter)]], False),
        )
        for name, value in figures.items():
            goal = GOALS_MS.get(name)
            verdict = (
                ""
                if goal is None
                else (" (goal ≤ {:g} ms: {})".format(goal, "met" if value <= goal else "MISSED"))
            )
            print(f"{name}: {value:.1f} ms{verdict}")

        workspace.store.gc(prune_all=True)
        before = store_bytes(workspace)
        changed = 0
        for n in range(args.turns):
            current = checkpoint_before_turn(workspace, settings, meta)
            path = paths[(len(paths) // 5 + n) % len(paths)]
            touch(path, 20_000 + n)
            changed += path.stat().st_size
            record_after(workspace, settings, current)
        grown = store_bytes(workspace) - before
        workspace.store.gc(prune_all=True)
        packed = store_bytes(workspace) - before
        print(
            f"store growth over {args.turns} turns changing {changed / 1024:.0f} KB: "
            f"{grown / 1024:.0f} KB as written ({grown / changed:.2f}x), "
            f"{packed / 1024:.0f} KB after git gc ({packed / changed:.2f}x; goal ≤ 2x: "
            f"{'met' if grown <= 2 * changed else 'MISSED as written'}"
            f"{'' if packed <= 2 * changed else ', MISSED packed'})"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
