"""Running due jobs: claim them under the lock, run each as its own agent session (source
``cron``), deliver the answer, and record the result.

A person's job runs for that person (``AgentTask.person``): the host applies their limits
(``hermes_person_scope``) and their tools see their own data only; its output is written in their
own ``cron/output``."""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hermes_hookspecs import AgentOutcome, AgentRunner, AgentTask

from .claims import ClaimError, RunClaims
from .jobs import JobError, JobStore, cron_dir, find, schedule_of

SOURCE = "cron"
NOT_FOR_JOBS = ("clarify", "cron")
"""Toolsets a job's agent never gets: no one can answer it, and a job does not schedule jobs."""
OUTPUT_PREVIEW = 500


def _alive(claim: dict[str, Any] | None) -> bool:
    """Whether the process that claimed a job still runs (a claim from another machine, or
    one younger than an hour when the process cannot be checked, counts as alive)."""
    if not claim:
        return False
    if claim.get("host") != socket.gethostname():
        return time.time() - float(claim.get("since") or 0) < 3600
    try:
        os.kill(int(claim.get("pid") or 0), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def _claim() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}


def due_jobs(
    store: JobStore, now: float | None = None, claims: RunClaims | None = None
) -> list[dict[str, Any]]:
    """Claim every job due at ``now`` and return copies of them.

    A claimed job's next run is moved past ``now`` before it runs, so a job missed for a long
    time (nothing was running) runs once, not once per missed time, and another process
    ticking meanwhile does not run it again. With ``claims`` (a team's machines sharing a
    database), a due job runs here only when its due time is claimed here; one whose claim
    cannot be decided waits for the next tick (it fails closed: never run twice).
    """
    now = time.time() if now is None else now
    claimed = []
    with store.transaction() as jobs:
        for job in jobs:
            if job.get("state") != "scheduled" or job.get("next_run_at") is None:
                continue
            if float(job["next_run_at"]) > now or _alive(job.get("running")):
                continue
            if claims is not None:
                try:
                    key = f"{store.person or ''}/{job['id']}"
                    ours = claims.claim(key, float(job["next_run_at"]), now)
                except ClaimError:
                    continue
                if not ours:  # another machine runs it for this due time
                    job["next_run_at"] = schedule_of(job).next_after(now)
                    continue
            job["running"] = _claim()
            job["next_run_at"] = schedule_of(job).next_after(now)
            claimed.append(dict(job))
    return claimed


def claim_now(store: JobStore, ref: str) -> dict[str, Any]:
    """Claim one job to run now, whatever its schedule (``hermes cron run``)."""
    with store.transaction() as jobs:
        job = find(jobs, ref)
        if _alive(job.get("running")):
            raise JobError(f"job {job['id']} is running already (pid {job['running']['pid']})")
        job["running"] = _claim()
        return dict(job)


def tick(
    stores: JobStore | Sequence[JobStore],
    runner: AgentRunner,
    *,
    now: float | None = None,
    max_parallel: int = 3,
    cancel: threading.Event | None = None,
    on_start: Callable[[dict[str, Any]], None] | None = None,
    claims: RunClaims | None = None,
) -> list[tuple[dict[str, Any], AgentOutcome]]:
    """Run every due job of ``stores`` (one store, or several: :func:`~.jobs.all_stores` gives
    the owner's and every person's) once, up to ``max_parallel`` at a time; return each job
    with its outcome, in the order of the stores and of their jobs files. Each job returned
    carries ``person``: whose job it is (``None``: the owner's). ``claims``: see
    :func:`due_jobs`."""
    if isinstance(stores, JobStore):
        stores = [stores]
    claimed = [(store, job) for store in stores for job in due_jobs(store, now, claims)]
    if not claimed:
        return []

    def one(pair: tuple[JobStore, dict[str, Any]]) -> tuple[dict[str, Any], AgentOutcome]:
        store, job = pair
        job = {**job, "person": store.person}
        if on_start is not None:
            on_start(job)
        return job, run_claimed(store, runner, job, cancel=cancel)

    if len(claimed) == 1 or max_parallel <= 1:
        return [one(pair) for pair in claimed]
    workers = min(max_parallel, len(claimed))
    with ThreadPoolExecutor(workers, thread_name_prefix="hermes-cron") as pool:
        return list(pool.map(one, claimed))


def run_claimed(
    store: JobStore,
    runner: AgentRunner,
    job: dict[str, Any],
    *,
    cancel: threading.Event | None = None,
) -> AgentOutcome:
    """Run a claimed job of ``store`` for the store's person, deliver its answer and record the
    result (never raises for a failed run: that is recorded in the job)."""
    started = time.time()
    try:
        outcome = runner.run(
            AgentTask(
                prompt=job["prompt"],
                source=SOURCE,
                toolsets=job.get("toolsets"),
                model=job.get("model"),
                provider=job.get("provider"),
                system_context=_context(job),
                cancel_event=cancel,
                exclude_toolsets=NOT_FOR_JOBS,
                person=store.person,
                config_overrides={"agent.job": str(job["id"])},  # spend per job
                trace_context=job.get("origin") or {},  # a tracer links the run to it
            )
        )
    except Exception as exc:  # a runner must not raise; if one does, the job records it
        outcome = AgentOutcome(session_id="", text="", status="error", error=f"{exc}")
    try:
        output = deliver(
            store.dir,
            job,
            outcome,
            started,
            outbox=cron_dir(store.home) / "outbox",
            person=store.person,
        )
        delivery_error = None
    except OSError as exc:
        output, delivery_error = None, f"delivery failed: {exc}"
    _record(store, job["id"], outcome, started, output, delivery_error)
    return outcome


def _record(
    store: JobStore,
    job_id: str,
    outcome: AgentOutcome,
    started: float,
    output: Path | None,
    delivery_error: str | None,
) -> None:
    with store.transaction() as jobs:
        job = next((j for j in jobs if j.get("id") == job_id), None)
        if job is None:  # removed while it ran
            return
        job["running"] = None
        job["last_run_at"] = started
        job["last_status"] = outcome.status
        job["last_error"] = outcome.error or delivery_error or None
        job["last_session_id"] = outcome.session_id or None
        job["last_output"] = str(output) if output else None
        job["runs"] = int(job.get("runs") or 0) + 1
        if job.get("kind") == "once" and job.get("state") == "scheduled":
            job["state"] = "completed"
            job["next_run_at"] = None


def _context(job: dict[str, Any]) -> str:
    target = job.get("deliver") or "local"
    where = (
        "a file for the user to read later"
        if target == "local"
        else f"the chat {target} (and a file)"
    )
    return (
        f"You are running as the scheduled job '{job['name']}' ({schedule_of(job).describe()}). "
        "No user is present: do not ask questions; do the task with your tools and your best "
        f"judgement. Your final answer is delivered as it is to {where}, so make it the "
        "complete report the user wants to read."
    )


def deliver(
    cron_home: Path,
    job: dict[str, Any],
    outcome: AgentOutcome,
    started: float,
    *,
    outbox: Path | None = None,
    person: str | None = None,
) -> Path:
    """Write the run's answer to ``<cron_home>/output/<job id>/<time>.md`` (``cron_home``: the
    cron folder of the job's person); for a ``PLATFORM:CHAT`` target also queue it in
    ``outbox`` (default ``<cron_home>/outbox``: the home's one queue the gateway reads), naming
    the job's ``person`` when it is not the owner's. Returns the output file."""
    stamp = _dt.datetime.fromtimestamp(started).strftime("%Y%m%d-%H%M%S")
    folder = cron_home / "output" / str(job["id"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stamp}.md"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{stamp}-{n}.md"
    when = _dt.datetime.fromtimestamp(started).astimezone().isoformat(timespec="seconds")
    lines = [
        f"# {job['name']}",
        "",
        f"- job: {job['id']} ({schedule_of(job).describe()})",
        f"- run at: {when}",
        f"- status: {outcome.status}",
        f"- session: {outcome.session_id or '-'}",
    ]
    if outcome.error:
        lines.append(f"- error: {outcome.error}")
    lines += ["", outcome.text or "(no answer)", ""]
    _atomic_write(path, "\n".join(lines))
    target = job.get("deliver") or "local"
    if target != "local":
        platform, _, chat = target.partition(":")
        text = (
            outcome.text
            if outcome.status == "completed"
            else (
                f"Scheduled job '{job['name']}' ended with {outcome.status}"
                + (f": {outcome.error}" if outcome.error else "")
                + (f"\n\n{outcome.text}" if outcome.text else "")
            )
        )
        message = {
            "id": uuid.uuid4().hex,
            "platform": platform,
            "chat_id": chat,
            "text": text,
            "job_id": job["id"],
            "job_name": job["name"],
            "status": outcome.status,
            "session_id": outcome.session_id,
            "output_file": str(path),
            "created_at": time.time(),
        }
        if person is not None:
            message["person"] = person
        outbox = outbox or cron_home / "outbox"
        outbox.mkdir(parents=True, exist_ok=True)
        _atomic_write(outbox / f"{message['id']}.json", json.dumps(message, ensure_ascii=False))
    return path


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
