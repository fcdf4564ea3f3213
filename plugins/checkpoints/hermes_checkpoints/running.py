"""Which agent calls are changing a workspace right now: one marker file per call in flight.

A call that may change the workspace leaves ``running/<key>/<pid>-<n>`` in the store from the
moment its checkpoint is settled until its result is in (``hermes_post_tool_call``). A restore
is refused while a marker of a living process is there; a marker of a process that is gone (or
older than a day) is stale and removed.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path

from .store import Store

STALE_SECONDS = 24 * 3600.0
"""A marker older than this is stale whatever its process: no call runs for a day."""

_counter = itertools.count(1)


def _folder(store: Store, key: str) -> Path:
    return store.path / "running" / key


def mark(store: Store, key: str, call: str) -> Path:
    """Leave the marker of a call in flight in workspace ``key``; returns its path."""
    folder = _folder(store, key)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}-{next(_counter)}"
    path.write_text(json.dumps({"pid": os.getpid(), "call": call, "time": time.time()}))
    return path


def unmark(path: Path) -> None:
    """Remove a call's marker (it may already be gone)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def in_flight(store: Store, key: str) -> list[str]:
    """One line per call in flight in workspace ``key`` (stale markers are removed)."""
    found = []
    try:
        entries = list(_folder(store, key).iterdir())
    except FileNotFoundError:
        return []
    for path in entries:
        try:
            info = json.loads(path.read_text())
            pid, call, since = int(info["pid"]), str(info["call"]), float(info["time"])
        except (OSError, ValueError, KeyError, TypeError):
            unmark(path)
            continue
        if not _alive(pid) or time.time() - since > STALE_SECONDS:
            unmark(path)
            continue
        found.append(
            f"{call} in process {pid}, since {time.strftime('%H:%M:%S', time.localtime(since))}"
        )
    return found
