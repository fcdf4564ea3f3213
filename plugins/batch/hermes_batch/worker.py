"""A worker: takes pending rows of a run from the run table and runs them one after another,
until none is pending, the run stops (budget, interrupt) or its coordinator is gone."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_hookspecs import AgentRunner, SessionStore

from .rowrun import Filter, RowResult, run_row
from .schema import Counts, RunInfo
from .table import RunTable


def worker_id() -> str:
    """This process's name in the run table: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def budget_left(settings: dict[str, object], spent: float) -> bool:
    """Whether a run with ``settings`` that spent ``spent`` dollars may start another row."""
    budget = settings.get("budget_usd")
    return budget is None or spent < float(budget)  # type: ignore[arg-type]


def stop_reason(table: RunTable, run: RunInfo, counts: Counts) -> str | None:
    """Why running run ``run`` must stop taking rows: its budget is spent, or its first rows
    all failed alike; ``None`` when it goes on."""
    budget = run.settings.get("budget_usd")
    if budget is not None and run.spent_usd >= float(budget):
        return f"budget of ${budget} spent"
    error = table.early_failure(run.name, counts)
    if error is not None:
        return f"the first {counts['failed']} rows failed alike: {error}"
    return None


def work(
    *,
    table: RunTable,
    name: str,
    runner: AgentRunner,
    store: SessionStore,
    run_dir: Path,
    filters: Sequence[tuple[str, Filter]] = (),
    should_stop: Callable[[], bool] = lambda: False,
    on_row: Callable[[RowResult], None] | None = None,
    config: Mapping[str, Any] | None = None,
) -> int:
    """Run rows of run ``name`` until there is nothing left to do; returns how many."""
    me = worker_id()
    done = 0
    while not should_stop():
        run = table.run(name)
        if run.state != "running" or not budget_left(run.settings, run.spent_usd):
            break
        claim = table.claim(name, me, float(run.settings.get("lease_seconds") or 60))
        if claim is None:
            break
        result = run_row(
            runner=runner,
            store=store,
            table=table,
            claim=claim,
            settings=run.settings,
            run_dir=run_dir,
            filters=filters,
            config=config,
        )
        done += 1
        if on_row is not None:
            on_row(result)
        if result.state == "failed":  # stop at once when the first rows all fail alike
            reason = stop_reason(table, table.run(name), table.counts(name))
            if reason is not None:
                table.set_run(name, state="stopped", stop_reason=reason)
    return done


def orphaned(parent: int) -> Callable[[], bool]:
    """A ``should_stop`` that says yes once the process that started this one is gone (its
    coordinator was killed: finish the row in hand, take no other)."""
    return lambda: os.getppid() != parent


REPLY = "@@hermes-batch "
"""How a served row's answer starts on standard output (anything else there is not one)."""


def serve(
    *,
    table: RunTable,
    name: str,
    runner: AgentRunner,
    store: SessionStore,
    run_dir: Path,
    filters: Sequence[tuple[str, Filter]] = (),
    lines: Iterable[str],
    reply: Callable[[str], None],
    config: Mapping[str, Any] | None = None,
) -> int:
    """Run the rows a coordinator hands out one at a time: each line of ``lines`` is
    ``{"key": …, "attempt": …}`` (a row the coordinator claimed), each answer a line
    ``@@hermes-batch {"key": …, "state": …}``. Returns how many rows ran."""
    done = 0
    settings = table.run(name).settings
    for line in lines:
        if not line.strip():
            continue
        asked = json.loads(line)
        claim = table.claimed(name, str(asked["key"]), int(asked["attempt"]))
        state = "lost"
        if claim is not None and table.adopt(claim, worker_id()):
            result = run_row(
                runner=runner,
                store=store,
                table=table,
                claim=claim,
                settings=settings,
                run_dir=run_dir,
                filters=filters,
                config=config,
            )
            state = result.state
            done += 1
        reply(REPLY + json.dumps({"key": asked["key"], "state": state}))
    return done


def exit_with_parent(parent: int, interval: float = 0.2) -> None:
    """End this process at once when ``parent`` (the Ray worker serving rows through it) is
    gone: the row in hand is abandoned, and the coordinator gives it to another attempt."""

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watch, name="hermes-batch-parent", daemon=True).start()
