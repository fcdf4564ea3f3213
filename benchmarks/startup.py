"""Cold start-up time of the ``hermes`` command line.

Runs each command several times in a fresh process and prints the median wall time: a bare
Python interpreter (the floor), ``import hermes_core``, ``hermes --help`` and
``hermes plugins list``. HERMES_HOME points at an empty folder so no user config is read.

Usage: python benchmarks/startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(command: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Wall times of ``runs`` fresh runs of ``command``."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    hermes = shutil.which("hermes", path=str(Path(sys.executable).parent)) or "hermes"
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env["HERMES_HOME"] = home
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import hermes_core": [sys.executable, "-c", "import hermes_core"],
            "hermes --help": [hermes, "--help"],
            "hermes plugins list": [hermes, "plugins", "list"],
        }
        timed(cases["hermes --help"], env, 3)  # warm the file cache
        results = {name: timed(cmd, env, args.runs) for name, cmd in cases.items()}
    print(f"start-up, median of {args.runs} runs (min / max)")
    for name, times in results.items():
        print(
            f"  {name:<22} {statistics.median(times) * 1000:7.1f} ms"
            f"   ({min(times) * 1000:.1f} / {max(times) * 1000:.1f})"
        )
    floor = statistics.median(results["python -c pass"])
    help_time = statistics.median(results["hermes --help"])
    print(f"  hermes --help above the bare interpreter: {(help_time - floor) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
