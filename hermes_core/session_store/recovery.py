"""Repair of an unusable state database: diagnose it, move it aside, and copy what can still be
read into a fresh store."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from .connections import check_header, read_only_connection
from .errors import SessionStoreError
from .schema import APPLICATION_ID, COUNTER_COLUMNS, SCHEMA_VERSION, SESSION_FIELDS
from .sqlite_store import SQLiteSessionStore

log = logging.getLogger("hermes.sessions")

_NEWER = "written by a newer hermes"
_FOREIGN = "it is "  # the start of every reason that says the file is another program's


def _diagnose(path: Path) -> str | None:
    """Why ``path`` cannot be used as it is, or ``None`` when it is healthy."""
    try:
        check_header(path)
        # read-only: diagnosing changes nothing, not even another program's write-ahead log
        conn = read_only_connection(path, timeout=5.0)
    except (SessionStoreError, sqlite3.Error) as exc:
        return str(exc).split(";")[0]
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id not in (0, APPLICATION_ID):
            return f"it is another program's (application id {app_id:#x})"
        if version > SCHEMA_VERSION:
            return _NEWER
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 0 and {"sessions", "messages", "schema_version"} <= tables:
            return "it is the Hermes agent's session database"
        if version == 0 and tables - {"sqlite_sequence"}:
            return "it is not a hermes session database"
        result = [r[0] for r in conn.execute("PRAGMA quick_check(3)")]
        if result != ["ok"]:
            detail = " ".join(" ".join(result).replace("*** in database main ***", "").split())
            return "integrity check failed: " + (
                detail[:150] + "…" if len(detail) > 150 else detail
            )
        if version > 0 and {"sessions", "messages"} - tables:
            return "its tables are missing"
        return None
    except sqlite3.Error as exc:
        return f"it cannot be read ({exc})"
    finally:
        conn.close()


def repair(path: str | os.PathLike[str]) -> str:
    """Move a corrupt session database of hermes's aside as ``<name>.corrupt-<timestamp>``,
    copy what can still be read into a fresh database at ``path``, and return one line saying
    what was done. A healthy file, one written by a newer hermes and another program's file
    (the Hermes agent's ``state.db`` among them) are left exactly as they are. Run it while no
    hermes process uses the file."""
    path = Path(path)
    if not path.exists():
        return f"{path} does not exist; a new one is created when needed"
    problem = _diagnose(path)
    if problem is None:
        return f"{path} passed the integrity check; nothing to repair"
    if problem.startswith(_FOREIGN):
        return (
            f"{path}: {problem}; hermes never moves, rewrites or deletes another program's "
            "file, so it is left as it is"
            + (
                " (copy its sessions with `hermes sessions import-hermes`)"
                if "Hermes agent" in problem
                else ""
            )
        )
    if problem is _NEWER:
        return (
            f"{path} was written by a newer hermes; it is not damaged, so it is left alone: "
            "upgrade hermes to use it"
        )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    shutil.move(str(path), str(target))
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            shutil.move(str(side), f"{target}{suffix}")
    sessions, messages = _salvage(target, path)
    recovered = (
        f"; recovered {sessions} session(s) and {messages} message(s) into a new {path.name}"
        if sessions or messages
        else "; a new one is created when needed"
    )
    return f"moved {path} to {target.name} ({problem}){recovered}"


_SALVAGE_MESSAGE_COLUMNS = (
    "id, session_id, role, content, content_parts, tool_calls, tool_call_id, tool_name, "
    "reasoning, finish_reason, timestamp, token_count, layout, extra, calls_text, substrings"
)


def _readable_rows(conn: sqlite3.Connection, table: str, columns: str) -> list[tuple[Any, ...]]:
    """The rows of ``table`` that can still be read, in rowid order, stepping over damaged
    ranges (each failure skips twice as far as the last, so a gap costs few probes)."""
    rows: list[tuple[Any, ...]] = []
    after, skip, probes = -(2**63), 1, 0
    while probes < 500:
        try:
            for row in conn.execute(
                f"SELECT rowid, {columns} FROM {table} WHERE rowid > ? ORDER BY rowid", (after,)
            ):
                rows.append(tuple(row[1:]))
                after, skip = row[0], 1
            return rows
        except sqlite3.Error as exc:
            probes += 1
            if probes == 1:
                log.warning("salvaging %s: skipping what cannot be read (%s)", table, exc)
            if after >= 2**62:
                break
            after = max(after, 0) + skip
            skip *= 2
    return rows


def _salvage(source: Path, destination: Path) -> tuple[int, int]:
    """Copy the sessions and messages still readable in ``source`` into a new store."""
    sessions: list[tuple[Any, ...]] = []
    messages: list[tuple[Any, ...]] = []
    try:
        conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error:
        return 0, 0
    columns = ", ".join(("id", *SESSION_FIELDS, *COUNTER_COLUMNS, "metadata"))
    try:
        sessions = _readable_rows(conn, "sessions", columns)
        messages = _readable_rows(conn, "messages", _SALVAGE_MESSAGE_COLUMNS)
    finally:
        conn.close()
    if not sessions and not messages:
        return 0, 0
    store = SQLiteSessionStore(destination)
    known = {row[0] for row in sessions}
    orphans: dict[str, float] = {}
    for row in messages:
        if row[1] not in known:
            orphans[row[1]] = min(orphans.get(row[1], row[10] or 0.0), row[10] or 0.0)

    def copy(conn: sqlite3.Connection) -> None:
        marks = ", ".join("?" * (2 + len(SESSION_FIELDS) + len(COUNTER_COLUMNS)))
        conn.executemany(f"INSERT OR IGNORE INTO sessions ({columns}) VALUES ({marks})", sessions)
        conn.executemany(
            "INSERT OR IGNORE INTO sessions (id, started_at, title) VALUES (?, ?, ?)",
            [(sid, started, "(recovered)") for sid, started in orphans.items()],
        )
        conn.executemany(
            f"INSERT OR IGNORE INTO messages ({_SALVAGE_MESSAGE_COLUMNS}) "
            f"VALUES ({', '.join('?' * 16)})",
            messages,
        )

    try:
        store._run(copy, write=True, what="copy recovered rows")
    finally:
        store.close()
    return len(sessions) + len(orphans), len(messages)
