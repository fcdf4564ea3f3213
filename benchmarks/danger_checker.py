"""Speed of the terminal toolset's dangerous-command checker.

Checks a 20,000-character command (a realistic mix of cd, pipes, redirections, git and
deletes), a few 20,000-character commands built to provoke slow paths (many wrappers, deep
nesting, long pipelines, repeated keywords), and every command of the checker's test corpus.
Each figure is the median of several runs; the corpus figure is the mean time per command.
The goal is linear time: a 20,000-character command in at most 100 ms.

Python programs run by a command (``python3 x.py``) are parsed and read too: a realistic script
(about 400 lines), one at the reader's budget (128,000 characters, more is uncheckable), and
every program of the Python corpus. The goal: a realistic script well under 100 ms.

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
PYTHON_CORPUS = CORPUS.with_name("test_python_corpus.py")
PYTHON_CHUNK = """import json, os, shutil, subprocess, sys
from pathlib import Path

OUT = Path("out")
STEPS = ["lint", "test"]


def load(path):
    with open(path) as f:
        return json.load(f)


def run(cmd):
    print("+", " ".join(cmd))
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    OUT.mkdir(exist_ok=True)
    data = load(sys.argv[1]) if len(sys.argv) > 1 else {}
    for i, (key, value) in enumerate(sorted(data.items())):
        name = f"item-{i}.json"
        (OUT / name).write_text(json.dumps({key: value}))
    for step in STEPS:
        run(["make", step])
    shutil.rmtree("build", ignore_errors=True)
    print(run(["git", "status", "--short"]))

"""
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


def python_time(program: str, runs: int) -> float:
    """Median over ``runs`` of checking ``python3 prog.py`` with ``program`` as the file."""

    def read(path: str) -> str | None:
        return program if path.endswith("prog.py") else None

    times = []
    for _ in range(runs):
        started = time.perf_counter()
        check("python3 prog.py", home="/home/user", read_script=read)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def python_corpus() -> list[str]:
    """Every program of the Python corpus."""
    spec = importlib.util.spec_from_file_location("python_corpus", PYTHON_CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    approve = [program for program, _ in module.APPROVE_PROGRAMS]
    return module.HARD_PROGRAMS + approve + module.SAFE_PROGRAMS


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
    realistic_python = PYTHON_CHUNK * 14 + "main()\n"
    lines = realistic_python.count("\n")
    label = f"Python script ({lines} lines)"
    print(f"{label:<34} {python_time(realistic_python, args.runs) * 1000:>8.1f} ms")
    biggest = (PYTHON_CHUNK * (128_000 // len(PYTHON_CHUNK) + 1))[:127_000]
    biggest = biggest[: biggest.rfind("\n\n") + 1]
    label = f"Python script ({len(biggest) // 1000}k chars, budget)"
    print(f"{label:<34} {python_time(biggest, max(1, args.runs // 2)) * 1000:>8.1f} ms")
    programs = python_corpus()
    total = sum(python_time(p, 1) for p in programs)
    label = f"Python corpus ({len(programs)} programs), mean"
    print(f"{label:<34} {total / len(programs) * 1e6:>8.0f} µs")


if __name__ == "__main__":
    main()
