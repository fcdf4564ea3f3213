"""The checkpoints of a workspace: git refs of the store, and the ledger of what the agent left.

Checkpoint number ``seq`` of workspace ``key`` is two refs:

- ``refs/hermes/<key>/cp/<seq>``: a commit whose tree is the workspace as the snapshot before
  the turn's first change saw it (the hash of every file), and whose message is the
  checkpoint's description (JSON: time, kind, session, task, tool, workspace, what was left
  out);
- ``refs/hermes/<key>/after/<seq>``: the tree of the workspace as the turn's latest change left
  it, taken after each call of the turn that may change the workspace. Together they are the
  *agent-write ledger*: what changed between a checkpoint's ``after`` and the next checkpoint
  (or now) changed outside the agent's turns, by hand.

Each checkpoint is a commit of its own (no parent), so dropping the oldest rewrites nothing;
their trees share every unchanged file and folder.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from .snapshot import Snapshot, Workspace
from .store import CheckpointError, Store

REFS = "refs/hermes"


@dataclass
class Checkpoint:
    """One checkpoint of a workspace.

    :param seq: its sequence number in the workspace (grows; never reused).
    :param commit: the commit's hash (its id is the first 12 digits).
    :param tree: the tree the snapshot saw.
    :param meta: its description (``time``, ``kind``, ``session``, ``task``, ``tool``,
        ``workspace``, ``skipped``, ``nested``).
    :param after: the tree the turn left, when a call of the turn finished.
    :param key: the workspace's key.
    """

    seq: int
    commit: str
    tree: str
    meta: dict[str, Any] = field(default_factory=dict)
    after: str | None = None
    key: str = ""

    @property
    def id(self) -> str:
        """The short id people type: the commit's first 12 hex digits."""
        return self.commit[:12]

    @property
    def time(self) -> float:
        """When it was taken (UNIX time)."""
        value = self.meta.get("time")
        return float(value) if isinstance(value, int | float) else 0.0

    @property
    def kind(self) -> str:
        """``turn`` (before an agent's turn) or ``restore`` (before a restore)."""
        return str(self.meta.get("kind") or "turn")

    @property
    def left(self) -> str:
        """The tree the agent left after the checkpoint: ``after``, else the checkpoint's own
        tree (a turn that finished no call yet, or a process that died mid-call)."""
        return self.after or self.tree

    def ref(self) -> str:
        """The checkpoint's ref."""
        return f"{REFS}/{self.key}/cp/{self.seq:08d}"

    def after_ref(self) -> str:
        """The ref of the tree its turn left."""
        return f"{REFS}/{self.key}/after/{self.seq:08d}"


def _parse(out: bytes) -> dict[str, list[Checkpoint]]:
    """The checkpoints in ``for-each-ref`` output, by workspace key, newest first."""
    found: dict[tuple[str, int], Checkpoint] = {}
    afters: dict[tuple[str, int], str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        parts = line.split("\0")
        if len(parts) != 4:
            continue
        refname, objectname, tree, subject = parts
        pieces = refname.split("/")
        if len(pieces) != 5 or not pieces[4].isdigit():
            continue
        key, kind, seq = pieces[2], pieces[3], int(pieces[4])
        if kind == "after":
            afters[(key, seq)] = objectname
        elif kind == "cp":
            try:
                meta = json.loads(subject) if subject else {}
            except ValueError:
                meta = {}
            found[(key, seq)] = Checkpoint(
                seq, objectname, tree, meta if isinstance(meta, dict) else {}, key=key
            )
    by_key: dict[str, list[Checkpoint]] = {}
    for (key, seq), checkpoint in sorted(found.items(), key=lambda kv: -kv[0][1]):
        checkpoint.after = afters.get((key, seq))
        by_key.setdefault(key, []).append(checkpoint)
    return by_key


_FORMAT = "--format=%(refname)%00%(objectname)%00%(tree)%00%(contents:subject)"


def list_checkpoints(workspace: Workspace) -> list[Checkpoint]:
    """The checkpoints of a workspace, newest first."""
    if not workspace.store.exists():
        return []
    out = workspace.store.git("for-each-ref", _FORMAT, f"{REFS}/{workspace.key}/")
    return _parse(out).get(workspace.key, [])


def all_checkpoints(store: Store) -> dict[str, list[Checkpoint]]:
    """Every checkpoint of the store, by workspace key, newest first."""
    if not store.exists():
        return {}
    return _parse(store.git("for-each-ref", _FORMAT, f"{REFS}/"))


def create(
    workspace: Workspace, snapshot: Snapshot, meta: dict[str, Any], newest: Checkpoint | None
) -> Checkpoint:
    """Make a checkpoint of ``snapshot`` after ``newest`` (the workspace's newest, or
    ``None``). Call it under the store's lock."""
    from .paths import encode_path

    meta = {
        **meta,
        "time": round(time.time(), 3),
        "workspace": encode_path(workspace.root_bytes),
        "skipped": [[encode_path(s.path), s.reason] for s in snapshot.skipped],
        "nested": [encode_path(p) for p in snapshot.nested],
    }
    message = json.dumps(meta, ensure_ascii=True, sort_keys=True)
    commit = workspace.store.git("commit-tree", snapshot.tree, "-m", message)
    checkpoint = Checkpoint(
        seq=(newest.seq + 1) if newest else 1,
        commit=commit.decode("ascii").strip(),
        tree=snapshot.tree,
        meta=meta,
        key=workspace.key,
    )
    pin = f"{REFS}/{workspace.key}/index"  # a diff's or dry run's tree: the checkpoint holds now
    changes = f"create {checkpoint.ref()} {checkpoint.commit}\ndelete {pin}\n"
    workspace.store.git("update-ref", "--stdin", stdin=changes.encode("ascii"))
    return checkpoint


def set_after(store: Store, checkpoint: Checkpoint, tree: str) -> None:
    """Record ``tree`` as what the checkpoint's turn left (when it changed)."""
    if checkpoint.after == tree:
        return
    store.git("update-ref", checkpoint.after_ref(), tree)
    checkpoint.after = tree


def delete(store: Store, checkpoints: list[Checkpoint]) -> None:
    """Drop checkpoints (their refs; ``git gc`` frees what no other checkpoint shares)."""
    if not checkpoints:
        return
    lines = "".join(f"delete {c.ref()}\ndelete {c.after_ref()}\n" for c in checkpoints)
    store.git("update-ref", "--stdin", stdin=lines.encode("ascii"))


def resolve(checkpoints: list[Checkpoint], spec: str) -> Checkpoint:
    """The checkpoint ``spec`` names: a number (1 is the newest) or an id (a prefix of its
    commit's hash, at least 4 digits).

    :raises CheckpointError: it names none, or more than one.
    """
    text = spec.strip()
    if not checkpoints:
        raise CheckpointError("this workspace has no checkpoints yet")
    if text.isdigit() and len(text) < 7:
        number = int(text)
        if 1 <= number <= len(checkpoints):
            return checkpoints[number - 1]
        raise CheckpointError(
            f"no checkpoint number {number}: this workspace has {len(checkpoints)} "
            "(hermes checkpoints list)"
        )
    matches = [c for c in checkpoints if len(text) >= 4 and c.commit.startswith(text.lower())]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise CheckpointError(f"{text!r} names {len(matches)} checkpoints: give more digits")
    raise CheckpointError(
        f"no checkpoint {text!r} in this workspace: give a number or an id of "
        "hermes checkpoints list"
    )
