"""``$HERMES_HOME/cron/jobs.json``: the jobs, read and changed under a file lock shared by every
process using the same home, and written atomically (a reader never sees half a file).

The jobs of the home's owner are in ``$HERMES_HOME/cron``; each person a gateway serves has their
own in ``$HERMES_HOME/people/<person>/cron`` (:func:`hermes_hookspecs.person_home`), so the jobs
one person sees and changes are theirs alone."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes_hookspecs import PEOPLE_DIR, HermesError, check_person, person_home

from .schedule import Schedule, parse

FORMAT_VERSION = 1


class JobError(Exception):
    """A job operation that cannot be done; the message is one readable line."""


def cron_dir(home: Path | str) -> Path:
    """``$HERMES_HOME/cron``."""
    return Path(home) / "cron"


class JobStore:
    """The jobs of one person (``None``: the owner) of one hermes home: in ``<home>/cron`` for
    the owner, in ``<home>/people/<person>/cron`` for a person.

    Every change goes through :meth:`transaction`: an exclusive ``flock`` on ``jobs.lock``, a
    fresh read, the change, and an atomic replace of ``jobs.json``; so two processes (a daemon and
    a ``hermes cron create``) never lose each other's changes.

    :raises HermesError: ``person`` is not a valid person id.
    """

    def __init__(self, home: Path | str, person: str | None = None) -> None:
        self.home = Path(home)
        self.person = check_person(person)
        self.dir = cron_dir(person_home(self.home, self.person))
        self.path = self.dir / "jobs.json"
        self.lock_path = self.dir / "jobs.lock"

    def __repr__(self) -> str:
        return f"JobStore({str(self.home)!r}, person={self.person!r})"

    # --- reading and writing ----------------------------------------------------------------

    def load(self) -> list[dict[str, Any]]:
        """The jobs as stored now (no lock needed: the file is replaced atomically)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise JobError(f"{self.path} is not valid JSON ({exc}); fix or remove it") from None
        jobs = data.get("jobs") if isinstance(data, dict) else None
        if not isinstance(jobs, list):
            raise JobError(f"{self.path} has no 'jobs' list; fix or remove it")
        return [job for job in jobs if isinstance(job, dict)]

    @contextlib.contextmanager
    def transaction(self) -> Iterator[list[dict[str, Any]]]:
        """Hold the lock, yield the jobs list to change in place, then save it atomically (only
        when the block ends without an exception)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                jobs = self.load()
                before = json.dumps(jobs, sort_keys=True)
                yield jobs
                if json.dumps(jobs, sort_keys=True) != before:
                    self._write(jobs)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, jobs: list[dict[str, Any]]) -> None:
        text = json.dumps({"version": FORMAT_VERSION, "jobs": jobs}, indent=2, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(prefix=".jobs-", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    # --- operations ---------------------------------------------------------------------------

    def create(
        self,
        schedule_text: str,
        prompt: str,
        *,
        name: str | None = None,
        toolsets: list[str] | None = None,
        model: str | None = None,
        provider: str | None = None,
        deliver: str | None = None,
        now: float | None = None,
        origin: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Add a job and return it; ``origin`` is the trace context of the call that created
        it (its runs are linked to that trace). Raises ``ScheduleError`` / :class:`JobError`."""
        now = time.time() if now is None else now
        schedule = parse(schedule_text, now)
        if not prompt.strip():
            raise JobError("the prompt is empty: say what the agent should do on each run")
        job: dict[str, Any] = {
            "id": uuid.uuid4().hex[:8],
            "name": (name or _default_name(prompt)).strip(),
            "prompt": prompt,
            "schedule": schedule.text,
            "kind": schedule.kind,
            "toolsets": list(toolsets) if toolsets else None,
            "model": model or None,
            "provider": provider or None,
            "deliver": validate_target(deliver or "local"),
            "state": "scheduled",
            "created_at": now,
            "next_run_at": schedule.next_after(now),
            "last_run_at": None,
            "last_status": None,
            "last_error": None,
            "last_session_id": None,
            "last_output": None,
            "runs": 0,
            "running": None,
        }
        if origin:
            job["origin"] = dict(origin)
        with self.transaction() as jobs:
            jobs.append(job)
        return job

    def update(self, ref: str, **changes: Any) -> dict[str, Any]:
        """Change fields of a job (``schedule``, ``prompt``, ``name``, ``toolsets``, ``model``,
        ``provider``, ``deliver``); a new schedule recomputes the next run."""
        with self.transaction() as jobs:
            job = find(jobs, ref)
            now = time.time()
            for key, value in changes.items():
                if value is None:
                    continue
                if key == "schedule":
                    schedule = parse(value, now)
                    job["schedule"], job["kind"] = schedule.text, schedule.kind
                    if job["state"] != "paused":
                        job["state"] = "scheduled"
                        job["next_run_at"] = schedule.next_after(now)
                elif key == "deliver":
                    job["deliver"] = validate_target(value)
                elif key == "prompt":
                    if not str(value).strip():
                        raise JobError("the prompt is empty")
                    job["prompt"] = value
                elif key in ("name", "model", "provider"):
                    job[key] = value or None
                elif key == "toolsets":
                    job["toolsets"] = list(value) or None
                else:
                    raise JobError(f"unknown job field {key!r}")
            return dict(job)

    def pause(self, ref: str) -> dict[str, Any]:
        """Stop a job from running until it is resumed."""
        with self.transaction() as jobs:
            job = find(jobs, ref)
            if job["state"] == "completed":
                raise JobError(f"job {job['id']} ran its one time already; nothing to pause")
            job["state"] = "paused"
            return dict(job)

    def resume(self, ref: str) -> dict[str, Any]:
        """Schedule a paused job again, from now (runs missed while paused are not made up)."""
        with self.transaction() as jobs:
            job = find(jobs, ref)
            if job["state"] != "paused":
                raise JobError(f"job {job['id']} is not paused (it is {job['state']})")
            nxt = schedule_of(job).next_after(time.time())
            if nxt is None:
                raise JobError(
                    f"job {job['id']} was due once, at a time now past; edit its schedule"
                )
            job["state"], job["next_run_at"] = "scheduled", nxt
            return dict(job)

    def remove(self, ref: str) -> dict[str, Any]:
        """Delete a job."""
        with self.transaction() as jobs:
            job = find(jobs, ref)
            jobs.remove(job)
            return job

    def trigger(self, ref: str) -> dict[str, Any]:
        """Make a job due now, so the next tick runs it (a paused job stays paused)."""
        with self.transaction() as jobs:
            job = find(jobs, ref)
            if job["state"] == "paused":
                raise JobError(f"job {job['id']} is paused; resume it first")
            job["next_run_at"] = time.time()
            if job["state"] == "completed":
                job["state"] = "scheduled"
            return dict(job)


def people_stores(home: Path | str) -> list[JobStore]:
    """The job stores of the people of ``home`` who have a jobs file
    (``<home>/people/<person>/cron/jobs.json``), sorted by person id; folders whose name is not
    a person id are ignored."""
    stores = []
    try:
        folders = sorted((Path(home) / PEOPLE_DIR).iterdir())
    except OSError:
        return []
    for folder in folders:
        try:
            person = check_person(folder.name)
        except HermesError:
            continue
        if (folder / "cron" / "jobs.json").is_file():
            stores.append(JobStore(home, person))
    return stores


def all_stores(home: Path | str) -> list[JobStore]:
    """The owner's job store of ``home``, then those of its people (:func:`people_stores`)."""
    return [JobStore(home), *people_stores(home)]


def schedule_of(job: dict[str, Any]) -> Schedule:
    """The parsed schedule of a stored job."""
    return parse(job["schedule"], now=0.0)


def find(jobs: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    """The one job ``ref`` names: its id, a unique id prefix, or its name."""
    ref = str(ref).strip()
    exact = [j for j in jobs if j.get("id") == ref]
    if exact:
        return exact[0]
    matches = [j for j in jobs if str(j.get("id", "")).startswith(ref) and ref] or [
        j for j in jobs if j.get("name") == ref
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise JobError(f"no job {ref!r} (see 'hermes cron list')")
    ids = ", ".join(j["id"] for j in matches)
    raise JobError(f"{ref!r} names several jobs ({ids}); use the id")


def validate_target(target: str) -> str:
    """``local`` (a file under cron/output only) or ``PLATFORM:CHAT_ID`` (also a gateway chat)."""
    target = str(target).strip()
    if target in ("local", "file", ""):
        return "local"
    platform, sep, chat = target.partition(":")
    if not sep or not platform.strip() or not chat.strip():
        raise JobError(
            f"delivery target {target!r} is not 'local' or 'PLATFORM:CHAT_ID' "
            "(e.g. 'telegram:123456')"
        )
    return f"{platform.strip()}:{chat.strip()}"


def _default_name(prompt: str) -> str:
    words = " ".join(prompt.split())
    return words if len(words) <= 40 else words[:39] + "…"
