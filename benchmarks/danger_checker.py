"""Speed of the terminal toolset's dangerous-command checker.

Checks a 20,000-character command (a realistic mix of cd, pipes, redirections, git and
deletes), a few 20,000-character commands built to provoke slow paths (many wrappers, deep
nesting, long pipelines, repeated keywords), and every command of the checker's test corpus.
Each figure is the median of several runs; the corpus figure is the mean time per command.
The goal is linear time: a 20,000-character command in at most 100 ms.

Usage: python benchmarks/danger_checker.py [--runs 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

from hermes_toolset_terminal.danger import check

CORPUS = Path(__file__).parent.parent / "builtin_tools/terminal/tests/test_danger_corpus.py"
LENGTH = 20_000
REALISTIC = (
    "cd src && ls -la | grep -v '^d' > files.txt; git status --short; "
    'echo "$HOME/x" | tee -a log.txt; rm -rf ./build node_modules; '
    "python3 -m pytest -q tests/ 2>&1 | tail -n 5\n"
)
PATHOLOGICAL = {
    "wrappers": "sudo env A=1 nice -n 5 nohup timeout 9 ",
    "nested eval": "eval ",
    "nested bash -c": "bash -c ",
    "pipeline": "cat x | ",
    "xargs chain": "echo a | xargs ",
    "base64 words": "echo base64 -d ",
    "braces": "{a,b}",
    "function definitions": "f(){ ",
    "sql keywords": "psql -c 'delete from t where ' ",
}


def sized(chunk: str) -> str:
    """``chunk`` repeated to exactly :data:`LENGTH` characters."""
    return (chunk * (LENGTH // len(chunk) + 1))[:LENGTH]


def median_time(commands: list[str], runs: int) -> float:
    """Median over ``runs`` of the time to check every command of ``commands`` once."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for command in commands:
            check(command, home="/home/user")
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def corpus() -> list[str]:
    """Every command of the checker's test corpus (dangerous ones and harmless look-alikes)."""
    spec = importlib.util.spec_from_file_location("danger_corpus", CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DANGEROUS + module.WRAPPED + module.XARGS + module.LOOK_ALIKES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    check("warm up the compiled rules")
    print(f"{'case':<34} {'median':>10}")
    realistic = median_time([sized(REALISTIC)], args.runs)
    print(f"{'20,000-char command (realistic)':<34} {realistic * 1000:>8.1f} ms")
    for name, chunk in PATHOLOGICAL.items():
        elapsed = median_time([sized(chunk)], args.runs)
        print(f"{'20,000-char: ' + name:<34} {elapsed * 1000:>8.1f} ms")
    commands = corpus()
    elapsed = median_time(commands, args.runs)
    label = f"corpus ({len(commands)} commands), mean"
    print(f"{label:<34} {elapsed / len(commands) * 1e6:>8.0f} µs")


if __name__ == "__main__":
    main()
