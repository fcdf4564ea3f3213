"""A contract check for plugin authors: a tool that stores data keeps each person's apart.

:func:`check_keeps_people_apart` runs a tool's handler as three people of one home, the way the
host calls it for a gateway's users (``ToolContext.person``, ``ToolContext.data_home``, a session
store limited to the person's sessions), and fails with a readable message when what one person
stored reaches another.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hermes_hookspecs import (
    PEOPLE_DIR,
    HermesError,
    SessionInfo,
    SessionStore,
    Tool,
    ToolContext,
    ToolOutput,
    person_home,
)

from ..loop.tool_calls import result_text

__all__ = ["GUEST", "NEIGHBOUR", "WRITER", "check_keeps_people_apart", "run_as"]

WRITER = "alice"
"""The person who stores the secret."""
NEIGHBOUR = "bob"
"""A person who stores data of their own (the same write, with his own canary), then reads."""
GUEST = "guest"
"""A person who never stored anything, and reads."""

STORE_FILES = ("sessions.db", "sessions.db-wal", "sessions.db-shm", "sessions.db-journal")
"""The session store's files: it keeps people apart by itself (each session is someone's), so
a secret in them is not a leak."""


def run_as(
    tool: Tool,
    args: Mapping[str, Any],
    *,
    home: str | Path,
    person: str | None,
    config: Mapping[str, Any] | None = None,
    session_store: SessionStore | None = None,
    session_id: str = "",
) -> str:
    """Call ``tool``'s handler with ``args`` as ``person`` (``None``: the home's owner) of the
    hermes home ``home``, with the context the host would give that person's call, and return
    the text the model would see: the result, or ``Error: <message>`` when the handler raised a
    :class:`~hermes_hookspecs.HermesError` (a ``ToolError``...). Other exceptions propagate.

    ``session_store``, when given, is handed over as ``ctx.session_store`` (limited to
    ``person``'s sessions as the host limits it: pass the whole store). The arguments are not
    checked against the tool's schema: pass valid ones.
    """
    store: SessionStore | None = session_store
    if session_store is not None and person is not None:
        from ..session_store.personal_view import PersonalView

        store = PersonalView(session_store, person)
    ctx = ToolContext(
        task_id=f"people-check-{person or 'owner'}",
        session_id=session_id,
        call_id=f"call-{uuid.uuid4().hex[:8]}",
        tool_name=tool.name,
        config=MappingProxyType(dict(config or {})),
        hermes_home=Path(home),
        session_store=store,
        person=person,
    )
    try:
        value = tool.handler(dict(args), ctx)
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
    except HermesError as exc:
        return f"Error: {exc}"
    if isinstance(value, ToolOutput):
        value = value.text
    return result_text(value)


async def _awaited(value: Any) -> Any:
    """What an async handler's result resolves to."""
    return await value


def check_keeps_people_apart(
    tool: Tool,
    *,
    write_args: Mapping[str, Any],
    read_args: Mapping[str, Any],
    secret: str,
    home: str | Path,
    read_tool: Tool | None = None,
    config: Mapping[str, Any] | None = None,
    owner: bool = False,
    shared_files: Sequence[str] = (),
) -> dict[str | None, str]:
    """Prove that ``tool`` keeps what it stores per person (``ToolContext.person``); fail with
    an :class:`AssertionError` saying who saw what otherwise.

    In the hermes home ``home`` (a folder of the test's, created when missing), with a real
    SQLite session store at ``home/sessions.db`` and one session per person:

    1. ``"alice"`` runs ``tool`` with ``write_args`` (which must contain ``secret``), then
       ``read_args`` (with ``read_tool`` when given: a toolset whose reads and writes are two
       tools); her read must show ``secret``, so the check cannot pass for a read that shows
       nothing;
    2. ``"bob"`` runs ``write_args`` with ``secret`` replaced by a canary of his own (so he has
       data of his own, as a tool that mixes stores would mix it), then ``read_args``;
    3. ``"guest"`` (who stored nothing) runs ``read_args``, and so does the owner with
       ``owner=True`` (leave it off for a tool that shows the owner everyone's data on purpose);
    4. alice reads again: bob's canary must not show.

    It fails when ``secret`` is in the result of anyone but alice, when any file holds it outside
    alice's data folder (``home/people/alice``): under another person's data folder, or anywhere
    else in the home (the session store's files and those matching the ``shared_files`` globs,
    relative to ``home``, excepted: a tool that keeps a shared file keyed by person lists it
    there), or when alice's write fails, her read lacks ``secret`` or bob cannot store data of
    his own beside hers.

    Handlers run as :func:`run_as` runs them (``config`` is the configuration they see); keep
    ``secret`` out of ``read_args`` (a result that repeats its arguments would look like a leak).

    :return: what ``read_args`` returned to each person (``None``: the owner), alice's first read
        under ``"alice"``, for further checks of your own.
    :raises ValueError: ``secret`` is empty, missing from ``write_args`` or present in
        ``read_args``.
    """
    if not secret:
        raise ValueError("secret is empty: give a string only the writer stores")
    if secret not in _text(write_args):
        raise ValueError(f"write_args must contain the secret {secret!r}")
    if secret in _text(read_args):
        raise ValueError(
            "read_args must not contain the secret: a result that repeats its arguments would "
            "look like a leak"
        )
    root = Path(home)
    root.mkdir(parents=True, exist_ok=True)
    from ..session_store import SQLiteSessionStore

    store = SQLiteSessionStore(root / "sessions.db")
    try:
        people = [WRITER, NEIGHBOUR, GUEST, *([None] if owner else [])]
        sessions = {person: _session(store, person) for person in people}

        def run(person: str | None, args: Mapping[str, Any], reading: bool = False) -> str:
            return run_as(
                read_tool if reading and read_tool is not None else tool,
                args,
                home=root,
                person=person,
                config=config,
                session_store=store,
                session_id=sessions[person],
            )

        return _check(tool.name, run, write_args, read_args, secret, root, owner, shared_files)
    finally:
        store.close()


Runner = Callable[[str | None, Mapping[str, Any], bool], str]
"""Calls the tool under check as a person (``None``: the owner) with arguments: the reading
tool when the last argument is true, else the writing one."""


def _check(
    name: str,
    run: Runner,
    write_args: Mapping[str, Any],
    read_args: Mapping[str, Any],
    secret: str,
    root: Path,
    owner: bool,
    shared_files: Sequence[str],
) -> dict[str | None, str]:
    """The steps of :func:`check_keeps_people_apart`, with ``run(person, args, reading)``
    calling the tool."""
    stored = run(WRITER, write_args, False)
    if stored.startswith("Error: "):
        raise AssertionError(f"{name}: alice's write failed, so nothing was checked: {stored}")
    reads: dict[str | None, str] = {WRITER: run(WRITER, read_args, True)}
    if secret not in reads[WRITER]:
        raise AssertionError(
            f"{name}: alice's read does not show the secret she stored, so the check would "
            f"prove nothing; choose read_args that show it. Her read returned: "
            f"{_excerpt(reads[WRITER], secret)}"
        )
    canary = f"bob{uuid.uuid4().hex[:12]}"
    own = run(NEIGHBOUR, _replaced(write_args, secret, canary), False)
    if own.startswith("Error: "):
        raise AssertionError(
            f"{name}: bob could not store data of his own after alice did (the same write, his "
            f"own text): {own}. A tool that keeps one store for everyone refuses it; each "
            "person's data must be theirs alone"
        )
    for person in (NEIGHBOUR, GUEST, *([None] if owner else [])):
        reads[person] = run(person, read_args, True)
        if secret in reads[person]:
            raise AssertionError(
                f"{name} leaks between people: what alice stored reached {_who(person)}'s "
                f"result: {_excerpt(reads[person], secret)}"
            )
    again = run(WRITER, read_args, True)
    if canary in again:
        raise AssertionError(
            f"{name} leaks between people: what bob stored reached alice's result: "
            f"{_excerpt(again, canary)}"
        )
    _check_files(name, root, secret, shared_files)
    return reads


def _check_files(name: str, root: Path, secret: str, shared_files: Sequence[str]) -> None:
    """Fail when a file of ``root`` outside alice's data folder holds ``secret``."""
    alice = person_home(root, WRITER)
    allowed = {root / n for n in STORE_FILES}
    for pattern in shared_files:
        allowed.update(root.glob(pattern))
    needles = {secret.encode(), json.dumps(secret)[1:-1].encode()}
    for path in _files(root):
        if path.is_relative_to(alice) or path in allowed:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(needle in data for needle in needles):
            raise AssertionError(
                f"{name} leaks between people: what alice stored is in {path}, "
                f"{_whose(root, path)}, outside her data_home {alice}"
            )


def _files(root: Path) -> Iterator[Path]:
    """Every regular file under ``root`` (symbolic links not followed)."""
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield path


def _whose(root: Path, path: Path) -> str:
    """Whose data folder ``path`` is in, in words."""
    people = root / PEOPLE_DIR
    if path.is_relative_to(people):
        return f"in the data_home of {path.relative_to(people).parts[0]!r}"
    return "in the home's shared files (the owner's data_home)"


def _session(store: SessionStore, person: str | None) -> str:
    """A new session of ``person`` in ``store``; its id."""
    session_id = f"people-check-{person or 'owner'}-{uuid.uuid4().hex[:8]}"
    store.create_session(SessionInfo(id=session_id, source="test", person=person))
    return session_id


def _replaced(value: Any, old: str, new: str) -> Any:
    """``value`` (plain data) with ``old`` replaced by ``new`` in every string."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, Mapping):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replaced(v, old, new) for v in value]
    return value


def _text(value: Any) -> str:
    """Plain data as text, for looking for a string in it."""
    return json.dumps(value, ensure_ascii=False, default=str)


def _who(person: str | None) -> str:
    """A person as a message names them."""
    return "the owner" if person is None else person


def _excerpt(text: str, needle: str, width: int = 80) -> str:
    """The part of ``text`` around ``needle`` (its start when absent), on one line."""
    at = max(text.find(needle), 0)
    start = max(at - width, 0)
    end = at + len(needle) + width
    part = " ".join(text[start:end].split())
    return ("…" if start else "") + repr(part) + ("…" if end < len(text) else "")
