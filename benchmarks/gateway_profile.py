"""Runs ``hermes`` (as ``hermes_core.cli.main``) with a profiler a signal switches on and off:
SIGUSR1 starts profiling every thread on CPU time, SIGUSR2 writes what was measured to
``$HERMES_BENCH_PROFILE/<pid>.pstat`` (a pstats file) and stops. ``gateway.py --profile DIR``
starts the gateway through it and signals each serving process around the measured load.
Each process also writes ``<pid>.threads.json``: the CPU seconds each kind of thread (by its
name, numbers dropped) used between the two signals.

Needs ``yappi`` (``pip install yappi``): unlike cProfile it follows the turn threads too.
With ``HERMES_BENCH_PROFILE_THREADS_ONLY=1`` only the threads' CPU is measured (no profiler,
so no profiler's cost in it).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Any

_ONLY_THREADS = os.environ.get("HERMES_BENCH_PROFILE_THREADS_ONLY") == "1"
_before: dict[int, tuple[str, float]] = {}


def _thread_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds of each live thread of this process, with the thread's kind."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for thread in threading.enumerate():
        tid = thread.native_id
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kind = re.sub(r"[-_ ]*\d+(\s*\(.*\))?$", "", thread.name) or "?"
        found[tid or 0] = (kind, (int(stat[11]) + int(stat[12])) / ticks)
    return found


def _start(signum: int, frame: Any) -> None:
    global _before
    _before = _thread_cpu()
    if not _ONLY_THREADS:
        import yappi  # type: ignore[import-untyped]

        yappi.set_clock_type("cpu")
        yappi.start(builtins=True, profile_threads=True)


def _write(signum: int, frame: Any) -> None:
    folder = Path(os.environ["HERMES_BENCH_PROFILE"])
    folder.mkdir(parents=True, exist_ok=True)
    if not _ONLY_THREADS:
        import yappi

        yappi.stop()
        yappi.get_func_stats().save(str(folder / f"{os.getpid()}.pstat"), type="pstat")
        yappi.clear_stats()
    kinds: dict[str, float] = {}
    for tid, (kind, seconds) in _thread_cpu().items():
        kinds[kind] = kinds.get(kind, 0.0) + seconds - _before.get(tid, (kind, 0.0))[1]
    (folder / f"{os.getpid()}.threads.json").write_text(json.dumps(kinds, indent=1))


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _write)
    from hermes_core.cli import main

    sys.argv = ["hermes", *sys.argv[1:]]
    sys.exit(main())
