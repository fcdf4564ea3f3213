"""Runs ``hermes`` (as ``hermes_core.cli.main``) with a profiler a signal switches on and off:
SIGUSR1 starts profiling every thread on CPU time, SIGUSR2 writes what was measured to
``$HERMES_BENCH_PROFILE/<pid>.pstat`` (a pstats file) and stops. ``gateway.py --profile DIR``
starts the gateway through it and signals each serving process around the measured load.

Needs ``yappi`` (``pip install yappi``): unlike cProfile it follows the turn threads too.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any


def _start(signum: int, frame: Any) -> None:
    import yappi  # type: ignore[import-untyped]

    yappi.set_clock_type("cpu")
    yappi.start(builtins=True, profile_threads=True)


def _write(signum: int, frame: Any) -> None:
    import yappi

    yappi.stop()
    folder = Path(os.environ["HERMES_BENCH_PROFILE"])
    folder.mkdir(parents=True, exist_ok=True)
    yappi.get_func_stats().save(str(folder / f"{os.getpid()}.pstat"), type="pstat")
    yappi.clear_stats()


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _write)
    from hermes_core.cli import main

    sys.argv = ["hermes", *sys.argv[1:]]
    sys.exit(main())
