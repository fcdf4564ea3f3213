"""Cold start-up time of the ``hermes`` command line.

Runs each command several times in a fresh process and prints the median wall time: a bare
Python interpreter, importing the two libraries every run needs (click and pluggy: the floor of
any pluggy/click CLI), ``import hermes_core``, ``hermes --help`` and ``hermes plugins list``.
Run it with the interpreter of the environment to measure (the ``hermes`` script is taken from
the same folder). HERMES_HOME points at an empty folder so no user config is read.

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
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an install has its bytecode, as a user's has
        env["HERMES_HOME"] = home
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import hermes_core": [sys.executable, "-c", "import hermes_core"],
            "import click, pluggy": [sys.executable, "-c", "import click, pluggy"],
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
    help_time = statistics.median(results["hermes --help"])
    for floor_name in ("python -c pass", "import click, pluggy"):
        floor = statistics.median(results[floor_name])
        print(f"  hermes --help above `{floor_name}`: {(help_time - floor) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
