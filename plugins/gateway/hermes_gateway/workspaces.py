"""Where each person's commands run: a folder of their own under ``<home>/workspaces``
(``gateway.workspaces: per-user``, the default). A configured person's is ``people/<id>``,
whichever platform id they write from; a guest's is named after the platform id they wrote from
(``workspace_name``), as before people existed, and is recorded with them (:mod:`.records`) so
that their scheduled jobs find it too."""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from .people import is_guest
from .records import read_record

WORKSPACES = "workspaces"
"""The folder of the hermes home that holds the workspaces."""
PEOPLE_WORKSPACES = "people"
"""The folder of the workspace root that holds configured people's workspaces (a guest's is
``workspace_name(platform, user_id)`` beside it, as it always was)."""


@functools.lru_cache(maxsize=4096)
def workspace_name(platform: str, user_id: str) -> str:
    """A folder name of its own for each (platform, user): readable, and distinct even where
    two ids differ only in characters a file name cannot hold."""
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{platform}-{user_id}")[:64].lstrip(".")
    digest = hashlib.sha256(f"{platform}\0{user_id}".encode()).hexdigest()[:10]
    return f"{readable}-{digest}"


def person_workspace(home: Path, person: str) -> Path:
    """The workspace of ``person``'s runs that no message names (their scheduled jobs): a
    configured person's folder; for a guest the folder recorded when they last wrote, else a
    new one of their own under ``people/`` (never the process's own folder)."""
    root = home / WORKSPACES
    if is_guest(person):
        recorded = read_record(home, person)["workspaces"]
        if recorded:
            return Path(recorded[-1])
    return root / PEOPLE_WORKSPACES / person


__all__ = ["PEOPLE_WORKSPACES", "WORKSPACES", "person_workspace", "workspace_name"]
