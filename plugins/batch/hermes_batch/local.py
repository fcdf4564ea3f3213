"""The coordinator of a run on this machine: starts worker processes (``hermes batch worker``),
replaces one that dies (its row goes back to pending), declares lost the rows of workers that
are gone or silent, stops at the budget, and reports progress until no row is left.

Workers run in sessions of their own (a Ctrl-C of the coordinator does not kill the rows in
flight); a worker whose coordinator is gone finishes its row and takes no other.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from pathlib import Path

from hermes_hookspecs import HermesError

from .schema import Counts, RunInfo
from .table import RunTable

POLL_SECONDS = 0.25
STALE_COORDINATOR = 30.0
"""Seconds without a heartbeat after which a coordinator on another machine counts as gone."""


def hermes_command() -> list[str]:
    """The argv that starts the ``hermes`` command with this Python."""
    found = entry_points(group="console_scripts", name="hermes")
    for point in found:
        module, _, attr = point.value.partition(":")
        code = f"import sys; from {module} import {attr} as m; sys.exit(m())"
        return [sys.executable, "-c", code]
    raise HermesError("the hermes command is not installed in this Python")


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine exists (and is not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True


def holder_alive(holder: str, heartbeat: float | None) -> bool:
    """Whether ``host:pid`` still runs: by its pid on this machine, by a recent heartbeat on
    another."""
    host, _, pid = holder.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        return process_alive(int(pid))
    return heartbeat is not None and time.time() - heartbeat < STALE_COORDINATOR


def release_dead_workers(table: RunTable, name: str) -> int:
    """Declare lost the rows of run ``name`` held by workers of this machine that are gone."""
    here = socket.gethostname()
    released = 0
    for worker in table.running_workers(name):
        host, _, pid = worker.removeprefix("ray:").rpartition(":")
        if host == here and pid.isdigit() and not process_alive(int(pid)):
            released += table.release_worker(name, worker, f"worker {pid} is gone")
    return released


class LocalWorkers:
    """Starts ``hermes batch worker RUN`` processes with the environment ``env``, their
    output appended to ``log``."""

    def __init__(self, name: str, env: Mapping[str, str], log: Path) -> None:
        self.name, self.env, self.log = name, dict(env), log
        self.command = [*hermes_command(), "batch", "worker", name]

    def start(self) -> subprocess.Popen[bytes]:
        """Start one worker."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            return subprocess.Popen(
                self.command,
                env=self.env,
                cwd=self.log.parent,  # the run's folder: the same for every attempt of a row
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def coordinate(
    table: RunTable,
    name: str,
    workers: LocalWorkers,
    count: int,
    *,
    on_progress: Callable[[Counts, RunInfo], None] | None = None,
    poll: float = POLL_SECONDS,
) -> Counts:
    """Run the pending rows of run ``name`` on ``count`` local workers until none is left (or
    the budget is spent); returns where the run stands at the end."""
    procs: dict[int, subprocess.Popen[bytes]] = {}
    here = socket.gethostname()
    deaths = 0
    try:
        while True:
            table.set_run(name, heartbeat_at=time.time())
            for pid, proc in list(procs.items()):
                code = proc.poll()
                if code is None:
                    continue
                del procs[pid]
                lost = table.release_worker(name, f"{here}:{pid}", f"worker {pid} ended ({code})")
                if code != 0:
                    deaths += 1
                if deaths > 3 * count + 5:
                    raise HermesError(
                        f"batch workers keep failing ({deaths} so far); the last said: "
                        f"{_last_line(workers.log) or '(nothing)'} (log: {workers.log})"
                    )
                del lost
            table.release_expired(name)
            release_dead_workers(table, name)
            run = table.run(name)
            counts = table.counts(name)
            if on_progress is not None:
                on_progress(counts, run)
            budget = run.settings.get("budget_usd")
            if run.state == "running" and budget is not None and run.spent_usd >= float(budget):
                table.set_run(name, state="stopped", stop_reason=f"budget of ${budget} spent")
                continue
            if run.state != "running" or counts["pending"] == 0:
                if not procs and counts["running"] == 0:
                    return counts
            else:
                while len(procs) < min(count, counts["pending"]):
                    proc = workers.start()
                    procs[proc.pid] = proc
            time.sleep(poll)
    except KeyboardInterrupt:  # the rows in flight finish; no worker takes another
        table.set_run(name, state="stopped", stop_reason="interrupted")
        raise
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.wait()
