"""``hermes batch run | resume | status | export | list`` (and the ``worker`` the coordinator
starts)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import click

from hermes_hookspecs import HermesError

from .cli_context import batch_config, command_context, open_run_table
from .cli_worker import queue_worker_command, work_here, worker_command
from .dataset import dataset_hash, read_rows
from .opening import check_name, run_dir
from .progress import Progress, summary_line
from .ratelimit import parse_limits
from .sampling import parse_probabilities
from .schema import STATES, Counts
from .table import RunTable

EXECUTORS = ("local", "ray", "queue")


def _csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


@click.group("batch")
def batch_group() -> None:
    """Batch runs over datasets: run, status, resume, export, list (docs/batch.md)."""


executor_option = click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    help="Where rows run: local worker processes, tasks of a Ray cluster, or jobs of the "
    "team's work queue (default: batch.executor, else local).",
)
ray_address_option = click.option(
    "--ray-address",
    metavar="ADDRESS",
    help="The Ray cluster to join (default: batch.ray_address, else RAY_ADDRESS, else a "
    "Ray started for this run).",
)
workers_option = click.option(
    "--workers", type=click.IntRange(min=1), help="Rows run at the same time (default: 4)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


@batch_group.command("run")
@click.argument("dataset", type=click.Path(dir_okay=False))
@click.option("--name", "name", required=True, help="The run's name (resume and export use it).")
@workers_option
@click.option("--model", help="The model (default: the configured one; a row may name its own).")
@click.option("--toolsets", help="Toolsets every row gets, comma-separated.")
@click.option(
    "--toolset-prob",
    "toolset_probs",
    multiple=True,
    metavar="NAME=P",
    help="Offer toolset NAME to a row with probability P, drawn per row (repeatable).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The run's sampling seed.")
@click.option("--max-turns", type=click.IntRange(min=1), help="Model calls per row at most.")
@click.option("--budget-usd", type=click.FloatRange(min=0), help="Stop taking rows once spent.")
@click.option(
    "--max-attempts",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Attempts of a row that fails before it is recorded failed.",
)
@click.option("--row-timeout", type=click.FloatRange(min=0.1), help="Seconds a row may take.")
@click.option(
    "--rate-limit",
    "rate_limits",
    multiple=True,
    metavar="PROVIDER=N",
    help="At most N model calls a minute to PROVIDER across the run ('*': each provider).",
)
@click.option(
    "--lease-seconds",
    type=click.FloatRange(min=0.2),
    help="Seconds a silent worker keeps its row before the row runs elsewhere "
    "(default: batch.lease_seconds, else 60).",
)
@click.option(
    "--image",
    metavar="IMAGE",
    help="Run every row's commands in a container of this Docker image (a row's own 'image' wins).",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="NAME",
    help="A quality filter that discards rows (reasoning, tool-names, turns, or a plugin's).",
)
@executor_option
@ray_address_option
@json_option
def run_command(
    dataset: str,
    name: str,
    workers: int | None,
    model: str | None,
    toolsets: str | None,
    toolset_probs: tuple[str, ...],
    seed: int,
    max_turns: int | None,
    budget_usd: float | None,
    max_attempts: int,
    row_timeout: float | None,
    rate_limits: tuple[str, ...],
    lease_seconds: float | None,
    image: str | None,
    filters: tuple[str, ...],
    executor: str | None,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """Run the agent over every row of DATASET (JSON lines, each with a 'prompt')."""
    check_name(name)
    if image is not None:
        from .containers import image_problem

        problem = image_problem(image)
        if problem:
            raise HermesError(f"--image: {problem}")
    path = Path(dataset).expanduser().resolve()
    if not path.is_file():
        raise HermesError(f"no dataset at {dataset}")
    config = batch_config()
    if filters:
        from .filters import chosen_filters

        chosen_filters(filters, command_context().registered("hermes_register_batch_filters"))
    settings: dict[str, Any] = {
        "model": model,
        "toolsets": _csv(toolsets),
        "toolset_probs": parse_probabilities(toolset_probs),
        "seed": seed,
        "max_turns": max_turns,
        "budget_usd": budget_usd,
        "max_attempts": max_attempts,
        "row_timeout": row_timeout,
        "rate_limits": parse_limits(rate_limits),
        "lease_seconds": lease_seconds or float(config.get("lease_seconds") or 60),
        "filters": list(filters),
        "dataset_dir": str(path.parent),
        "image": image,
    }
    _check_executor(executor)
    table = open_run_table()
    digest = dataset_hash(path)
    table.create_run(name, str(path), digest, settings)
    try:
        _load(table, name, path, digest)
    except HermesError:  # a bad dataset leaves no run behind: fix it and run again
        table.delete_run(name)
        raise
    _execute(table, name, workers, executor, ray_address, as_json)


def _check_executor(executor: str | None) -> None:
    """Refuse, before anything is made, an executor this home cannot use."""
    if (executor or batch_config().get("executor")) == "queue":
        from .queue_executor import queue_url

        queue_url(command_context().config)


def _load(table: RunTable, name: str, path: Path, digest: str) -> None:
    try:
        total = table.add_rows(name, read_rows(path, digest))
    except OSError as exc:
        raise HermesError(f"the dataset cannot be read: {exc}") from None
    except HermesError as exc:
        message = str(exc)
        if message.startswith("line "):  # a repeated id, found by the table
            message = f"{path.name}:{message.removeprefix('line ')}"
        raise HermesError(message) from None
    table.set_run(name, state="ready", total_rows=total)


def _execute(
    table: RunTable,
    name: str,
    workers: int | None,
    executor: str | None,
    ray_address: str | None,
    as_json: bool,
) -> None:
    config = batch_config()
    count = workers or int(config.get("workers") or 4)
    executor = executor or str(config.get("executor") or "local")
    me = f"{socket.gethostname()}:{os.getpid()}"
    from .local import holder_alive

    present = table.take_coordinator(name, me, holder_alive)
    if present is not None:
        raise HermesError(f"batch run {name!r} is being run by {present}")
    table.set_run(name, state="running", stop_reason=None)
    progress = Progress(enabled=not as_json)
    context = command_context()
    env = dict(os.environ, HERMES_HOME=str(context.home))
    log = run_dir(context.home, name) / "workers.log"
    try:
        if executor == "ray":
            from .ray_executor import coordinate_ray

            address = ray_address or config.get("ray_address")
            counts = coordinate_ray(
                table, name, env, log, count, address=address, on_progress=progress.update
            )
        elif executor == "queue":
            from .queue_executor import coordinate_queue

            counts = coordinate_queue(
                table, name, context.config, count, on_progress=progress.update
            )
        else:
            from .local import LocalWorkers, coordinate

            local = LocalWorkers(name, env, log, target=lambda: work_here(name))
            counts = coordinate(table, name, local, count, on_progress=progress.update)
    except BaseException as exc:  # the run stops here: say why, and let resume take it
        if table.run(name).state == "running":
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
            table.set_run(name, state="stopped", stop_reason=why.splitlines()[0][:500])
        table.set_run(name, coordinator=None)
        raise
    finally:
        progress.close()
    run = table.run(name)
    if run.state == "running":
        table.set_run(name, state="finished")
    table.set_run(name, coordinator=None)
    _report(table, name, counts, as_json)


def _report(table: RunTable, name: str, counts: Counts, as_json: bool) -> None:
    run = table.run(name)
    if as_json:
        click.echo(json.dumps(_status(run.name, run.state, run.stop_reason, counts)))
        return
    click.echo(summary_line(name, run.state, run.stop_reason, counts))


def _status(name: str, state: str, reason: str | None, counts: Counts) -> dict[str, Any]:
    return {
        "run": name,
        "state": state,
        "stop_reason": reason,
        "rows": counts.total,
        **{s: counts[s] for s in STATES},
        "lost_attempts": counts.lost_attempts,
        "input_tokens": counts.input_tokens,
        "output_tokens": counts.output_tokens,
        "cost_usd": round(counts.cost_usd, 6),
    }


@batch_group.command("resume")
@click.argument("name")
@workers_option
@click.option("--retry-failed", is_flag=True, help="Run the failed rows again too.")
@click.option("--retry-discarded", is_flag=True, help="Run the discarded rows again too.")
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0),
    help="A new dollar budget for the whole run (what was spent counts towards it).",
)
@executor_option
@ray_address_option
@json_option
def resume_command(
    name: str,
    workers: int | None,
    retry_failed: bool,
    retry_discarded: bool,
    budget_usd: float | None,
    executor: str | None,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """Go on with run NAME: rows that did not finish run again; completed rows never do."""
    _check_executor(executor)
    table = open_run_table()
    run = table.run(check_name(name))
    if run.state == "loading":  # killed while reading the dataset in: read the rest
        path = Path(run.dataset)
        if not path.is_file() or dataset_hash(path) != run.dataset_hash:
            raise HermesError(
                f"the dataset {run.dataset} changed or is gone since run {name!r} started"
            )
        _load(table, name, path, run.dataset_hash)
    if budget_usd is not None:
        table.update_settings(name, budget_usd=budget_usd)
    table.requeue(
        name, [s for s, on in (("failed", retry_failed), ("discarded", retry_discarded)) if on]
    )
    _execute(table, name, workers, executor, ray_address, as_json)


@batch_group.command("status")
@click.argument("name")
@click.option(
    "--rows",
    "row_state",
    type=click.Choice(STATES),
    help="Also list the rows in this state (id, attempts, worker, session, why).",
)
@json_option
def status_command(name: str, row_state: str | None, as_json: bool) -> None:
    """Where run NAME stands: rows by state, tokens, cost."""
    table = open_run_table()
    run = table.run(check_name(name))
    counts = table.counts(name)
    rows = list(table.rows(name, [row_state])) if row_state else []
    if as_json:
        found = _status(run.name, run.state, run.stop_reason, counts)
        if row_state:
            found["row_list"] = [
                {
                    "id": r.key,
                    "line": r.line,
                    "state": r.state,
                    "attempts": r.attempts,
                    "worker": r.worker,
                    "session_id": r.session_id,
                    "image": r.image,
                    "error": r.error,
                    "discard_reason": r.discard_reason,
                    "attempt_list": table.attempts(name, r.key),
                }
                for r in rows
            ]
        click.echo(json.dumps(found))
        return
    click.echo(summary_line(name, run.state, run.stop_reason, counts))
    click.echo(f"dataset {run.dataset}; table {table.where}")
    for r in rows:
        why = r.error or r.discard_reason or ""
        click.echo(
            f"  {r.key}  line {r.line}  attempts {r.attempts}  {r.worker or '-'}  "
            f"{r.session_id or '-'}  {why}"
        )


@batch_group.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """The batch runs of this home, oldest first."""
    table = open_run_table()
    runs = table.list_runs()
    if as_json:
        click.echo(
            json.dumps(
                [_status(r.name, r.state, r.stop_reason, table.counts(r.name)) for r in runs]
            )
        )
        return
    if not runs:
        click.echo("no batch runs yet (start one: hermes batch run DATASET.jsonl --name RUN)")
    for run in runs:
        click.echo(summary_line(run.name, run.state, run.stop_reason, table.counts(run.name)))


@batch_group.command("export")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["sharegpt", "openai"]),
    default="sharegpt",
    show_default=True,
    help="Hermes ShareGPT trajectories, or OpenAI chat messages.",
)
@click.option(
    "--only",
    "only",
    type=click.Choice(["completed", "failed", "discarded"]),
    multiple=True,
    help="Only rows in this state (repeatable; default: completed and failed rows).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="The file to write (default: $HERMES_HOME/batch/NAME/NAME.FORMAT.jsonl).",
)
def export_command(name: str, fmt: str, only: tuple[str, ...], output: str | None) -> None:
    """Write the outputs of run NAME as JSON lines, and statistics.json beside them."""
    from .export import export

    table = open_run_table()
    table.run(check_name(name))
    target = (
        Path(output).expanduser()
        if output
        else run_dir(command_context().home, name) / f"{name}.{fmt}.jsonl"
    )
    written, stats_path = export(table, name, fmt, list(only) or ["completed", "failed"], target)
    click.echo(f"{written} rows written to {target}; statistics in {stats_path}")


batch_group.add_command(worker_command)
batch_group.add_command(queue_worker_command)
