"""Decisions take time linear in the command's length (the figures are the benchmark's)."""

from __future__ import annotations

import gc
import time

from hermes_policy_commands import decide


def _seconds(command: str) -> float:
    decide("ls")  # the parser is loaded
    gc.collect()  # a full collection of the test process's heap is not the checker's time
    gc.disable()
    try:
        started = time.perf_counter()
        decide(command)
        return time.perf_counter() - started
    finally:
        gc.enable()


def test_doubling_a_variable_stops_at_the_bound():
    command = "x=a; " + "x=$x$x; " * 22 + "echo $x"
    assert _seconds(command) < 1.0  # about 3 ms; a super-linear reading takes seconds


def test_long_commands_are_linear():
    chunk = "cd src && ls -la | grep x; echo 'a b' > out.txt; git status; rm -rf ./build\n"
    small = _seconds((chunk * 30)[:2_000])
    big = _seconds((chunk * 300)[:20_000])
    assert big < max(40 * small, 0.5)
    sql = "psql -c 'SELECT " + " " * 19_900 + "1'"
    assert _seconds(sql) < 1.0
