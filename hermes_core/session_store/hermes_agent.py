"""The Hermes agent's own session database (its ``state.db``): recognised, and its sessions
copied into hermes's store, read-only.

The Hermes agent keeps its conversations in ``$HERMES_HOME/state.db``; hermes keeps its own in
``sessions.db`` beside it (:data:`STORE_FILE`), so the two programs never share a file. The
agent's file is only ever opened read-only (``mode=ro``): nothing in it is renamed, rewritten,
re-moded or deleted. :func:`import_hermes_agent` copies what it holds (sessions with their
system prompt, title, parent chain, token counts; the active messages with their tool calls,
tool results and reasoning) into a :class:`~.sqlite_store.SQLiteSessionStore`; running it again
copies only what is new, so it is idempotent.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .codec import INSERT_MESSAGE_SQL, dump_json, make_title, message_row
from .connections import file_state, read_only_connection
from .errors import SessionStoreError
from .schema import APPLICATION_ID, COUNTER_COLUMNS, SESSION_FIELDS
from .sqlite_store import SQLiteSessionStore

STORE_FILE = "sessions.db"
"""hermes's own session database in ``$HERMES_HOME``."""
HERMES_AGENT_FILE = "state.db"
"""The Hermes agent's session database in ``$HERMES_HOME`` (also where hermes before 0.2
kept its own: :func:`store_path` keeps using such a file)."""
IMPORTED_FROM = "hermes-agent"
"""``SessionInfo.metadata["imported_from"]`` of a session copied from the Hermes agent."""

_CONTENT_JSON_PREFIX = "\x00json:"  # how the agent stores a list (multimodal) content
_ASSISTANT_JSON = ("reasoning_details", "codex_reasoning_items", "codex_message_items")
_MESSAGE_COLUMNS = (
    "id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name",
    "timestamp", "token_count", "finish_reason", "reasoning", "reasoning_content",
    "reasoning_details", "codex_reasoning_items", "codex_message_items", "api_content",
    "platform_message_id", "effect_disposition", "active",
)  # fmt: skip
_SESSION_COLUMNS = (
    "id", "source", "model", "billing_provider", "system_prompt", "parent_session_id",
    "started_at", "ended_at", "end_reason", "title", "input_tokens", "output_tokens",
    "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd",
    "cwd", "user_id", "chat_id", "chat_type", "thread_id", "profile_name", "archived",
    "model_config", "api_call_count",
)  # fmt: skip
_KEPT_FIELDS = (
    "cwd", "user_id", "chat_id", "chat_type", "thread_id", "profile_name", "archived",
    "model_config", "api_call_count",
)  # fmt: skip
"""Columns of the agent's sessions kept in ``metadata["hermes_agent"]``."""


class SessionImportNotice(UserWarning):
    """Said once when hermes copies the Hermes agent's sessions by itself (the CLI prints it as
    one line)."""


@dataclass
class ImportReport:
    """What one :func:`import_hermes_agent` did."""

    source: Path
    sessions_added: int = 0
    sessions_updated: int = 0
    messages: int = 0
    inactive_skipped: int = 0
    conflicts: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        """Whether anything was copied."""
        return bool(self.sessions_added or self.sessions_updated or self.messages)

    def line(self) -> str:
        """One line saying what was copied, from where, and that the file was left as it is."""
        if not self.changed:
            return f"nothing new in the Hermes agent's {self.source} (left as it is)"
        parts = [f"{self.sessions_added} new session(s)"]
        if self.sessions_updated:
            parts.append(f"{self.sessions_updated} updated")
        parts.append(f"{self.messages:,} message(s)")
        text = (
            f"imported {', '.join(parts)} from the Hermes agent's {self.source} in "
            f"{self.seconds:.1f} s (read-only: the file is left as it is)"
        )
        if self.conflicts:
            text += f"; {self.conflicts} id(s) already used by hermes's own sessions were skipped"
        return text


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that changes nothing of ``path`` and creates nothing beside it."""
    return read_only_connection(path)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def is_hermes_agent_db(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is the Hermes agent's session database (its ``sessions``, ``messages``
    and ``schema_version`` tables, not hermes's application id); read-only, never raises."""
    path = Path(path)
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return False
        conn = _read_only(path)
    except (OSError, sqlite3.Error):
        return False
    try:
        if conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID:
            return False
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {"sessions", "messages", "schema_version"} <= tables
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def is_hermes_store(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a session database hermes wrote (its application id); read-only."""
    path = Path(path)
    try:
        if not path.is_file():
            return False
        conn = _read_only(path)
    except (OSError, sqlite3.Error):
        return False
    try:
        return bool(conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID)
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def store_path(home: Path) -> Path:
    """hermes's session database in ``home``: ``sessions.db``, or a ``state.db`` that hermes
    itself wrote (before it moved to ``sessions.db``) when there is no ``sessions.db`` yet."""
    own = home / STORE_FILE
    legacy = home / HERMES_AGENT_FILE
    if not own.exists() and is_hermes_store(legacy):
        return legacy
    return own


def signature(path: Path) -> str | None:
    """A short fingerprint of what the agent's database holds (changes when a session or
    message is added, ended or retitled), or ``None`` when it cannot be read."""
    try:
        conn = _read_only(path)
    except sqlite3.Error:
        return None
    try:
        conn.execute("BEGIN")
        messages = conn.execute("SELECT COUNT(*), MAX(id) FROM messages").fetchone()
        sessions = conn.execute(
            "SELECT COUNT(*), MAX(started_at), TOTAL(COALESCE(ended_at, 0)), "
            "TOTAL(LENGTH(COALESCE(title, ''))) FROM sessions"
        ).fetchone()
        return json.dumps([list(messages), list(sessions)])
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _decode_json(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return value


def to_message(row: dict[str, Any]) -> dict[str, Any]:
    """One row of the agent's ``messages`` table as an OpenAI-format message dict, the way the
    agent itself loads it for a resume (its own extra fields kept under their names)."""
    role = row.get("role") or ""
    content = row.get("content")
    if isinstance(content, str) and content.startswith(_CONTENT_JSON_PREFIX):
        try:
            content = json.loads(content[len(_CONTENT_JSON_PREFIX) :])
        except ValueError:
            pass
    message: dict[str, Any] = {"role": role, "content": content}
    calls = _decode_json(row.get("tool_calls"))
    if calls:
        message["tool_calls"] = calls if isinstance(calls, list) else [calls]
    for key in ("tool_call_id", "tool_name", "effect_disposition", "api_content"):
        if row.get(key):
            message[key] = row[key]
    if row.get("platform_message_id"):
        message["message_id"] = row["platform_message_id"]
    if row.get("token_count") is not None:
        message["token_count"] = row["token_count"]
    if role == "assistant":
        for key in ("finish_reason", "reasoning"):
            if row.get(key):
                message[key] = row[key]
        if row.get("reasoning_content") is not None:
            message["reasoning_content"] = row["reasoning_content"]
        for key in _ASSISTANT_JSON:
            if row.get(key):
                message[key] = _decode_json(row[key])
    return message


def _session_values(row: dict[str, Any], first_user: str | None) -> dict[str, Any]:
    """The values of hermes's session columns for one of the agent's sessions."""
    title = row.get("title") or (make_title(first_user) if first_user else None)
    return {
        "source": row.get("source") or "cli",
        "model": row.get("model") or "",
        "provider": row.get("billing_provider") or "",
        "system_prompt": row.get("system_prompt"),
        "parent_session_id": row.get("parent_session_id"),
        "started_at": float(row.get("started_at") or 0.0),
        "ended_at": row.get("ended_at"),
        "end_reason": row.get("end_reason"),
        "title": title,
    }


def _read(
    conn: sqlite3.Connection,
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]], int]:
    """Every session of the agent's database and its active messages in order (one snapshot),
    and how many inactive (rewound or archived) messages were left out."""
    scols = [c for c in _SESSION_COLUMNS if c in _columns(conn, "sessions")]
    mcols = [c for c in _MESSAGE_COLUMNS if c in _columns(conn, "messages")]
    conn.execute("BEGIN")
    try:
        sessions = [
            dict(zip(scols, r, strict=True))
            for r in conn.execute(
                f"SELECT {', '.join(scols)} FROM sessions ORDER BY started_at, rowid"
            )
        ]
        messages: dict[str, list[dict[str, Any]]] = {}
        inactive = 0
        for r in conn.execute(f"SELECT {', '.join(mcols)} FROM messages ORDER BY id"):
            row = dict(zip(mcols, r, strict=True))
            if row.get("active", 1) == 0:
                inactive += 1
                continue
            messages.setdefault(row["session_id"], []).append(row)
    finally:
        conn.execute("COMMIT")
    return sessions, messages, inactive


def import_hermes_agent(
    store: SQLiteSessionStore, source: str | os.PathLike[str], *, record: bool = True
) -> ImportReport:
    """Copy the Hermes agent's sessions in ``source`` (its ``state.db``) into ``store``.

    The file is opened read-only and left exactly as it is. A session already copied gets
    only what is new (messages the agent added since, a new title or end); one whose id
    hermes uses for a session of its own is skipped and counted. Rewound or archived
    messages (inactive in the agent) are not copied. With ``record``, the fingerprint of the
    file is kept in the store, so :func:`sync_hermes_agent` knows there is nothing new.

    :raises SessionStoreError: ``source`` is not the Hermes agent's database or cannot be read.
    """
    started = time.perf_counter()
    path = Path(source)
    if not is_hermes_agent_db(path):
        raise SessionStoreError(f"{path} is not a Hermes agent session database")
    fingerprint = signature(path) if record else None  # before: a later change is seen later
    try:
        for _attempt in range(5):
            before = file_state(path)
            conn = _read_only(path)
            try:
                sessions, messages, inactive = _read(conn)
            finally:
                conn.close()
            if file_state(path) == before:
                break  # nothing wrote the file while it was read: a consistent snapshot
    except (OSError, sqlite3.Error) as exc:
        raise SessionStoreError(f"cannot read {path}: {exc}") from None
    report = ImportReport(source=path, inactive_skipped=inactive)

    def copy(conn: sqlite3.Connection) -> None:
        existing = {
            row[0]: json.loads(row[1] or "{}")
            for row in conn.execute("SELECT id, metadata FROM sessions")
        }
        for row in sessions:
            _copy_session(conn, row, messages.get(row["id"], []), existing.get(row["id"]), report)
        if fingerprint is not None:
            conn.execute(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                (_meta_key(path), fingerprint),
            )

    store._run(copy, write=True, what="import the Hermes agent's sessions")
    if report.messages:
        store.index_pending()
    report.seconds = time.perf_counter() - started
    return report


def _meta_key(path: Path) -> str:
    return f"hermes-agent-import:{path.resolve()}"


def _copy_session(
    conn: sqlite3.Connection,
    row: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    existing: dict[str, Any] | None,
    report: ImportReport,
) -> None:
    """Copy one session (new) or what is new of it (copied before), inside the write."""
    sid = row["id"]
    first_user = next(
        (m["content"] for m in rows if m.get("role") == "user" and isinstance(m["content"], str)),
        None,
    )
    values = _session_values(row, first_user)
    if existing is not None and existing.get("imported_from") != IMPORTED_FROM:
        report.conflicts += 1
        return
    done = existing.get("hermes_agent", {}) if existing is not None else {}
    last = int(done.get("last_message_id", 0))
    new_rows = [m for m in rows if int(m["id"]) > last]
    if (
        existing is not None
        and not new_rows
        and all(done.get(k) == row.get(k) for k in ("title", "ended_at", "end_reason"))
    ):
        return
    kept = {k: row.get(k) for k in _KEPT_FIELDS if row.get(k) is not None}
    if isinstance(kept.get("model_config"), str):
        kept["model_config"] = _decode_json(kept["model_config"])
    meta_inner = {
        **kept,
        "last_message_id": int(rows[-1]["id"]) if rows else last,
        "title": row.get("title"),
        "ended_at": row.get("ended_at"),
        "end_reason": row.get("end_reason"),
    }
    metadata = {"imported_from": IMPORTED_FROM, "hermes_agent": meta_inner}
    calls = 0
    for m in new_rows:
        decoded = _decode_json(m.get("tool_calls"))
        calls += len(decoded) if isinstance(decoded, list) else int(bool(decoded))
    counters = {name: row.get(name) or 0 for name in COUNTER_COLUMNS[2:-1]}
    if existing is None:
        names = ["id", *SESSION_FIELDS, "message_count", "tool_call_count", *counters]
        names += ["estimated_cost_usd", "metadata"]
        params = [sid, *(values[f] for f in SESSION_FIELDS), len(new_rows), calls]
        params += [*counters.values(), row.get("estimated_cost_usd")]
        params.append(dump_json(metadata, "the session metadata"))
        conn.execute(
            f"INSERT INTO sessions ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            params,
        )
        report.sessions_added += 1
    else:
        conn.execute(
            "UPDATE sessions SET title = COALESCE(?, title), ended_at = ?, end_reason = ?, "
            "message_count = message_count + ?, tool_call_count = tool_call_count + ?, "
            "metadata = ? WHERE id = ?",
            (
                row.get("title"), values["ended_at"], values["end_reason"], len(new_rows), calls,
                dump_json({**existing, **metadata}, "the session metadata"), sid,
            ),
        )  # fmt: skip
        report.sessions_updated += 1
    conn.executemany(
        INSERT_MESSAGE_SQL,
        (message_row(to_message(m), sid, float(m.get("timestamp") or 0.0)) for m in new_rows),
    )
    report.messages += len(new_rows)


def sync_hermes_agent(store: SQLiteSessionStore, home: Path) -> ImportReport | None:
    """Copy what is new in the Hermes agent's ``state.db`` of ``home`` into ``store``, when
    there is such a file and it changed since the last copy; ``None`` when there was nothing to
    do. Never raises for the agent's file: one that cannot be read is left for
    ``hermes sessions import-hermes`` to report."""
    source = home / HERMES_AGENT_FILE
    if store.path.resolve() == source.resolve() or not is_hermes_agent_db(source):
        return None
    fingerprint = signature(source)
    if fingerprint is None:
        return None
    known = store._run(
        lambda c: c.execute(
            "SELECT value FROM store_meta WHERE key = ?", (_meta_key(source),)
        ).fetchone(),
        write=False,
        what="read the import state",
    )
    if known is not None and known[0] == fingerprint:
        return None
    try:
        return import_hermes_agent(store, source)
    except SessionStoreError:
        return None
