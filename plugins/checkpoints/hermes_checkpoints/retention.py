"""Dropping old checkpoints: ``checkpoints.keep`` per workspace, ``checkpoints.max_age_days``
and ``checkpoints.max_total_mb`` for the whole store; run after each checkpoint is made.

The workspace's own checkpoints are checked every time. The other workspaces' (for their age)
are checked at most every :data:`SWEEP_SECONDS` per process, since listing every checkpoint of
a store that serves many workspaces costs more than a snapshot; the size limit looks at all of
them whenever the store is over it.
"""

from __future__ import annotations

import time

from .catalog import Checkpoint, all_checkpoints, delete, list_checkpoints
from .settings import Settings
from .snapshot import Workspace

ROUNDS = 6
"""How many times the size limit may drop checkpoints and collect garbage in one go."""

SWEEP_SECONDS = 3600.0
"""How often (per process and store) the other workspaces' checkpoints are checked for age."""

_swept: dict[str, float] = {}


def _too_old(
    checkpoints: list[Checkpoint], settings: Settings, protect: Checkpoint
) -> list[Checkpoint]:
    oldest_allowed = time.time() - settings.max_age_days * 86400
    return [c for c in checkpoints if c.time < oldest_allowed and c.commit != protect.commit]


def prune(
    workspace: Workspace,
    settings: Settings,
    protect: Checkpoint,
    mine: list[Checkpoint] | None = None,
) -> list[Checkpoint]:
    """Drop the checkpoints past the limits (never ``protect``, the one just made); returns
    those dropped. ``mine`` is the workspace's checkpoints, newest first, when the caller has
    them (``protect`` need not be among them). Call it under the store's lock."""
    store = workspace.store
    mine = list(list_checkpoints(workspace) if mine is None else mine)
    if all(c.commit != protect.commit for c in mine):
        mine.insert(0, protect)
    doomed = [c for c in mine[settings.keep :] if c.commit != protect.commit]
    doomed += [c for c in _too_old(mine[: settings.keep], settings, protect)]
    now = time.monotonic()
    if now - _swept.get(str(store.path), -SWEEP_SECONDS) >= SWEEP_SECONDS:
        _swept[str(store.path)] = now
        for key, checkpoints in all_checkpoints(store).items():
            if key != workspace.key:
                doomed += _too_old(checkpoints, settings, protect)
    delete(store, doomed)
    store.gc()
    dropped = {c.commit for c in doomed}
    for _ in range(ROUNDS):
        if store.footprint() <= settings.max_total_bytes:
            break
        left = sorted(
            (
                c
                for checkpoints in all_checkpoints(store).values()
                for c in checkpoints
                if c.commit not in dropped and c.commit != protect.commit
            ),
            key=lambda c: c.time,
        )
        if not left:
            break
        batch = left[: max(1, len(left) // 4)]
        delete(store, batch)
        doomed.extend(batch)
        dropped.update(c.commit for c in batch)
        store.gc(prune_all=True)
    return doomed


def forget_sweeps() -> None:
    """Check every workspace's age again at the next checkpoint (for tests)."""
    _swept.clear()
