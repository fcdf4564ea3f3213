"""What a sandboxed command sees of one path: the sandbox's world in one answer, for hermes's own
file tools, so that ``read_file`` and a ``cat`` in the terminal see the same world.

The answer follows the mounts :class:`~hermes_env_sandbox.Sandbox` makes: of all the folders
that decide a path's fate (hidden paths, the writable folders, the allowed paths of the hidden
home folder, the task's ``/tmp``), the deepest one that holds the path decides; with none, a
path in the hidden home folder or in this machine's ``/tmp`` is unseen, and the rest of the
file system is read-only. A path is judged as written and where it really leads; the stricter
answer counts.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hermes_hookspecs import PATH_SIGHTS, PathSight

if TYPE_CHECKING:
    from .bwrap import Sandbox

from .paths import inside, resolved

__all__ = ["path_sight"]

_STRICTNESS = {sight: rank for rank, sight in enumerate(PATH_SIGHTS)}


DECIDERS_FOR = 1.0
"""Seconds the folders that decide are reused (resolving every hidden path costs about 3 ms):
a link swapped in the home folder counts within a second, as it does for the next command."""

_decided: weakref.WeakKeyDictionary[Sandbox, tuple[float, list[tuple[str, PathSight]]]] = (
    weakref.WeakKeyDictionary()
)
_decided_lock = threading.Lock()


def _deciders(sandbox: Sandbox) -> list[tuple[str, PathSight]]:
    """:func:`_deciders_now`, reused for :data:`DECIDERS_FOR` seconds."""
    now = time.monotonic()
    with _decided_lock:
        kept = _decided.get(sandbox)
    if kept is not None and now - kept[0] < DECIDERS_FOR:
        return kept[1]
    found = _deciders_now(sandbox)
    with _decided_lock:
        _decided[sandbox] = (now, found)
    return found


def _deciders_now(sandbox: Sandbox) -> list[tuple[str, PathSight]]:
    """Each folder that decides what commands see below it, with what they see there."""
    found: list[tuple[str, PathSight]] = [(sandbox.tmp, "write")]
    found += [(folder, "read") for folder in sandbox.programs]
    for entry in sandbox.home_entries:
        sight: PathSight = "write" if entry.writable else "read"
        found += [(entry.path, sight), (entry.target, sight)]
    found += [(root, "write") for root in sandbox.writable]
    if sandbox.home_hidden and not sandbox.writable and inside(sandbox.workspace, sandbox.home):
        found.append((sandbox.workspace, "read"))  # the read-only profile shows it read-only
    for path in sandbox.hidden_paths():
        found += [(path, "hidden"), (resolved(path), "hidden")]
    return found


def _one(path: str, deciders: Sequence[tuple[str, PathSight]], sandbox: Sandbox) -> PathSight:
    best: tuple[int, int, PathSight] | None = None
    for folder, sight in deciders:
        if inside(path, folder):
            # the deepest folder decides; at equal depth the stricter answer
            key = (folder.rstrip("/").count("/"), _STRICTNESS[sight], sight)
            if best is None or key[:2] > best[:2]:
                best = key
    if best is not None:
        return best[2]
    if sandbox.home_hidden and inside(path, sandbox.home):
        return "unseen"
    if inside(path, "/tmp"):
        return "unseen"  # commands see the task's own /tmp instead of this machine's
    return "read"


def path_sight(sandbox: Sandbox, path: str) -> PathSight:
    """What commands in ``sandbox`` see of the absolute host ``path`` (see the module's
    docstring): ``write``, ``read``, ``unseen`` or ``hidden``."""
    deciders = _deciders(sandbox)
    spellings: Iterable[str] = dict.fromkeys([os.path.normpath(path), resolved(path)])
    return max((_one(p, deciders, sandbox) for p in spellings), key=_STRICTNESS.__getitem__)
