"""What the file tools pay to see the sandbox's world: ``Sandbox.path_sight`` per path, over a
home folder outside /tmp with the builtin hidden and allowed paths, for a path in the workspace,
a hidden one, a system one and an unseen one of the home folder.

Usage: python benchmarks/path_sight.py [--runs 7] [--calls 200]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hermes_env_sandbox import Sandbox, SandboxSettings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hermes-bench-sight-", dir="/var/tmp"))
    try:
        home = root / "home"
        for folder in ("project", ".hermes", ".cargo/bin", ".ssh"):
            (home / folder).mkdir(parents=True)
        (root / "tmp").mkdir()
        sandbox = Sandbox(
            SandboxSettings(),
            workspace=str(home / "project"),
            tmp=str(root / "tmp"),
            hermes_home=str(home / ".hermes"),
            home=str(home),
            search_path="/usr/bin:/bin",
        )
        paths = [
            str(home / "project/src/app.py"),
            str(home / ".ssh/id_ed25519"),
            "/usr/bin/env",
            str(home / "Documents/plan.txt"),
        ]
        sandbox.path_sight(paths[0])  # the first call resolves the hidden paths
        runs = []
        for _ in range(args.runs):
            started = time.perf_counter()
            for _ in range(args.calls):
                for path in paths:
                    sandbox.path_sight(path)
            runs.append((time.perf_counter() - started) / (args.calls * len(paths)) * 1e6)
        print(
            f"path_sight: {statistics.median(runs):.1f} µs per path (median of {args.runs} runs "
            f"of {args.calls * len(paths)} calls; {len(sandbox.hidden_paths())} hidden paths)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
