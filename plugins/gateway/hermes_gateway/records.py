"""What the gateway learns of each person, kept for ``hermes gateway people``: the platform ids
they wrote from and the workspace folders they had, in ``<home>/people/<id>/gateway.json``.

A guest's id cannot be turned back into their platform id (it ends with a digest), nor their
workspace folder found from it; this record is how ``hermes gateway people`` shows them and
``forget`` finds the folder. It is written the first time a process sees a person write from a
platform id (a small file, replaced atomically); a lost update between two workers is written
again by the next process that sees them.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hermes_hookspecs import person_home

RECORD = "gateway.json"
"""The record's file name in a person's folder."""


def record_path(home: Path, person: str) -> Path:
    """Where ``person``'s record is."""
    return person_home(home, person) / RECORD


def read_record(home: Path, person: str) -> dict[str, list[str]]:
    """``{"ids": [...], "workspaces": [...]}`` as recorded for ``person`` (empty lists when
    nothing is, or the file cannot be read)."""
    try:
        data: Any = json.loads(record_path(home, person).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    return {
        key: [str(v) for v in data.get(key) or [] if isinstance(v, str)]
        for key in ("ids", "workspaces")
    }


def remember_ids(home: Path, person: str, platform_id: str, workspace: str | None) -> None:
    """Add ``platform_id`` (``PLATFORM:USER_ID``) and ``workspace`` (a folder, or ``None``) to
    ``person``'s record when they are not in it. Never raises: a record that cannot be written
    costs only a line of ``hermes gateway people``."""
    with contextlib.suppress(OSError, ValueError):
        known = read_record(home, person)
        changed = False
        for key, value in (("ids", platform_id), ("workspaces", workspace)):
            if value and value not in known[key]:
                known[key].append(value)
                changed = True
        if not changed:
            return
        path = record_path(home, person)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".gateway-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(known, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


__all__ = ["RECORD", "read_record", "record_path", "remember_ids"]
