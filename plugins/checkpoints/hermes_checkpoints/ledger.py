"""The rule that keeps a person's edits: which paths changed outside the agent's turns.

Since checkpoint N, a workspace went through turns and the time between them:

    N ── turn ──▶ left(N) ── between ──▶ N-1 ── turn ──▶ left(N-1) ── ... ──▶ left(1) ──▶ now

``left(k)`` is the tree the turn of checkpoint k left (taken after each of its calls that may
change the workspace); the next checkpoint is the workspace when the next turn began. So every
difference between ``left(k)`` and the next checkpoint, and between ``left(1)`` and now, was
made outside a turn: by hand (or by a program the person ran). A path that changed in any of
those gaps is the person's, and a restore keeps it as it is now.
"""

from __future__ import annotations

from .catalog import Checkpoint
from .store import Store


def gaps(history: list[Checkpoint], now: str) -> list[tuple[str, str]]:
    """The ``(before, after)`` tree pairs of the time outside the turns, from the oldest
    checkpoint of ``history`` (oldest first) to the tree ``now``; equal pairs left out."""
    pairs = []
    for position, checkpoint in enumerate(history):
        following = history[position + 1].tree if position + 1 < len(history) else now
        if checkpoint.left != following:
            pairs.append((checkpoint.left, following))
    return pairs


def paths_changed(store: Store, pairs: list[tuple[str, str]]) -> list[set[bytes]]:
    """For each ``(old, new)`` tree pair, the paths that differ (one ``git diff-tree --stdin``
    for all of them)."""
    wanted = [(a, b) for a, b in pairs if a != b]
    if not wanted:
        return [set() for _ in pairs]
    text = "".join(f"{a} {b}\n" for a, b in wanted).encode("ascii")
    out = store.git("diff-tree", "--stdin", "-r", "-z", "--no-renames", "--name-only", stdin=text)
    headers = [f"{a} {b}\n".encode("ascii") for a, b in wanted]
    found: list[set[bytes]] = [set() for _ in wanted]
    position, following, current = 0, 0, -1
    while position < len(out):
        header = next(
            (n for n in range(following, len(headers)) if out.startswith(headers[n], position)),
            None,
        )
        if header is not None:  # the line git prints before each pair's paths
            position += len(headers[header])
            following = current = header
            following += 1
            continue
        end = out.find(b"\0", position)
        if end < 0:
            break
        if current >= 0:
            found[current].add(out[position:end])
        position = end + 1
    by_pair = dict(zip(wanted, found, strict=True))
    return [by_pair.get((a, b), set()) for a, b in pairs]


def changed_by_hand(store: Store, history: list[Checkpoint], now: str) -> set[bytes]:
    """The paths that changed outside the agent's turns since the oldest checkpoint of
    ``history`` (oldest first), up to the tree ``now``: added, removed or modified in a gap."""
    found: set[bytes] = set()
    for paths in paths_changed(store, gaps(history, now)):
        found |= paths
    return found
