"""The limits: how many checkpoints are kept, for how long, how big the store may grow, and
that it grows by about what changed."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

from hermes_checkpoints.catalog import all_checkpoints, list_checkpoints
from hermes_checkpoints.operations import checkpoint_before_turn, open_workspace, record_after
from hermes_checkpoints.retention import forget_sweeps
from hermes_checkpoints.settings import Settings
from hermes_checkpoints.snapshot import Workspace


def turns(workspace: Workspace, settings: Settings, count: int, change) -> None:
    for n in range(count):
        checkpoint = checkpoint_before_turn(workspace, settings, {"tool": "terminal"})
        change(n)
        record_after(workspace, settings, checkpoint)


def test_keep_drops_the_oldest(home, work):
    workspace = open_workspace(home, work)
    settings = Settings(keep=3)
    turns(workspace, settings, 6, lambda n: (work / "README.md").write_text(f"turn {n}\n"))
    kept = list_checkpoints(workspace)
    assert [c.seq for c in kept] == [6, 5, 4]


def test_a_turn_that_changes_nothing_reuses_the_newest_checkpoint(home, work):
    workspace = open_workspace(home, work)
    turns(workspace, Settings(), 5, lambda n: None)
    assert len(list_checkpoints(workspace)) == 1


def test_old_checkpoints_go(home, work, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "f").write_text("x")
    old = open_workspace(home, Path(os.path.realpath(other)))
    turns(old, Settings(), 2, lambda n: (other / "f").write_text(f"{n}"))
    time.sleep(1.2)
    forget_sweeps()  # other workspaces are checked for age once an hour per process
    workspace = open_workspace(home, work)
    settings = Settings(max_age_days=1 / 86400)  # one second
    turns(workspace, settings, 1, lambda n: None)
    every = all_checkpoints(workspace.store)
    assert list(every) == [workspace.key], "the other workspace's old checkpoints went too"


def test_the_store_stays_under_its_size_limit(home, work):
    workspace = open_workspace(home, work)
    rng = random.Random(1)
    settings = Settings(max_total_mb=0.5, max_file_mb=1)

    def big_change(n: int) -> None:  # old versions live on only in old checkpoints
        (work / "blob.bin").write_bytes(rng.randbytes(150_000))

    turns(workspace, settings, 8, big_change)
    checkpoint_before_turn(workspace, settings, {})  # the limit applies after each checkpoint
    assert workspace.store.footprint() <= 0.5 * 1024 * 1024
    kept = list_checkpoints(workspace)
    assert kept and kept[0].seq == 9, "the newest checkpoint is never dropped"
    assert len(kept) < 9


def test_a_hundred_small_turns_grow_the_store_by_about_what_changed(home, tmp_path):
    """100 turns that each change one small file: the store grows by at most twice the bytes
    changed, plus git's own overhead (a commit and a few small trees per turn)."""
    work = tmp_path / "grow"
    work.mkdir()
    for n in range(200):
        (work / f"pkg{n % 10}").mkdir(exist_ok=True)
        (work / f"pkg{n % 10}" / f"mod{n}.py").write_text(f"# module {n}\n" + "x = 1\n" * 200)
    workspace = open_workspace(home, Path(os.path.realpath(work)))
    settings = Settings()
    turns(workspace, settings, 1, lambda n: None)
    before = workspace.store.footprint()
    rng = random.Random(2)
    changed = 0

    def change(n: int) -> None:
        nonlocal changed
        path = work / f"pkg{n % 10}" / f"mod{n}.py"
        data = "".join(f"value_{rng.randrange(10**9)} = {rng.random()}\n" for _ in range(60))
        path.write_text(data)
        changed += len(data)

    turns(workspace, settings, 100, change)
    grown = workspace.store.footprint() - before
    overhead = 100 * 3 * 1024  # per turn: a commit, the trees on the changed file's path, refs
    assert grown <= 2 * changed + overhead, (grown, changed)
    assert grown < 10 * 1024 * 1024


def test_a_diff_in_one_workspace_survives_garbage_collection_from_another(home, work, tmp_path):
    from hermes_checkpoints.operations import diff, restore

    other = tmp_path / "other"
    other.mkdir()
    (other / "f").write_text("x")
    mine = open_workspace(home, work)
    theirs = open_workspace(home, Path(os.path.realpath(other)))
    settings = Settings()
    turns(mine, settings, 1, lambda n: (work / "README.md").write_text("agent\n"))
    (work / "README.md").write_text("by hand\n")
    assert b"+by hand" in diff(mine, settings, "1", [])
    turns(theirs, settings, 1, lambda n: (other / "f").write_text("y"))
    theirs.store.gc(prune_all=True)
    turns(mine, settings, 1, lambda n: (work / "src" / "app.py").write_text("agent two\n"))
    report = restore(mine, settings, "2", [], dry_run=False)
    assert (work / "README.md").read_text() == "by hand\n"
    assert report.count("keep") == 1


def test_a_private_index_naming_lost_objects_is_rebuilt(home, work):
    from hermes_checkpoints.snapshot import take_snapshot

    workspace = open_workspace(home, work)
    settings = Settings()
    turns(workspace, settings, 1, lambda n: None)
    (work / "README.md").write_text("only in the index\n")
    with workspace.store.lock():
        take_snapshot(workspace, settings)  # no checkpoint refers to it
    workspace.store.gc(prune_all=True)  # the new content is gone from the store
    turns(workspace, settings, 1, lambda n: (work / "src" / "app.py").write_text("agent\n"))
    from hermes_checkpoints.operations import restore

    restore(workspace, settings, "1", [], dry_run=False)
    assert (work / "README.md").read_text() == "only in the index\n"
    assert (work / "src" / "app.py").read_text() == "print('hello')\n" * 40
