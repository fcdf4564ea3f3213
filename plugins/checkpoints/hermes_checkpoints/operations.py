"""What the hooks and the commands do with a workspace: take a checkpoint, record what a turn
left, show the difference with a checkpoint, restore one. Each runs under the store's lock."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalog import Checkpoint, create, list_checkpoints, resolve, set_after
from .restore import Change, apply, plan
from .retention import prune
from .running import in_flight
from .settings import Settings
from .snapshot import Workspace, record_paths, take_snapshot
from .store import CheckpointError, Store


def open_workspace(data_home: Path, root: Path, *, create_store: bool = True) -> Workspace:
    """The workspace ``root`` in the store of ``data_home`` (the store is made when missing,
    unless ``create_store`` is false)."""
    store = Store.of(data_home)
    if create_store:
        store.ensure()
    return Workspace(store, root)


def checkpoint_before_turn(
    workspace: Workspace, settings: Settings, meta: dict[str, Any]
) -> Checkpoint:
    """Snapshot the workspace before a turn's first change and make it a checkpoint, then
    apply the retention limits. When nothing changed since the newest checkpoint and its turn
    changed nothing either, that checkpoint serves this turn too."""
    with workspace.store.lock():
        checkpoints = list_checkpoints(workspace)
        newest = checkpoints[0] if checkpoints else None
        snapshot = take_snapshot(workspace, settings)
        if newest is not None and newest.tree == snapshot.tree == newest.left:
            return newest
        checkpoint = create(workspace, snapshot, {"kind": "turn", **meta}, newest)
        prune(workspace, settings, protect=checkpoint, mine=checkpoints)
        return checkpoint


def record_after(workspace: Workspace, settings: Settings, checkpoint: Checkpoint) -> None:
    """Record what the checkpoint's turn left so far (after one of its calls finished)."""
    with workspace.store.lock():
        snapshot = take_snapshot(workspace, settings)
        set_after(workspace.store, checkpoint, snapshot.tree)


def diff(workspace: Workspace, settings: Settings, spec: str, only: list[bytes]) -> bytes:
    """The difference between checkpoint ``spec`` and the workspace now, as ``git diff``
    prints it (limited to the paths ``only`` when given)."""
    with workspace.store.lock():
        target = resolve(list_checkpoints(workspace), spec)
        now = take_snapshot(workspace, settings)
        workspace.pin(now.tree)
        paths = [os.fsdecode(p) if p else "." for p in only]
        return workspace.store.git(
            "--literal-pathspecs",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            target.tree,
            now.tree,
            "--",
            *paths,
        )


@dataclass
class RestoreReport:
    """What a restore did (or, with ``dry_run``, would do).

    :param target: the checkpoint restored.
    :param changes: one per path that differed.
    :param before: the checkpoint of the state before the restore (``None`` for a dry run, or
        when nothing had to change).
    :param nested: nested repositories of the workspace (never restored).
    :param dry_run: nothing was changed.
    """

    target: Checkpoint
    changes: list[Change] = field(default_factory=list)
    before: Checkpoint | None = None
    nested: list[bytes] = field(default_factory=list)
    dry_run: bool = False

    def count(self, action: str) -> int:
        """How many changes ended as ``action``."""
        return sum(1 for c in self.changes if c.action == action)


def restore(
    workspace: Workspace, settings: Settings, spec: str, only: list[bytes], dry_run: bool
) -> RestoreReport:
    """Restore checkpoint ``spec`` (limited to the paths ``only`` when given): first a
    checkpoint of the state now (so the restore can be undone), then the plan of
    :mod:`hermes_checkpoints.restore`, then a record of what the restore left.

    :raises CheckpointError: a call of the agent is changing the workspace right now, or
        ``spec`` names no checkpoint, or git failed.
    """
    with workspace.store.lock():
        busy = in_flight(workspace.store, workspace.key)
        if busy:
            raise CheckpointError(
                "a turn of the agent is changing this workspace right now "
                f"({busy[0]}): restore when it is done, or stop it first"
            )
        checkpoints = list_checkpoints(workspace)
        target = resolve(checkpoints, spec)
        now = take_snapshot(workspace, settings)
        changes = plan(workspace, checkpoints, target, now, only)
        report = RestoreReport(target, changes, nested=list(now.nested), dry_run=dry_run)
        if dry_run or not any(c.action in ("restore", "remove") for c in changes):
            workspace.pin(now.tree)
            return report
        report.before = create(
            workspace, now, {"kind": "restore", "target": target.id}, checkpoints[0]
        )
        apply(workspace, target, changes)
        done = [c.path for c in changes if c.action in ("restore", "remove")]
        set_after(workspace.store, report.before, record_paths(workspace, done))
        prune(workspace, settings, protect=report.before, mine=checkpoints)
        return report
