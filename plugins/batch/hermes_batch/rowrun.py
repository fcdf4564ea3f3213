"""Running one claimed row: its own workspace (made fresh for every attempt), its toolsets,
its own session, the agent's run, the quality filters, and the one write that records how
it ended.

While the row runs, a thread renews its lease; if the row was taken from this attempt (the
coordinator declared it lost) the run is interrupted, and its result is never written.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_hookspecs import AgentOutcome, AgentRunner, AgentTask, SessionStore

from .containers import container_overrides, container_problem, row_image
from .sampling import sample_toolsets
from .schema import Claim
from .table import RunTable
from .trajectory import row_output

SOURCE = "batch"
"""The source (platform) of a batch row's session."""

NOT_FOR_ROWS = ("clarify", "cron")
"""Toolsets a row's agent never gets: no one can answer it, and a row schedules nothing."""

SYSTEM_CONTEXT = (
    "You are running as one row of a batch run over a dataset. No user is present: do not ask "
    "questions; do the task with your tools and your best judgement, working in the current "
    "folder, and end with your final answer."
)

Filter = Callable[[Mapping[str, Any], Mapping[str, Any]], str | None]
"""A quality filter: ``(row, output)`` → why the row is discarded, or ``None`` to keep it."""


@dataclass(frozen=True)
class RowResult:
    """What became of one attempt: the row's new state (``completed``, ``failed``,
    ``discarded``, ``pending`` when it will be tried again, or ``lost`` when the row was no
    longer this attempt's) and the outcome of the agent's run."""

    state: str
    outcome: AgentOutcome | None
    reason: str | None = None


def workspace_of(run_dir: Path, key: str) -> Path:
    """The workspace folder of row ``key``: readable, unique and a valid file name."""
    tag = re.sub(r"[^A-Za-z0-9._-]+", "_", key)[:40].strip("._") or "row"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return run_dir / "workspaces" / f"{tag}-{digest}"


def _inside(root: Path, relative: str, what: str = "the row's workspace") -> Path:
    target = (root / relative).resolve()
    if os.path.isabs(relative) or not target.is_relative_to(root.resolve()):
        raise ValueError(f"{relative!r} is outside {what}")
    return target


def prepare_workspace(run_dir: Path, claim: Claim, dataset_dir: Path) -> Path:
    """A fresh workspace for ``claim``: emptied of any earlier attempt, filled with a copy of
    the row's ``cwd`` folder (in the dataset's folder) and its ``files``."""
    root = workspace_of(run_dir, claim.key)
    if root.exists():
        shutil.rmtree(root)
    source = claim.data.get("cwd")
    if source:  # only from the dataset's own folder: a row never copies the person's files
        folder = _inside(dataset_dir, str(source), "the dataset's folder")
        if not folder.is_dir():
            raise ValueError(f"the row's cwd {source!r} is not a folder")
        shutil.copytree(folder, root, symlinks=True)
    root.mkdir(parents=True, exist_ok=True)
    for relative, text in (claim.data.get("files") or {}).items():
        target = _inside(root, str(relative))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def _images(claim: Claim, dataset_dir: Path) -> list[str]:
    found = []
    for image in claim.data.get("images") or []:
        path = _inside(dataset_dir, image, "the dataset's folder")
        if not path.is_file():
            raise ValueError(f"the row's image {image!r} is not a file")
        found.append(str(path))
    return found


class _Lease:
    """Renews a claim's lease until stopped; sets ``lost`` (and cancels the run) when the row
    is no longer the claim's, and cancels it when the row's time is up."""

    def __init__(self, table: RunTable, claim: Claim, lease: float, timeout: float | None) -> None:
        self.cancel = threading.Event()
        self.lost = False
        self.timed_out = False
        self._stop = threading.Event()
        self._table, self._claim, self._lease = table, claim, lease
        self._deadline = time.monotonic() + timeout if timeout else None
        self._thread = threading.Thread(target=self._beat, name="hermes-batch-lease", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        interval = max(self._lease / 3, 0.05)
        renewed = time.monotonic()
        while True:
            wait = renewed + interval - time.monotonic()
            if self._deadline is not None and not self.timed_out:
                wait = min(wait, self._deadline - time.monotonic())
            if self._stop.wait(max(wait, 0.0)):
                return
            if self._deadline is not None and time.monotonic() >= self._deadline:
                self.timed_out = True
                self.cancel.set()
            if time.monotonic() - renewed < interval:
                continue
            renewed = time.monotonic()
            try:
                if not self._table.renew(self._claim, self._lease):
                    self.lost = True
                    self.cancel.set()
                    return
            except Exception:  # the table is unreachable for now: the lease decides later
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_row(
    *,
    runner: AgentRunner,
    store: SessionStore,
    table: RunTable,
    claim: Claim,
    settings: Mapping[str, Any],
    run_dir: Path,
    filters: Sequence[tuple[str, Filter]] = (),
    config: Mapping[str, Any] | None = None,
) -> RowResult:
    """Run attempt ``claim`` of its row to the end and record it in ``table``; ``config`` is
    the worker's configuration (what a row's container is checked against)."""
    started = time.monotonic()
    lease = float(settings.get("lease_seconds") or 60)
    max_attempts = int(settings.get("max_attempts") or 2)
    toolsets, seed = sample_toolsets(settings, claim.key, claim.data.get("toolsets"))
    dataset_dir = Path(str(settings.get("dataset_dir") or "."))
    image = row_image(claim.data, settings)
    try:
        workspace = prepare_workspace(run_dir, claim, dataset_dir)
        images = _images(claim, dataset_dir)
    except (OSError, ValueError) as exc:
        table.finish(claim, "failed", seed=seed, toolsets=toolsets, error=str(exc), image=image)
        return RowResult("failed", None, str(exc))
    overrides: dict[str, Any] = {"terminal.cwd": str(workspace)}
    if image is not None:
        overrides = container_overrides(image, workspace)
        problem = container_problem(image, overrides, config or {})
        if problem:
            why = f"the row's container cannot run: {problem}"
            table.finish(claim, "failed", seed=seed, toolsets=toolsets, error=why, image=image)
            return RowResult("failed", None, why)
    guard = _Lease(table, claim, lease, settings.get("row_timeout"))
    try:
        outcome = runner.run(
            AgentTask(
                prompt=str(claim.data["prompt"]),
                session_id=claim.session_id,
                source=SOURCE,
                toolsets=toolsets,
                model=claim.data.get("model") or settings.get("model"),
                max_iterations=settings.get("max_turns"),
                system_context=SYSTEM_CONTEXT,
                cancel_event=guard.cancel,
                config_overrides=overrides,
                exclude_toolsets=NOT_FOR_ROWS,
                images=images,
            )
        )
    finally:
        guard.stop()
    if guard.lost:
        return RowResult("lost", outcome, "the row was given to another attempt")
    session = store.get_session(outcome.session_id) if outcome.session_id else None
    messages = store.get_messages(outcome.session_id) if session is not None else []
    usage = (outcome.usage.input_tokens, outcome.usage.output_tokens, outcome.cost_usd)
    status = outcome.status
    error = outcome.error or None
    if guard.timed_out:
        status, error = "error", f"the row ran out of time ({settings.get('row_timeout')} s)"
    elif status == "interrupted":
        status, error = "error", "the run was interrupted"
    elif status not in ("completed", "max_iterations", "error"):  # a spend cap, say
        status, error = "error", outcome.error or f"the run ended with {status}"
    output = row_output(
        messages=messages,
        system=session.system_prompt if session is not None else None,
        status=status,
        model=(session.model if session is not None else None) or settings.get("model"),
        toolsets=toolsets,
        seed=seed,
        usage=outcome.usage.as_dict(),
        cost_usd=outcome.cost_usd,
        row=claim.data,
        key=claim.key,
        line=claim.line,
    )
    common: dict[str, Any] = {
        "output": output,
        "seed": seed,
        "toolsets": toolsets,
        "usage": usage,
        "duration": time.monotonic() - started,
        "image": image,
    }
    if status == "error":
        retry = claim.attempt < max_attempts
        written = table.finish(claim, "failed", retry=retry, error=error, **common)
        state = "pending" if retry else "failed"
        return RowResult(state if written else "lost", outcome, error)
    for name, check in filters:
        try:
            reason = check(claim.data, output)
        except Exception as exc:  # a filter that cannot decide keeps nothing (fail closed)
            why = f"the filter {name} failed: {type(exc).__name__}: {exc}"
            written = table.finish(claim, "failed", error=why, **common)
            return RowResult("failed" if written else "lost", outcome, why)
        if reason:
            why = f"{name}: {reason}"
            written = table.finish(claim, "discarded", discard_reason=why, **common)
            return RowResult("discarded" if written else "lost", outcome, why)
    written = table.finish(claim, "completed", **common)
    return RowResult("completed" if written else "lost", outcome)
