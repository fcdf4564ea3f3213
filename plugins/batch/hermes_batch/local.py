"""The coordinator of a run on this machine: starts worker processes (forked from it),
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
from typing import Protocol

from hermes_hookspecs import HermesError

from .schema import Counts, RunInfo
from .table import RunTable
from .worker import stop_reason

POLL_SECONDS = 0.25
DEATHS_PER_MINUTE = 3
"""Workers (per worker slot) that may end with an error within a minute before a run stops."""
HEARTBEAT_SECONDS = 5.0
"""How often a coordinator writes that it is alive."""
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


class Worker(Protocol):
    """A started worker process, as the coordinator watches it."""

    pid: int

    def poll(self) -> int | None:
        """Its exit code once it ended, else ``None``."""
        ...

    def wait(self) -> int:
        """Wait for it to end; its exit code."""
        ...


class ForkedWorker:
    """A worker forked from the coordinator: it starts with the plugins and the configuration
    the coordinator loaded, so a row starts without a new interpreter's start-up."""

    def __init__(self, target: Callable[[], None], folder: Path, log: Path) -> None:
        self._code: int | None = None
        pid = os.fork()
        if pid == 0:  # the child: a session of its own, output to the log, never returns
            code = 1
            try:
                os.setsid()
                os.chdir(folder)
                fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                for stream in (1, 2):
                    os.dup2(fd, stream)
                target()
                code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        self.pid = pid

    def poll(self) -> int | None:
        """Its exit code once it ended (reaped), else ``None``."""
        if self._code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._code = os.waitstatus_to_exitcode(status)
        return self._code

    def wait(self) -> int:
        """Wait for it to end; its exit code."""
        if self._code is None:
            _pid, status = os.waitpid(self.pid, 0)
            self._code = os.waitstatus_to_exitcode(status)
        return self._code


class LocalWorkers:
    """Starts the workers of run ``name`` on this machine, in the run's folder (so that a
    row's system prompt is the same on every attempt), their output appended to ``log``:
    forked from this process running ``target`` where processes can fork, else as
    ``hermes batch worker RUN`` processes with the environment ``env``."""

    def __init__(
        self,
        name: str,
        env: Mapping[str, str],
        log: Path,
        target: Callable[[], None] | None = None,
    ) -> None:
        self.name, self.env, self.log, self.target = name, dict(env), log, target
        self.command = [*hermes_command(), "batch", "worker", name]

    def start(self) -> Worker:
        """Start one worker."""
        folder = self.log.parent
        folder.mkdir(parents=True, exist_ok=True)
        if self.target is not None and hasattr(os, "fork"):
            sys.stdout.flush()
            sys.stderr.flush()
            return ForkedWorker(self.target, folder, self.log)
        with self.log.open("ab") as out:
            return subprocess.Popen(
                self.command,
                env=self.env,
                cwd=folder,
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
    procs: dict[int, Worker] = {}
    here = socket.gethostname()
    deaths: list[float] = []  # when workers ended with an error, within the last minute
    try:
        beat = 0.0
        while True:
            if time.monotonic() - beat > HEARTBEAT_SECONDS:
                table.set_run(name, heartbeat_at=time.time())
                beat = time.monotonic()
            for pid, proc in list(procs.items()):
                code = proc.poll()
                if code is None:
                    continue
                del procs[pid]
                table.release_worker(name, f"{here}:{pid}", f"worker {pid} ended ({code})")
                if code != 0:
                    now = time.monotonic()
                    deaths = [t for t in deaths if now - t < 60] + [now]
                if len(deaths) > DEATHS_PER_MINUTE * count:
                    table.set_run(name, state="stopped", stop_reason="its workers kept failing")
                    raise HermesError(
                        f"batch workers keep failing ({len(deaths)} in a minute); the last "
                        f"said: {_last_line(workers.log) or '(nothing)'} (log: {workers.log})"
                    )
            table.release_expired(name)
            release_dead_workers(table, name)
            run = table.run(name)
            counts = table.counts(name)
            if on_progress is not None:
                on_progress(counts, run)
            if run.state == "running" and (reason := stop_reason(table, run, counts)):
                table.set_run(name, state="stopped", stop_reason=reason)
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
