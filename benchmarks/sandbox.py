"""What the OS sandbox adds to one command of the local environment.

The same short commands run, interleaved, through two local environments in one process: one
with the default sandbox (``workspace`` profile, bubblewrap) and one with ``terminal.sandbox:
off``. The script prints p50 and p95 of each, in milliseconds, and the difference at p50, which
the goal bounds: at most 10 ms added at p50.

Usage: python benchmarks/sandbox.py [--runs 200] [--command "true"]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

from hermes_env_local import LocalEnvironment
from hermes_env_sandbox import SandboxSettings, unavailable_reason

GOAL_MS = 10.0


def percentile(values: list[float], share: float) -> float:
    """The value below which ``share`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main() -> int:
    """Measure and print the figures; exit 1 when no sandbox can start here."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--command", default="true")
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason:
        print(f"sandbox.py: {reason}", file=sys.stderr)
        return 1
    folder = tempfile.mkdtemp(prefix="hermes-bench-sandbox-")
    boxed = LocalEnvironment(folder)
    plain = LocalEnvironment(folder, sandbox=SandboxSettings(profile="off"))
    timings: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": []}
    try:
        for env in (boxed, plain):  # warm up: scratch folders, the guard, the bwrap probe
            for _ in range(5):
                env.run(args.command)
        for _ in range(args.runs):
            for name, env in (("sandboxed", boxed), ("unsandboxed", plain)):
                started = time.perf_counter()
                result = env.run(args.command)
                timings[name].append((time.perf_counter() - started) * 1000)
                assert result.exit_code == 0, result.output
    finally:
        boxed.cleanup()
        plain.cleanup()
    print(f"command {args.command!r}, {args.runs} runs each, interleaved")
    for name, values in timings.items():
        print(
            f"  {name:12} p50 {statistics.median(values):6.2f} ms   "
            f"p95 {percentile(values, 0.95):6.2f} ms"
        )
    added = statistics.median(timings["sandboxed"]) - statistics.median(timings["unsandboxed"])
    added95 = percentile(timings["sandboxed"], 0.95) - percentile(timings["unsandboxed"], 0.95)
    verdict = "within" if added <= GOAL_MS else "OVER"
    print(f"  added by the sandbox: p50 {added:.2f} ms, p95 {added95:.2f} ms")
    print(f"  goal: at most {GOAL_MS:g} ms added at p50: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
