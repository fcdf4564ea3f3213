"""``hermes cron daemon``: tick until stopped, one daemon per home."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from hermes_hookspecs import AgentRunner

from .claims import RunClaims
from .jobs import JobError, JobStore, all_stores
from .scheduler import tick


@contextlib.contextmanager
def daemon_lock(store: JobStore) -> Iterator[TextIO]:
    """Hold ``cron/daemon.lock`` for the daemon's life; :class:`JobError` when another daemon
    of this home holds it."""
    store.dir.mkdir(parents=True, exist_ok=True)
    handle = open(store.dir / "daemon.lock", "a+")  # noqa: SIM115 - held for the whole block
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info = read_status(store) or {}
            raise JobError(
                f"a cron daemon already runs for this home (pid {info.get('pid', '?')})"
            ) from None
        yield handle
    finally:
        handle.close()


def daemon_running(store: JobStore) -> bool:
    """Whether a daemon holds this home's daemon lock now."""
    path = store.dir / "daemon.lock"
    if not path.exists():
        return False
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def read_status(store: JobStore) -> dict[str, Any] | None:
    """What the daemon last wrote to ``cron/daemon.json`` (pid, start, last tick)."""
    try:
        status = json.loads((store.dir / "daemon.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def _label(job: dict[str, Any]) -> str:
    """``<id> '<name>'``, with ``(person <id>)`` for a person's job."""
    whose = f" (person {job['person']})" if job.get("person") else ""
    return f"{job['id']} {job['name']!r}{whose}"


def _write_status(path: Path, status: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(status), encoding="utf-8")
    os.replace(tmp, path)


def run_daemon(
    store: JobStore,
    runner: AgentRunner,
    *,
    interval: float,
    max_parallel: int,
    stop: threading.Event | None = None,
    log: Callable[[str], None] = print,
    once: bool = False,
    claims: RunClaims | None = None,
) -> int:
    """Tick every ``interval`` seconds until ``stop`` is set or SIGTERM/SIGINT arrives; jobs
    running then are interrupted and recorded as such. With the owner's ``store``, every tick
    runs the due jobs of the owner and of every person of the home (people added meanwhile
    included); with a person's, that person's only. ``claims``: one run per due time across
    the machines of a team (:mod:`.claims`). Returns the number of runs."""
    stop = stop or threading.Event()
    cancel = threading.Event()
    previous: dict[signal.Signals, Any] = {}

    def on_signal(signum: int, frame: Any) -> None:
        log(f"cron daemon: signal {signum}, stopping")
        stop.set()
        cancel.set()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    runs = 0
    status_path = store.dir / "daemon.json"
    try:
        with daemon_lock(store):
            status = {"pid": os.getpid(), "started_at": time.time(), "last_tick": None}
            _write_status(status_path, status)
            log(f"cron daemon: running (pid {os.getpid()}, every {interval:g}s)")
            while not stop.is_set():
                done = tick(
                    all_stores(store.home) if store.person is None else [store],
                    runner,
                    max_parallel=max_parallel,
                    cancel=cancel,
                    on_start=lambda job: log(f"cron: running {_label(job)}"),
                    claims=claims,
                )
                for job, outcome in done:
                    runs += 1
                    log(
                        f"cron: {job['id']} {outcome.status}"
                        + (f": {outcome.error}" if outcome.error else "")
                    )
                status["last_tick"] = time.time()
                _write_status(status_path, status)
                if once:
                    break
                stop.wait(interval)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    log("cron daemon: stopped")
    return runs
