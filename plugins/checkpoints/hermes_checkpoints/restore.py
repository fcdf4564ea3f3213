"""Restoring a checkpoint: what would change (the plan), and changing it.

The plan compares the checkpoint's tree with a snapshot of the workspace now. For each path
that differs:

- inside a nested repository, or left out of the snapshot now (over the size limit, not a
  regular file, unreadable): **skipped**, never touched;
- present now and changed outside the agent's turns since the checkpoint
  (:mod:`hermes_checkpoints.ledger`): **kept** as it is, and reported;
- in the checkpoint: **restored** byte for byte (a link as a link), whether it is missing now
  or differs: bringing back a missing file overwrites nothing;
- not in the checkpoint: **removed**: a file the agent's turns added after it (never a
  ``git clean``: only paths the snapshots recorded are ever removed).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .catalog import Checkpoint
from .ledger import changed_by_hand
from .paths import decode_path, show_path, under
from .safe_files import Blocked, SafeTree
from .snapshot import Snapshot, Workspace
from .store import CheckpointError, Store

ABSENT = "000000"
LINK = "120000"
EXECUTABLE = "100755"
SUBMODULE = "160000"


@dataclass
class Change:
    """One path of a restore: what to do (``restore``, ``remove``, ``keep``, ``skip``), and,
    once done, what was done.

    :param action: what the plan says.
    :param path: the path, relative to the workspace.
    :param mode: its git mode in the checkpoint (for ``restore``).
    :param blob: its content's hash in the checkpoint (for ``restore``).
    :param recorded_now: the snapshot of now recorded the path.
    :param reason: why it is kept or skipped.
    """

    action: str
    path: bytes
    mode: str = ""
    blob: str = ""
    recorded_now: bool = False
    reason: str = ""

    def line(self, dry_run: bool = False) -> str:
        """The change as one report line."""
        path = show_path(self.path)
        if self.action == "restore":
            verb = "would restore" if dry_run else "restored"
            return f"{verb}: {path}" + (f" ({self.reason})" if self.reason else "")
        if self.action == "remove":
            return f"{'would remove' if dry_run else 'removed'}: {path}"
        if self.action == "keep":
            return f"kept: {path} ({self.reason})"
        return f"skipped: {path} ({self.reason})"


def _diff(workspace: Workspace, old: str, new: str) -> Iterator[tuple[str, str, str, bytes]]:
    """``(mode in old, mode in new, blob in old, path)`` of every path that differs."""
    out = workspace.store.git("diff-tree", "-r", "-z", "--no-renames", old, new)
    fields = out.split(b"\0")
    position = 0
    while position + 1 < len(fields):
        header, path = fields[position], fields[position + 1]
        position += 2
        parts = header.decode("ascii").lstrip(":").split()
        if len(parts) < 5:
            continue
        yield parts[0], parts[1], parts[2], path


def plan(
    workspace: Workspace,
    checkpoints: list[Checkpoint],
    target: Checkpoint,
    now: Snapshot,
    only: list[bytes],
) -> list[Change]:
    """What restoring ``target`` (one of ``checkpoints``, newest first) would do to a
    workspace whose snapshot is ``now``, limited to the paths ``only`` (and what they hold)
    when given."""
    history = list(reversed(checkpoints[: checkpoints.index(target) + 1]))
    by_hand = changed_by_hand(workspace.store, history, now.tree)
    skipped_now = {s.path: s.reason for s in now.skipped}
    skipped_then = {decode_path(str(item[0])) for item in target.meta.get("skipped") or []}
    changes = []
    for old_mode, new_mode, blob, path in _diff(workspace, target.tree, now.tree):
        if only and not under(path, only):
            continue
        in_target, in_now = old_mode != ABSENT, new_mode != ABSENT
        if under(path, now.nested) or SUBMODULE in (old_mode, new_mode):
            changes.append(Change("skip", path, reason="inside a nested repository"))
        elif path in skipped_now:
            changes.append(Change("skip", path, reason=skipped_now[path]))
        elif not in_target and path in skipped_then:
            reason = "left out of the checkpoint (too big or unreadable then); left as it is"
            changes.append(Change("skip", path, reason=reason))
        elif in_now and path in by_hand:
            changes.append(Change("keep", path, reason="changed by hand since"))
        elif in_target:
            changes.append(Change("restore", path, old_mode, blob, recorded_now=in_now))
        else:
            changes.append(Change("remove", path, recorded_now=True))
    return changes


def _blobs(store: Store, changes: list[Change]) -> Iterator[tuple[Change, bytes]]:
    """Each change with the content its blob holds (``git cat-file --batch``, one process)."""
    if not changes:
        return
    process = store.popen("cat-file", "--batch")
    assert process.stdin is not None and process.stdout is not None
    try:
        for change in changes:
            process.stdin.write(change.blob.encode("ascii") + b"\n")
            process.stdin.flush()
            header = process.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise CheckpointError(f"the store lacks the content of {show_path(change.path)}")
            size = int(header[2])
            data = process.stdout.read(size)
            process.stdout.read(1)
            yield change, data
    finally:
        process.stdin.close()
        process.stdout.close()
        assert process.stderr is not None
        process.stderr.close()
        process.wait()


def _folders_in(workspace: Workspace, tree: str) -> set[bytes]:
    """Every folder of a tree (``git ls-tree -d``)."""
    out = workspace.store.git("ls-tree", "-r", "-d", "-z", "--name-only", tree)
    return {p for p in out.split(b"\0") if p}


def _tidy(workspace: Workspace, files: SafeTree, removed: list[bytes], target: str) -> None:
    """Remove the folders the removals left empty, unless the checkpoint has them."""
    keep = _folders_in(workspace, target)
    folders: set[bytes] = set()
    for path in removed:
        parts = path.split(b"/")[:-1]
        folders.update(b"/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    for folder in sorted(folders, key=lambda f: -f.count(b"/")):
        if folder not in keep:
            files.remove_empty_folder(folder)


def _check_write(files: SafeTree, change: Change) -> str:
    """Why ``change`` must not be written now (a path the snapshot did not record but that
    exists), or ``""``."""
    if change.recorded_now:
        return ""
    try:
        kind = files.kind(change.path)
    except Blocked as exc:
        return str(exc)
    if kind == "folder":
        return "a folder is there now"
    if kind is not None:
        return "not recorded now (checkpoints.exclude?); left as it is"
    return ""


def apply(workspace: Workspace, target: Checkpoint, changes: list[Change]) -> list[Change]:
    """Carry out the ``restore`` and ``remove`` changes of a plan (removals first, deepest
    first); returns every change, those that could not be done turned into ``skip`` with the
    reason."""
    removals = sorted(
        (c for c in changes if c.action == "remove"), key=lambda c: -c.path.count(b"/")
    )
    writes = [c for c in changes if c.action == "restore"]
    removed: list[bytes] = []
    with SafeTree(workspace.root_bytes) as files:
        for change in removals:
            try:
                files.remove(change.path)
                removed.append(change.path)
            except (Blocked, OSError) as exc:
                change.action, change.reason = "skip", _reason(exc)
        if removed:
            _tidy(workspace, files, removed, target.tree)
        ready = []
        for change in writes:
            problem = _check_write(files, change)
            if problem:
                change.action, change.reason = "skip", problem
            else:
                ready.append(change)
        for change, data in _blobs(workspace.store, ready):
            try:
                if change.mode == LINK:
                    files.symlink(change.path, data)
                    change.reason = f"a symbolic link to {show_path(data)}"
                else:
                    files.write(change.path, data, executable=change.mode == EXECUTABLE)
            except (Blocked, OSError) as exc:
                change.action, change.reason = "skip", _reason(exc)
    return changes


def _reason(exc: BaseException) -> str:
    if isinstance(exc, Blocked):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)
