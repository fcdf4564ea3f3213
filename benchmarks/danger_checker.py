"""Speed of the command policy (hermes_policy_commands): the figures of its issue.

- a 20,000-character command (cd, pipes, redirections, git, deletes) and one with a long run of
  spaces inside a quoted SQL string (goal: each at most 20 ms);
- ``x=a; x=$x$x;`` repeated 22 times (goal: at most 10 ms);
- p50 and p95 over every command of the corpora (goal: p50 at most 0.2 ms);
- the false-alarm rate over the everyday corpus (goal: at most 2 %) and the ask rate over the
  generated dangerous families (goal: 100 %), both decided in a project workspace;
- the lines of code of the engine, the parser glue and the front ends (the ceiling of
  plugins/command_policy/tests/test_size.py).

Each figure is the median of several runs. Usage: python benchmarks/danger_checker.py [--runs 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from hermes_policy_commands import decide

ROOT = Path(__file__).resolve().parent.parent
SIZE = ROOT / "plugins/command_policy/tests/test_size.py"
TESTS = ROOT / "plugins/command_policy/tests"
CORPORA = [
    ROOT / "builtin_tools/terminal/tests/test_danger_corpus.py",
    TESTS / "test_corpus_families.py",
]


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _corpus() -> list[str]:
    commands: list[str] = []
    for path in CORPORA:
        module = _load(path)
        for name in dir(module):
            value = getattr(module, name)
            if name.isupper() and isinstance(value, list):
                commands += [c if isinstance(c, str) else c[0] for c in value]
    families = _load(TESTS / "dangerous_families.py")
    commands += (
        families.dangerous() + families.look_alikes() + _load(TESTS / "test_unreadable.py").EVERYDAY
    )
    return list(dict.fromkeys(c for c in commands if isinstance(c, str)))


def _rates() -> tuple[float, int, float, int]:
    """The false-alarm rate over the everyday corpus and the ask rate over the dangerous
    families, each with its size, decided in a workspace holding the corpus's scripts."""
    import tempfile

    from hermes_policy_commands.situated import judge_command, local_files, situation

    everyday = _load(TESTS / "test_unreadable.py")
    families = _load(TESTS / "dangerous_families.py")
    with tempfile.TemporaryDirectory() as folder:
        for name, text in everyday.SCRIPTS.items():
            path = Path(folder) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        config = {"terminal": {"cwd": folder}}
        where = situation(config, home=families.HOME, sandboxed=False)
        reader = local_files(where.base)
        alarms = [c for c in everyday.EVERYDAY
                  if judge_command(c, where, read_script=reader).decision != "allow"]  # fmt: skip
        bad = families.dangerous()
        asked = [c for c in bad if judge_command(c, where, read_script=reader).decision != "allow"]
    total = len(everyday.EVERYDAY)
    return len(alarms) / total, total, len(asked) / len(bad), len(bad)


def _median_ms(command: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        decide(command)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    decide("ls")  # the parser is loaded once per process
    chunk = "cd src && ls -la | grep x; echo 'a b' > out.txt; git status; rm -rf ./build\n"
    mixed = (chunk * (20_000 // len(chunk) + 1))[:20_000]
    sql = "psql -c 'SELECT " + " " * (20_000 - 20) + "1'"
    doubling = "x=a; " + "x=$x$x; " * 22
    print(f"20,000-character mixed command: {_median_ms(mixed, runs):.2f} ms (goal <= 20)")
    print(f"20,000-character quoted SQL:    {_median_ms(sql, runs):.2f} ms (goal <= 20)")
    print(f"x=$x$x doubled 22 times:        {_median_ms(doubling, runs):.2f} ms (goal <= 10)")
    corpus = _corpus()
    per = sorted(_median_ms(c, max(3, runs // 2)) for c in corpus)
    p50 = per[len(per) // 2]
    p95 = per[int(len(per) * 0.95)]
    print(f"corpora ({len(per)} commands): p50 {p50:.3f} ms, p95 {p95:.3f} ms (goal p50 <= 0.2)")
    alarms, everyday, asked, bad = _rates()
    print(f"false alarms, everyday corpus ({everyday} commands): {alarms:.1%} (goal <= 2 %)")
    print(f"asked, generated dangerous families ({bad} spellings): {asked:.1%} (goal 100 %)")
    size = _load(SIZE)
    print(
        f"lines of code ({', '.join(size.COUNTED)}): {size.counted_lines()} "
        f"(ceiling {size.CEILING})"
    )


if __name__ == "__main__":
    main()
