"""What each person of a gateway owns in the hermes home: their sessions (and the tokens and
cost in them), their own folder ``<home>/people/<id>`` (memory, skills, scheduled jobs, what
the gateway recorded of them) and their workspace folders. ``hermes gateway people`` shows it;
``hermes gateway people forget`` deletes it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hermes_hookspecs import (
    PEOPLE_DIR,
    PERSON_ID_RE,
    HermesError,
    PersonalSessionStore,
    SessionStore,
    person_home,
)

from .people import People, is_guest
from .records import RECORD, read_record
from .workspaces import PEOPLE_WORKSPACES

PARTS = {"memories": "memory", "skills": "skills", "cron": "scheduled jobs"}
"""What the folders of a person's own folder hold, as shown."""
PAGE = 500
"""Sessions read at a time while adding up a person's usage."""


@dataclass
class Belongings:
    """What one person owns.

    :param person: the person id.
    :param configured: whether ``gateway.users`` names them.
    :param ids: their platform ids (configured, then recorded).
    :param groups: their groups.
    :param session_ids: their sessions.
    :param tokens: input and output tokens over their sessions.
    :param cost_usd: the estimated cost of their sessions.
    :param folder: their own folder, when it exists.
    :param parts: what their own folder holds (``memory``, ``skills``, ``scheduled jobs``...).
    :param workspaces: their workspace folders that exist.
    """

    person: str
    configured: bool = False
    ids: list[str] = field(default_factory=list)
    groups: tuple[str, ...] = ()
    session_ids: list[str] = field(default_factory=list)
    tokens: int = 0
    cost_usd: float = 0.0
    folder: Path | None = None
    parts: list[str] = field(default_factory=list)
    workspaces: list[Path] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether nothing is kept for them."""
        return not (self.session_ids or self.folder or self.workspaces)


def personal_store(store: SessionStore) -> PersonalSessionStore:
    """``store`` when it can tell whose each session is; :class:`HermesError` otherwise."""
    if not isinstance(store, PersonalSessionStore):
        raise HermesError(
            f"the session store in use ({type(store).__name__}) cannot tell whose each session "
            "is, so people's sessions cannot be listed or forgotten"
        )
    return store


def everyone(home: Path, store: PersonalSessionStore, people: People) -> list[str]:
    """Every person the home knows of: configured, with sessions, or with a folder."""
    found: set[str] = set(people.users)
    found.update(person for person in store.people_counts() if person is not None)
    folder = home / PEOPLE_DIR
    if folder.is_dir():
        found.update(entry.name for entry in folder.iterdir() if entry.is_dir())
    return sorted(p for p in found if PERSON_ID_RE.match(p) and ".." not in p)


def size_of(path: Path) -> int:
    """The bytes of the files under ``path`` (links are not followed)."""
    if path.is_symlink() or not path.is_dir():
        return path.lstat().st_size if path.exists() or path.is_symlink() else 0
    total = 0
    for root, folders, files in os.walk(path):
        for name in files + [f for f in folders if os.path.islink(os.path.join(root, f))]:
            total += os.lstat(os.path.join(root, name)).st_size
    return total


def _sessions(store: PersonalSessionStore, person: str) -> Iterator[tuple[str, int, float]]:
    offset = 0
    while True:
        page = store.list_people_sessions([person], limit=PAGE, offset=offset)
        for session in page:
            data = session.metadata
            tokens = int(data.get("input_tokens") or 0) + int(data.get("output_tokens") or 0)
            yield session.id, tokens, float(data.get("estimated_cost_usd") or 0.0)
        if len(page) < PAGE:
            return
        offset += PAGE


def _workspaces(home: Path, person: str, recorded: list[str]) -> list[Path]:
    """The person's workspace folders that exist, each inside ``<home>/workspaces``."""
    root = (home / "workspaces").resolve()
    candidates = [root / PEOPLE_WORKSPACES / person, *(Path(p) for p in recorded)]
    found: list[Path] = []
    for candidate in candidates:
        resolved = candidate.resolve() if candidate.exists() else None
        if (
            resolved is not None
            and resolved.is_dir()
            and resolved.is_relative_to(root)
            and resolved != root
            and resolved != root / PEOPLE_WORKSPACES
            and resolved not in found
        ):
            found.append(resolved)
    return found


def belongings_of(
    home: Path, store: PersonalSessionStore, people: People, person: str
) -> Belongings:
    """What ``person`` owns in ``home``."""
    entry = people.users.get(person)
    recorded = read_record(home, person)
    owned = Belongings(person=person, configured=entry is not None)
    if entry is not None:
        owned.ids = list(entry.ids)
        owned.groups = entry.groups
    owned.ids += [i for i in recorded["ids"] if i not in owned.ids]
    for session_id, tokens, cost in _sessions(store, person):
        owned.session_ids.append(session_id)
        owned.tokens += tokens
        owned.cost_usd += cost
    folder = person_home(home, person)
    if folder.is_dir() and not folder.is_symlink():
        owned.folder = folder
        names = sorted(e.name for e in folder.iterdir() if e.name != RECORD)
        owned.parts = [PARTS.get(name, name) for name in names]
    owned.workspaces = _workspaces(home, person, recorded["workspaces"])
    return owned


def describe(owned: Belongings) -> list[str]:
    """The lines ``hermes gateway people`` prints for one person."""
    kind = "a guest" if is_guest(owned.person) else (None if owned.configured else "not in config")
    facts = [kind] if kind else []
    if owned.ids:
        facts.append("ids: " + ", ".join(owned.ids))
    if owned.groups:
        facts.append("groups: " + ", ".join(owned.groups))
    lines = [owned.person + (f"  ({'; '.join(facts)})" if facts else "")]
    sessions = f"  sessions: {len(owned.session_ids)}"
    if owned.session_ids:
        sessions += f" ({owned.tokens:,} tokens, ${owned.cost_usd:.4f})"
    lines.append(sessions)
    if owned.folder is not None:
        held = ", ".join(owned.parts) or "nothing yet"
        lines.append(f"  own data: {held} ({owned.folder}, {_size(size_of(owned.folder))})")
    else:
        lines.append("  own data: none")
    for workspace in owned.workspaces or []:
        lines.append(f"  workspace: {workspace} ({_size(size_of(workspace))})")
    if not owned.workspaces:
        lines.append("  workspace: none")
    return lines


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop returns


__all__ = [
    "Belongings",
    "belongings_of",
    "describe",
    "everyone",
    "personal_store",
    "size_of",
]
