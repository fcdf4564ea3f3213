"""Taking a snapshot: the state of a workspace written to the store as one git tree.

Only what changed since the workspace's last snapshot is read: ``git diff-files`` compares the
private index (sizes, times, inode numbers) with the files and lists the changed and deleted
ones, ``git ls-files --others`` the new ones (the two run side by side); those are hashed into
the store, the rest is reused. An unchanged workspace costs one ``stat`` per file and a walk of
its folders.

Left out of every snapshot, and so never deleted or overwritten by a restore: files over
``checkpoints.max_file_mb``, files that are not regular files or links (sockets, FIFOs, devices)
or that cannot be read, paths matching ``checkpoints.exclude``, every ``.git`` folder, nested
repositories (a folder holding a ``.git`` of its own: it has its own history) and anything
beyond a symbolic link (a link is recorded as a link, never followed).
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .settings import MIB, Settings
from .store import CheckpointError, Store, workspace_key


@dataclass(frozen=True)
class Skipped:
    """A file a snapshot left out, and why (one short phrase)."""

    path: bytes
    reason: str


@dataclass
class Snapshot:
    """What a snapshot saw: the tree of the workspace, and what it left out."""

    tree: str
    skipped: list[Skipped] = field(default_factory=list)
    nested: list[bytes] = field(default_factory=list)


class Workspace:
    """A workspace as the store knows it: its real path, its key, its private index and exclude
    file (under ``workspaces/<key>/`` of the store).

    :param store: the store.
    :param root: the workspace's real path (links resolved).
    """

    def __init__(self, store: Store, root: Path) -> None:
        self.store = store
        self.root = root
        self.key = workspace_key(root)
        self.folder = store.path / "workspaces" / self.key
        self.index = self.folder / "index"
        self.exclude_file = self.folder / "exclude"

    @property
    def hermes_home(self) -> Path:
        """The hermes home the store belongs to (``<home>/checkpoints/store.git``, or
        ``<home>/people/<person>/checkpoints/store.git``): never recorded when it lies inside
        the workspace (a restore must not roll back hermes's own files)."""
        data_home = self.store.path.parent.parent
        if data_home.parent.name == "people":
            return data_home.parent.parent
        return data_home

    @property
    def root_bytes(self) -> bytes:
        """The workspace's path as bytes (file names are bytes here, whatever their encoding)."""
        return os.fsencode(str(self.root))

    def git(self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        """Run git on the store in this workspace, with its private index."""
        return self.store.git(*args, workspace=self.root, index=self.index, stdin=stdin, ok=ok)

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """Start git on the store in this workspace, with its private index (input closed)."""
        return self.store.popen(*args, workspace=self.root, index=self.index, with_input=False)

    def tree(self, changed: bool) -> str:
        """The tree of the private index: ``git write-tree``, or, when nothing was recorded
        since the last one (``changed`` false and the index file untouched), that tree."""
        cache = self.folder / "tree"
        try:
            info = self.index.stat()
            stamp = f"{info.st_mtime_ns} {info.st_size} {info.st_ino}"
            if not changed:
                cached_stamp, _, cached_tree = cache.read_text().partition("\n")
                if cached_stamp == stamp and cached_tree:
                    return cached_tree
        except (OSError, ValueError):
            pass
        tree = self.git("write-tree").decode("ascii").strip()
        try:
            info = self.index.stat()
            cache.write_text(f"{info.st_mtime_ns} {info.st_size} {info.st_ino}\n{tree}")
        except OSError:
            pass
        return tree

    def pin(self, tree: str) -> None:
        """Keep ``tree`` (and so every file the private index names) from ``git gc``: for a
        snapshot no checkpoint refers to (a diff, a dry run)."""
        self.git("update-ref", f"refs/hermes/{self.key}/index", tree)

    def forget_index(self) -> None:
        """Throw away the private index and the cached tree: the next snapshot reads every
        file again."""
        for path in (self.index, self.folder / "tree"):
            path.unlink(missing_ok=True)

    def write_excludes(self, settings: Settings) -> None:
        """Write the exclude file (``checkpoints.exclude``, and the hermes home when it lies
        inside the workspace) when it changed."""
        patterns = list(settings.exclude)
        for folder in (self.store.path, self.hermes_home):
            try:
                inside = folder.resolve().relative_to(self.root)
            except ValueError:
                continue
            if inside.parts:
                patterns.append("/" + inside.as_posix() + "/")
        text = "".join(f"{p}\n" for p in patterns)
        try:
            if self.exclude_file.read_text(encoding="utf-8") == text:
                return
        except OSError:
            pass
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.exclude_file.write_text(text, encoding="utf-8")


class _Walker:
    """What one snapshot learns about the folders on the way to changed paths (cached)."""

    def __init__(self, root: bytes) -> None:
        self.root = root
        self.folders: dict[bytes, str] = {}

    def full(self, path: bytes) -> bytes:
        return os.path.join(self.root, path)

    def folder_state(self, folder: bytes) -> str:
        """``dir``, ``nested`` (a folder with a ``.git``), ``link``, ``missing`` or ``other``."""
        if folder in self.folders:
            return self.folders[folder]
        try:
            mode = os.lstat(self.full(folder)).st_mode
        except OSError:
            state = "missing"
        else:
            if stat.S_ISLNK(mode):
                state = "link"
            elif not stat.S_ISDIR(mode):
                state = "other"
            elif os.path.lexists(os.path.join(self.full(folder), b".git")):
                state = "nested"
            else:
                state = "dir"
        self.folders[folder] = state
        return state

    def blocked_by(self, path: bytes) -> tuple[bytes, str] | None:
        """The first folder on the way to ``path`` that is not a plain folder, and its state."""
        parts = path.split(b"/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = b"/".join(parts[:depth])
            state = self.folder_state(folder)
            if state != "dir":
                return folder, state
        return None


def _listed(workspace: Workspace) -> tuple[list[bytes], set[bytes]]:
    """The paths git finds new (``ls-files --others``), changed or deleted (``diff-files``)
    since the last snapshot, and which of them the index holds; the two commands run side by
    side."""
    others = workspace.popen(
        "ls-files", "-z", "--others", f"--exclude-from={workspace.exclude_file}"
    )
    changed = workspace.popen("diff-files", "--name-only", "-z", "--no-renames")
    tracked = [p for p in workspace.store.finish(changed, "diff-files").split(b"\0") if p]
    new = [p for p in workspace.store.finish(others, "ls-files").split(b"\0") if p]
    return list(dict.fromkeys(tracked + new)), set(tracked)


def _classify(
    paths: list[bytes], tracked: set[bytes], walker: _Walker, limit: int, snapshot: Snapshot
) -> tuple[list[bytes], list[bytes]]:
    """Sort the listed paths into those to record (or drop, when gone) and those to drop from
    the index (of those it holds, ``tracked``) because they are left out now; note the skipped
    files and nested repositories in ``snapshot``."""
    record: list[bytes] = []
    leave_out: list[bytes] = []
    nested: dict[bytes, None] = {}
    for path in paths:
        if path.endswith(b"/"):  # an untracked folder git does not enter: a repository
            nested[path.rstrip(b"/")] = None
            continue
        blocked = walker.blocked_by(path)
        if blocked is not None:
            if blocked[1] == "nested":
                nested[blocked[0]] = None
            leave_out.append(path)
            continue
        try:
            info = os.lstat(walker.full(path))
        except OSError:
            record.append(path)  # gone: dropped from the index
            continue
        mode = info.st_mode
        if stat.S_ISLNK(mode):
            record.append(path)
        elif stat.S_ISREG(mode):
            if info.st_size > limit:
                size = info.st_size / MIB
                snapshot.skipped.append(
                    Skipped(path, f"over checkpoints.max_file_mb: {size:.1f} MB")
                )
                leave_out.append(path)
            elif not os.access(walker.full(path), os.R_OK):
                snapshot.skipped.append(Skipped(path, "cannot be read"))
                leave_out.append(path)
            else:
                record.append(path)
        elif stat.S_ISDIR(mode):
            leave_out.append(path)  # was a file, is a folder: its files are listed on their own
        else:
            snapshot.skipped.append(Skipped(path, "not a regular file"))
            leave_out.append(path)
    snapshot.nested.extend(nested)
    return record, [p for p in leave_out if p in tracked]


def take_snapshot(workspace: Workspace, settings: Settings) -> Snapshot:
    """Record the workspace's current state in the store and return its tree (no checkpoint is
    made: see :mod:`hermes_checkpoints.catalog`). Call it under the store's lock.

    A private index that names objects the store no longer has (dropped by ``git gc`` while
    nothing referred to them) is thrown away and the workspace read again from scratch.

    :raises CheckpointError: git failed.
    """
    try:
        return _snapshot(workspace, settings)
    except CheckpointError:
        if not workspace.index.exists():
            raise
        workspace.forget_index()
        return _snapshot(workspace, settings)


def _snapshot(workspace: Workspace, settings: Settings) -> Snapshot:
    workspace.write_excludes(settings)
    snapshot = Snapshot(tree="")
    walker = _Walker(workspace.root_bytes)
    paths, tracked = _listed(workspace)
    record, leave_out = _classify(paths, tracked, walker, settings.max_file_bytes, snapshot)
    if leave_out:
        workspace.git("update-index", "--force-remove", "-z", "--stdin", stdin=_z(leave_out))
    if record:
        workspace.git(
            "update-index", "--add", "--remove", "--replace", "-z", "--stdin", stdin=_z(record)
        )
    snapshot.tree = workspace.tree(changed=bool(leave_out or record))
    return snapshot


def record_paths(workspace: Workspace, paths: list[bytes]) -> str:
    """Record the current state of ``paths`` alone (what a restore just wrote or removed) and
    return the workspace's tree: cheaper than a snapshot, for changes made under the lock."""
    if paths:
        workspace.git(
            "update-index", "--add", "--remove", "--replace", "-z", "--stdin", stdin=_z(paths)
        )
    return workspace.tree(changed=bool(paths))


def _z(paths: list[bytes]) -> bytes:
    return b"".join(p + b"\0" for p in paths)
