"""Rows as tasks of a Ray cluster (``--executor ray``).

The coordinator joins the cluster (``--ray-address``, ``batch.ray_address``, ``RAY_ADDRESS``,
else a Ray of its own on this machine) and keeps ``--workers`` row slots: Ray actors, placed
by Ray on any node, each serving rows through a ``hermes batch worker --serve`` process it
starts on its node (so a row runs with that node's hermes, plugins and sandbox). Each row is one
Ray task (a call of a slot): the coordinator claims the row in the run table, hands it to a
free slot and waits. A task that fails (its node or worker process died) declares its attempt
lost and the row goes back to pending, and the slot is replaced; the run table stays the truth,
so a lost node never completes a row twice and never loses one.

Across machines the run table must be shared: ``store.url`` naming a PostgreSQL database in
the configuration of every node's home. Ray is imported only here, when such a run starts.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import HermesError

from .local import HEARTBEAT_SECONDS, hermes_command, release_dead_workers
from .schema import Claim, Counts, RunInfo
from .table import RunTable
from .worker import REPLY, stop_reason

POLL_SECONDS = 0.25
START_TIMEOUT = 120.0
"""Seconds a slot's hermes process may take to start."""


class RowSlot:
    """A Ray actor that runs rows, one at a time, through a ``hermes batch worker --serve``
    process of its own (started on the actor's node, with ``HERMES_HOME`` set to ``home``)."""

    def __init__(self, name: str, home: str) -> None:
        folder = Path(home) / "batch" / name
        folder.mkdir(parents=True, exist_ok=True)
        self._log = (folder / "workers.log").open("ab")
        env = dict(os.environ, HERMES_HOME=home)
        self._proc = subprocess.Popen(
            [*hermes_command(), "batch", "worker", name, "--serve"],
            env=env,
            cwd=folder,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )

    def pid(self) -> int:
        """The actor's process id (a test kills it)."""
        return os.getpid()

    def _answer(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith(REPLY):
                answer: dict[str, Any] = json.loads(line[len(REPLY) :])
                return answer
        raise RuntimeError(f"the hermes worker process ended ({self._proc.wait()})")

    def ready(self) -> bool:
        """Wait until the hermes process is up (it answers a row that does not exist)."""
        return self.run("", 0) == "lost"

    def run(self, key: str, attempt: int) -> str:
        """Run attempt ``attempt`` of row ``key`` (claimed by the coordinator); returns the
        row's new state."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"key": key, "attempt": attempt}) + "\n")
        self._proc.stdin.flush()
        return str(self._answer()["state"])


def _init(address: str | None) -> Any:
    try:
        import ray
    except ImportError:
        raise HermesError('the ray executor needs Ray: pip install "hermes-batch[ray]"') from None

    if not ray.is_initialized():
        try:
            ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
        except Exception as exc:  # no cluster at the address, a version mismatch...
            raise HermesError(
                f"cannot join the Ray cluster {address or '(local)'}: {exc}"
            ) from None
    return ray


class _Slots:
    """The row slots of one run: the actors, which are free, and the tasks in flight."""

    def __init__(self, ray: Any, name: str, home: str, count: int, log: Path) -> None:
        self.ray, self.name, self.home, self.count, self.log = ray, name, home, count, log
        # spread over the nodes: the rows share every machine, and a lost node takes few
        self.slot_class = ray.remote(
            num_cpus=1, max_restarts=0, max_task_retries=0, scheduling_strategy="SPREAD"
        )(RowSlot)
        self.made: list[Any] = []
        self.inflight: dict[Any, tuple[Any, Claim]] = {}
        self.deaths = 0
        self.free = [self._new() for _ in range(count)]
        ray.get([slot.ready.remote() for slot in self.free], timeout=START_TIMEOUT)

    def _new(self) -> Any:
        slot = self.slot_class.remote(self.name, self.home)
        self.made.append(slot)
        return slot

    def dispatch(self, table: RunTable, me: str, lease: float) -> None:
        """Hand a claimed row to every free slot while rows are pending."""
        while self.free:
            claim = table.claim(self.name, me, lease)
            if claim is None:
                return
            slot = self.free.pop()
            self.inflight[slot.run.remote(claim.key, claim.attempt)] = (slot, claim)

    def collect(self, table: RunTable, poll: float) -> None:
        """Wait up to ``poll`` seconds for a task to end; a failed task's attempt is lost and
        its slot replaced."""
        ready, _ = self.ray.wait(list(self.inflight), num_returns=1, timeout=poll)
        for ref in ready:
            slot, claim = self.inflight.pop(ref)
            try:
                self.ray.get(ref)
            except Exception as exc:  # the task died with its worker, node or process
                table.release(claim, f"its Ray task failed ({type(exc).__name__})")
                self.deaths += 1
                if self.deaths > 3 * self.count + 5:
                    raise HermesError(
                        f"Ray row tasks keep failing ({self.deaths} so far); see {self.log} "
                        "on each node"
                    ) from None
                self.ray.kill(slot)
                slot = self._new()
                self.ray.get(slot.ready.remote(), timeout=START_TIMEOUT)
            self.free.append(slot)

    def close(self) -> None:
        """End every slot (a row still in flight is abandoned: its lease runs out)."""
        for slot in self.made:
            try:
                self.ray.kill(slot)
            except Exception:  # gone already
                pass


def coordinate_ray(
    table: RunTable,
    name: str,
    env: Mapping[str, str],
    log: Path,
    count: int,
    *,
    address: str | None = None,
    on_progress: Callable[[Counts, RunInfo], None] | None = None,
    poll: float = POLL_SECONDS,
) -> Counts:
    """Run the pending rows of run ``name`` as Ray tasks on ``count`` slots until none is
    left (or the budget is spent); returns where the run stands at the end. ``env`` gives
    the ``HERMES_HOME`` of the nodes; ``log`` is where this machine's slots write."""
    ray = _init(address)
    me = f"ray:{socket.gethostname()}:{os.getpid()}"
    slots: _Slots | None = None
    try:
        slots = _Slots(ray, name, env["HERMES_HOME"], count, log)
        beat = 0.0
        while True:
            if time.monotonic() - beat > HEARTBEAT_SECONDS:
                table.set_run(name, heartbeat_at=time.time())
                beat = time.monotonic()
            table.release_expired(name)
            release_dead_workers(table, name)
            run = table.run(name)
            counts = table.counts(name)
            if run.state == "running" and (reason := stop_reason(table, run, counts)):
                table.set_run(name, state="stopped", stop_reason=reason)
                run = table.run(name)
            if run.state == "running":
                slots.dispatch(table, me, float(run.settings.get("lease_seconds") or 60))
                counts = table.counts(name)
            if on_progress is not None:
                on_progress(counts, run)
            if slots.inflight:
                slots.collect(table, poll)
            elif counts["running"] == 0 and (run.state != "running" or counts["pending"] == 0):
                return counts
            else:
                time.sleep(poll)  # rows held elsewhere: wait for them or their leases
    except KeyboardInterrupt:
        table.set_run(name, state="stopped", stop_reason="interrupted")
        raise
    finally:
        if slots is not None:
            slots.close()
