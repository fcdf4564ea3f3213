"""``hermes cron ...``: manage and run scheduled jobs.

``list``, ``status``, ``tick`` and ``daemon`` cover the jobs of the owner and of every person of
the home; the commands that change one job work on the owner's jobs, or with ``--person ID`` on
that person's."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import time
from collections.abc import Callable
from typing import Any

import click

from hermes_hookspecs import CommandContext, HermesError

from .jobs import JobError, JobStore, all_stores
from .schedule import ScheduleError
from .settings import SettingsError, setting


def _context() -> CommandContext:
    context: CommandContext = click.get_current_context().obj
    return context


def _store(person: str | None = None) -> JobStore:
    """The jobs of ``person`` (``None``: the owner) of this invocation's home; a one-line
    ``HermesError`` for an invalid person id."""
    return JobStore(_context().home, person)


def _stores() -> list[JobStore]:
    """The jobs of the owner and of every person of this invocation's home."""
    return all_stores(_context().home)


person_option = click.option(
    "--person",
    metavar="ID",
    help="A job of this person (a gateway's user); default: the home's owner (yours).",
)


def _one_line_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Our errors become hermes's one-line errors (exit code 1)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (JobError, ScheduleError, SettingsError) as exc:
            raise HermesError(str(exc)) from None

    return wrapper


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return "-"
    return _dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _toolsets(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _show(job: dict[str, Any], verb: str) -> None:
    click.echo(
        f"{verb} job {job['id']} {job['name']!r}: {job['schedule']}; next run "
        f"{_when(job.get('next_run_at')) if job['state'] == 'scheduled' else job['state']}"
    )


@click.group("cron")
def cron_group() -> None:
    """Scheduled jobs: list, create, edit, pause, resume, run, remove, status, tick, daemon."""


@cron_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include completed one-time jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print the jobs as JSON.")
@click.option("--person", metavar="ID", help="Only this person's jobs (default: everyone's).")
@_one_line_errors
def list_jobs(show_all: bool, as_json: bool, person: str | None) -> None:
    """List the jobs of the owner and of every person (marked with their person)."""
    stores = [_store(person)] if person is not None else _stores()
    jobs = [
        {**j, "person": store.person}
        for store in stores
        for j in store.load()
        if show_all or j.get("state") != "completed"
    ]
    if as_json:
        click.echo(json.dumps(jobs, indent=2, ensure_ascii=False))
        return
    if not jobs:
        click.echo("no scheduled jobs (create one: hermes cron create 'every 1h' 'PROMPT')")
        return
    people = any(j["person"] for j in jobs)  # the owner alone: no person column
    whose = f"{'PERSON':<12} " if people else ""
    click.echo(
        f"{whose}{'ID':<9} {'STATE':<10} {'NEXT RUN':<16} {'LAST':<15} {'SCHEDULE':<24} NAME"
    )
    for job in jobs:
        nxt = _when(job.get("next_run_at")) if job.get("state") == "scheduled" else "-"
        last = job.get("last_status") or "-"
        if job.get("running"):
            last = "running"
        schedule = str(job["schedule"])
        schedule = schedule if len(schedule) <= 24 else schedule[:23] + "…"
        mark = f"{job['person'] or 'owner':<12} " if people else ""
        click.echo(
            f"{mark}{job['id']:<9} {job['state']:<10} {nxt:<16} {last:<15} {schedule:<24} "
            f"{job['name']}"
        )


@cron_group.command("create")
@click.argument("schedule")
@click.argument("prompt")
@click.option("--name", help="A short name (default: the start of the prompt).")
@click.option("-t", "--toolsets", metavar="A,B", help="Toolsets of the job's agent.")
@click.option("-m", "--model", help="Model of the job's agent.")
@click.option("--provider", help="Provider of the job's agent.")
@click.option(
    "--deliver",
    metavar="TARGET",
    help="'local' (default: a file under cron/output) or PLATFORM:CHAT_ID.",
)
@person_option
@_one_line_errors
def create(
    schedule: str,
    prompt: str,
    name: str | None,
    toolsets: str | None,
    model: str | None,
    provider: str | None,
    deliver: str | None,
    person: str | None,
) -> None:
    """Create a job. SCHEDULE: a cron expression ('0 9 * * 1-5'), 'every 30m', 'at
    2026-12-24T09:00' or 'in 2h'."""
    job = _store(person).create(
        schedule,
        prompt,
        name=name,
        toolsets=_toolsets(toolsets),
        model=model,
        provider=provider,
        deliver=deliver,
    )
    _show(job, "created")


@cron_group.command("edit")
@click.argument("job")
@click.option("--schedule", help="A new schedule.")
@click.option("--prompt", help="A new prompt.")
@click.option("--name", help="A new name.")
@click.option("-t", "--toolsets", metavar="A,B", help="New toolsets ('' for the configured ones).")
@click.option("-m", "--model", help="A new model ('' for the configured one).")
@click.option("--provider", help="A new provider ('' for the configured one).")
@click.option("--deliver", metavar="TARGET", help="'local' or PLATFORM:CHAT_ID.")
@person_option
@_one_line_errors
def edit(
    job: str,
    schedule: str | None,
    prompt: str | None,
    name: str | None,
    toolsets: str | None,
    model: str | None,
    provider: str | None,
    deliver: str | None,
    person: str | None,
) -> None:
    """Change a job (JOB: id, id prefix or name)."""
    changed = _store(person).update(
        job,
        schedule=schedule,
        prompt=prompt,
        name=name,
        toolsets=_toolsets(toolsets),
        model=model,
        provider=provider,
        deliver=deliver,
    )
    _show(changed, "changed")


@cron_group.command("pause")
@click.argument("job")
@person_option
@_one_line_errors
def pause(job: str, person: str | None) -> None:
    """Pause a job."""
    _show(_store(person).pause(job), "paused")


@cron_group.command("resume")
@click.argument("job")
@person_option
@_one_line_errors
def resume(job: str, person: str | None) -> None:
    """Resume a paused job (from now; runs missed while paused are skipped)."""
    _show(_store(person).resume(job), "resumed")


@cron_group.command("remove")
@click.argument("job")
@person_option
@_one_line_errors
def remove(job: str, person: str | None) -> None:
    """Delete a job."""
    removed = _store(person).remove(job)
    click.echo(f"removed job {removed['id']} {removed['name']!r}")


@cron_group.command("run")
@click.argument("job")
@person_option
@_one_line_errors
def run(job: str, person: str | None) -> None:
    """Run a job now, in this process (for its person), and print its answer."""
    from .scheduler import claim_now, run_claimed

    store = _store(person)
    claimed = claim_now(store, job)
    outcome = run_claimed(store, _context().agent_runner(), claimed)
    if outcome.text:
        click.echo(outcome.text)
    if outcome.status != "completed":
        raise HermesError(
            f"job {claimed['id']} ended with {outcome.status}"
            + (f": {outcome.error}" if outcome.error else "")
        )


@cron_group.command("tick")
@_one_line_errors
def tick_command() -> None:
    """Run every due job (the owner's and every person's) once and exit (for a system
    scheduler calling hermes)."""
    from .claims import run_claims
    from .scheduler import tick

    config = _context().config
    done = tick(
        _stores(),
        _context().agent_runner(),
        max_parallel=int(setting(config, "max_parallel", 3, 1)),
        claims=run_claims(config),
    )
    for job, outcome in done:
        whose = f" (person {job['person']})" if job.get("person") else ""
        click.echo(
            f"{job['id']} {job['name']!r}{whose}: {outcome.status}"
            + (f": {outcome.error}" if outcome.error else "")
        )
    if not done:
        click.echo("no job is due")


@cron_group.command("daemon")
@click.option("--interval", type=float, help="Seconds between checks (cron.tick_seconds, 30).")
@_one_line_errors
def daemon(interval: float | None) -> None:
    """Run due jobs (the owner's and every person's) until stopped (SIGTERM or Ctrl-C); one
    daemon per home."""
    from .claims import run_claims
    from .daemon import run_daemon

    config = _context().config
    every = interval if interval is not None else setting(config, "tick_seconds", 30, 1)
    run_daemon(
        _store(),
        _context().agent_runner(),
        interval=every,
        max_parallel=int(setting(config, "max_parallel", 3, 1)),
        log=lambda line: click.echo(line, err=True),
        claims=run_claims(config),
    )


@cron_group.command("status")
@_one_line_errors
def status() -> None:
    """Whether a daemon runs, and what is due next."""
    from .daemon import daemon_running, read_status

    store = _store()
    info = read_status(store) or {}
    if daemon_running(store):
        ago = time.time() - float(info.get("last_tick") or info.get("started_at") or time.time())
        click.echo(f"daemon: running (pid {info.get('pid', '?')}, last check {ago:.0f}s ago)")
    else:
        click.echo("daemon: not running (start it: hermes cron daemon)")
    jobs = [{**j, "person": s.person} for s in _stores() for j in s.load()]
    active = [j for j in jobs if j.get("state") == "scheduled" and j.get("next_run_at")]
    paused = sum(1 for j in jobs if j.get("state") == "paused")
    running = [j for j in jobs if j.get("running")]
    click.echo(f"jobs: {len(active)} scheduled, {paused} paused, {len(running)} running")
    if active:
        nxt = min(active, key=lambda j: j["next_run_at"])
        whose = f" (person {nxt['person']})" if nxt["person"] else ""
        click.echo(f"next: {nxt['id']} {nxt['name']!r}{whose} at {_when(nxt['next_run_at'])}")
