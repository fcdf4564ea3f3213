"""Copying sessions from one store to another (``hermes sessions migrate``), through the
:class:`~hermes_hookspecs.SessionStore` contract only, so that any two stores serve: SQLite to
PostgreSQL and back, or a third-party store.

Idempotent: a session the target already holds is extended with the messages it lacks (when
what it holds is the start of the source's), and its fields and counters are brought up to the
source's; one that holds other messages is reported as a conflict and left alone. A second run
copies nothing. Sessions are copied oldest first, each in one transaction where the target
offers ``batch()``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from hermes_hookspecs import PersonalSessionStore, SessionInfo, SessionStore

__all__ = ["MigrationReport", "copy_sessions"]

COUNTED_BY_APPENDS = ("message_count", "tool_call_count")
"""Counters a store raises itself as messages are appended: never copied, or they would count
twice."""

PAGE = 500


@dataclass
class MigrationReport:
    """What a migration did: sessions new in the target, extended, already there, the messages
    copied, and the sessions left alone because the target holds other messages."""

    new: int = 0
    extended: int = 0
    unchanged: int = 0
    messages: int = 0
    conflicts: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for people."""
        text = (
            f"{self.new} sessions copied, {self.extended} extended, {self.unchanged} already "
            f"there; {self.messages} messages copied"
        )
        if self.conflicts:
            shown = ", ".join(self.conflicts[:5]) + (" ..." if len(self.conflicts) > 5 else "")
            text += f"; {len(self.conflicts)} left alone (the target holds other messages: {shown})"
        return text


def _listing(store: SessionStore, people: Collection[str | None] | None) -> Iterator[SessionInfo]:
    """Every session of ``store`` (of ``people`` only, when given), newest first.

    :raises TypeError: the store cannot list its sessions (it is no
        :class:`~hermes_hookspecs.PersonalSessionStore` and has no ``list_sessions``).
    """
    if isinstance(store, PersonalSessionStore):
        chosen = list(store.people_counts()) if people is None else list(people)

        def page(offset: int) -> list[SessionInfo]:
            return store.list_people_sessions(chosen, limit=PAGE, offset=offset)

    else:
        listing = getattr(store, "list_sessions", None)
        if listing is None or people is not None:
            raise TypeError(f"a {type(store).__name__} cannot list its sessions by person")

        def page(offset: int) -> list[SessionInfo]:
            found: list[SessionInfo] = listing(limit=PAGE, offset=offset)
            return found

    offset = 0
    while True:
        found = page(offset)
        yield from found
        if len(found) < PAGE:
            return
        offset += PAGE


def _fields(info: SessionInfo) -> dict[str, Any]:
    """The fields and counters of ``info`` to set on the target's copy."""
    values = {
        f.name: getattr(info, f.name)
        for f in dataclasses.fields(info)
        if f.name not in ("id", "person", "metadata", "started_at")
    }
    # counters and the rest of the metadata as the store's own keys: a store sets the names it
    # keeps as columns (token counts, cost) and keeps the others in its metadata
    extra = {
        k: v
        for k, v in info.metadata.items()
        if k not in COUNTED_BY_APPENDS and k not in ("id", "person", "metadata")
    }
    return {**values, **extra}


def _batch(store: SessionStore) -> contextlib.AbstractContextManager[Any]:
    batch = getattr(store, "batch", None)
    return batch() if batch is not None else contextlib.nullcontext()


def copy_sessions(
    source: SessionStore,
    target: SessionStore,
    *,
    people: Collection[str | None] | None = None,
    progress: Callable[[MigrationReport], None] | None = None,
) -> MigrationReport:
    """Copy every session of ``source`` (of ``people`` only, when given: ``None`` among them is
    the home's owner) with its messages into ``target`` (see the module's docstring)."""
    report = MigrationReport()
    sessions = list(_listing(source, people))
    for info in reversed(sessions):  # oldest first: a continuation after its parent
        messages = source.get_messages(info.id)
        existing = target.get_session(info.id)
        held = target.get_messages(info.id) if existing is not None else []
        if held != messages[: len(held)]:
            report.conflicts.append(info.id)
            continue
        missing = messages[len(held) :]
        with _batch(target):
            if existing is None:
                metadata = {k: v for k, v in info.metadata.items() if k not in COUNTED_BY_APPENDS}
                target.create_session(dataclasses.replace(info, metadata=metadata))
            for message in missing:
                target.append_message(info.id, message)
            if existing is not None:
                target.update_session(info.id, **_fields(info))
        if existing is None:
            report.new += 1
        elif missing:
            report.extended += 1
        else:
            report.unchanged += 1
        report.messages += len(missing)
        if progress is not None:
            progress(report)
    return report
