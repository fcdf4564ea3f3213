"""The embedded session store: SQLite in WAL mode with full-text search.

``SQLiteSessionStore(path)`` implements :class:`hermes_hookspecs.SessionStore` and adds listing,
lineage, search, deletion, pruning and statistics. One file (``$HERMES_HOME/state.db``) holds:

- ``sessions``: one row per conversation (model, provider, the system prompt replayed byte for
  byte, the parent it continues after compression, token counters, a ``metadata`` JSON object for
  everything else, e.g. ``fallbacks`` or a ``todo`` list);
- ``messages``: one row per message. Well-known keys have columns so they can be queried; every
  other key (notably ``_``-prefixed provider replay data) is kept in the ``extra`` JSON object,
  and ``layout`` records the message's keys in order, so :meth:`get_messages` returns exactly the
  dicts that were appended;
- two FTS5 indexes (external content, so the text is stored once): ``unicode61`` over the
  content and the tool calls (words, prefixes, phrases, BM25), and ``trigram`` over each
  message's ``substrings``, its tokens with digits, punctuation or CJK (CJK text, URLs, paths,
  file names, error codes). Deletes and edits reach the indexes through triggers at once; new
  messages are added in batches (every ``index_batch`` appends, and before every search, so a
  search always sees every committed message): FTS5 pays a segment flush per transaction,
  which would cost several times the append itself.

Every write is one short ``BEGIN IMMEDIATE`` transaction; while another connection holds the
write lock, a call waits (short ``busy_timeout`` waits, retried with random backoff) for up to
``timeout`` seconds, then raises :class:`SessionStoreError`: a failure is never swallowed.
With ``synchronous=NORMAL`` in WAL mode a committed write survives the process being killed
(SIGKILL); pass ``synchronous="FULL"`` to survive power loss too.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hermes_hookspecs import HermesError, SessionInfo

log = logging.getLogger("hermes.sessions")

__all__ = [
    "INSERT_MESSAGE_SQL",
    "SCHEMA_VERSION",
    "SQLiteSessionStore",
    "SearchHit",
    "SessionStoreError",
    "iter_message_rows",
    "make_title",
    "repair",
    "substrings_of",
]

T = TypeVar("T")

APPLICATION_ID = 0x4865726D  # "Herm", in the database header (PRAGMA application_id)
"""Marks a file as a hermes state database, so a foreign SQLite file is recognised."""

REPAIR_HINT = "move it away or run `hermes sessions repair`"
FIND_IDS_HINT = "`hermes sessions list` or `hermes sessions search TEXT` show the ids"
TITLE_CHARS = 60

_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CORRUPT, _SQLITE_NOTADB = 5, 6, 11, 26
_HEADER = b"SQLite format 3\x00"

_UNSPACED = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff]"
)
"""Scripts written without spaces (CJK, kana, hangul): searched as substrings."""


class SessionStoreError(HermesError):
    """The session store cannot do what was asked; the message is one line that says why and,
    where there is one, the way out."""


# --- schema and migrations ------------------------------------------------------------------

SESSION_FIELDS = (
    "source",
    "model",
    "provider",
    "system_prompt",
    "parent_session_id",
    "started_at",
    "ended_at",
    "end_reason",
    "title",
)
"""Columns that are fields of :class:`SessionInfo`."""

TOKEN_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
COUNTER_COLUMNS = ("message_count", "tool_call_count", *TOKEN_COLUMNS, "estimated_cost_usd")
"""Columns the store maintains; reported in ``SessionInfo.metadata`` under these names."""

_SESSION_SELECT = ", ".join(("id", *SESSION_FIELDS, *COUNTER_COLUMNS, "metadata"))

_V1 = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL DEFAULT 'cli',
    model TEXT NOT NULL DEFAULT '',
    provider TEXT NOT NULL DEFAULT '',
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    title TEXT,
    message_count INTEGER NOT NULL DEFAULT 0,
    tool_call_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX sessions_by_start ON sessions (started_at);
CREATE INDEX sessions_by_source ON sessions (source, started_at);
CREATE INDEX sessions_by_parent ON sessions (parent_session_id) WHERE parent_session_id IS NOT NULL;

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,    -- increasing; see search_state for why not AUTOINCREMENT
    session_id TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT '',
    content TEXT,          -- the text: a string content as is, the text parts of a list content
    content_parts TEXT,    -- JSON, when the content was a list of parts
    tool_calls TEXT,       -- JSON
    tool_call_id TEXT,
    tool_name TEXT,
    reasoning TEXT,
    finish_reason TEXT,
    timestamp REAL NOT NULL,   -- when the store received it (not returned by get_messages)
    token_count INTEGER,
    layout TEXT NOT NULL,      -- the message's keys in order (see _pack_layout)
    extra TEXT,                -- JSON object: every key without a column of its own
    calls_text TEXT,           -- searchable text of the tool calls: "name arguments" lines
    substrings TEXT            -- tokens with digits, punctuation or CJK (the trigram index)
);
CREATE INDEX messages_by_session ON messages (session_id, id);

-- Messages are indexed in batches, a little after they are committed and always before a
-- search runs: messages with id > indexed_upto are waiting. Indexing each message in its own
-- transaction costs FTS5 a segment flush per message, several times the cost of the append.
CREATE TABLE search_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_upto INTEGER NOT NULL
);
INSERT INTO search_state (id, indexed_upto) VALUES (1, 0);

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, calls_text,
    content='messages', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE messages_trigram USING fts5(
    substrings,
    content='messages', content_rowid='id',
    tokenize='trigram'
);
INSERT INTO messages_fts (messages_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)');

-- Indexed rows leave the indexes with their row; deleting the newest rows lowers the mark so
-- that a reused id is indexed again.
CREATE TRIGGER messages_after_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, calls_text)
        SELECT 'delete', old.id, old.content, old.calls_text
        WHERE old.id <= (SELECT indexed_upto FROM search_state WHERE id = 1);
    INSERT INTO messages_trigram (messages_trigram, rowid, substrings)
        SELECT 'delete', old.id, old.substrings
        WHERE old.substrings IS NOT NULL
          AND old.id <= (SELECT indexed_upto FROM search_state WHERE id = 1);
    UPDATE search_state SET indexed_upto = (SELECT COALESCE(MAX(id), 0) FROM messages)
        WHERE id = 1 AND indexed_upto > (SELECT COALESCE(MAX(id), 0) FROM messages);
END;
CREATE TRIGGER messages_after_update AFTER UPDATE OF content, calls_text, substrings ON messages
WHEN old.id <= (SELECT indexed_upto FROM search_state WHERE id = 1) BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, calls_text)
        VALUES ('delete', old.id, old.content, old.calls_text);
    INSERT INTO messages_trigram (messages_trigram, rowid, substrings)
        SELECT 'delete', old.id, old.substrings WHERE old.substrings IS NOT NULL;
    INSERT INTO messages_fts (rowid, content, calls_text)
        VALUES (new.id, new.content, new.calls_text);
    INSERT INTO messages_trigram (rowid, substrings)
        SELECT new.id, new.substrings WHERE new.substrings IS NOT NULL;
END;
"""


def _migrate_to_v1(conn: sqlite3.Connection) -> None:
    """The initial schema."""
    for statement in _split_sql(_V1):
        conn.execute(statement)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migrate_to_v1]
"""``MIGRATIONS[n]`` takes a database from schema version ``n`` to ``n + 1``; append only."""

SCHEMA_VERSION = len(MIGRATIONS)


def _split_sql(script: str) -> list[str]:
    """Split a schema script into statements (``;`` ends one unless inside a trigger body)."""
    statements, current = [], []
    for line in script.splitlines():
        line = line.split("--", 1)[0].rstrip()
        if not line.strip():
            continue
        current.append(line)
        text = "\n".join(current)
        if text.endswith(";") and sqlite3.complete_statement(text):
            statements.append(text)
            current = []
    if current:
        statements.append("\n".join(current))
    return statements


# --- messages <-> rows ----------------------------------------------------------------------

_TEXT_COLUMNS = ("tool_call_id", "tool_name", "reasoning", "finish_reason")
_NULLABLE = frozenset(("tool_calls", *_TEXT_COLUMNS, "token_count"))
"""Keys whose ``None`` is a ``NULL`` column (a ``None`` role is kept in ``extra``)."""
_MESSAGE_SELECT = (
    "role, content, content_parts, tool_calls, tool_call_id, tool_name, reasoning, "
    "finish_reason, token_count, layout, extra"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_LAYOUT_SEP = "\x1f"
_SUBSTRINGS_MAX = 65_536
_SUBSTRING_TOKEN_MAX = 300
_LEADING_PUNCT = "([{<'\"`“‘"
_TRAILING_PUNCT = ".,;:!?)]}>'\"`”’"


def _strip_token(token: str) -> str:
    """A token without the punctuation of the sentence around it (``(see config.yaml).``)."""
    return token.lstrip(_LEADING_PUNCT).rstrip(_TRAILING_PUNCT)


def _encodable(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8 (lone surrogates cannot)."""
    return _SURROGATE.search(text) is None


def _clean(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def _dumps(value: Any, what: str) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise SessionStoreError(f"cannot store {what}: {exc}") from None
    if not _encodable(text):
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def _pack_layout(keys: list[str]) -> str:
    """The keys joined by a unit separator, or JSON when a key could be misread."""
    if any(_LAYOUT_SEP in k or k.startswith("[") for k in keys) or not all(map(_encodable, keys)):
        return json.dumps(keys)
    return _LAYOUT_SEP.join(keys)


def _unpack_layout(text: str) -> list[str]:
    if text.startswith("["):
        return json.loads(text)  # type: ignore[no-any-return]
    return text.split(_LAYOUT_SEP) if text else []


def _parts_text(parts: list[Any]) -> str:
    """The searchable text of a list content: its text parts, one per line."""
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            value = part.get("text")
            if isinstance(value, str):
                texts.append(value)
    return "\n".join(texts)


def _calls_text(calls: list[Any]) -> str | None:
    """The searchable text of tool calls: one ``name arguments`` line per call."""
    lines = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, arguments = function.get("name"), function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False) if arguments else ""
            lines.append(f"{name or ''} {arguments}".strip())
    return _clean("\n".join(lines)) if lines else None


def substrings_of(text: str) -> str | None:
    """What the trigram index holds for ``text``: its tokens that contain a digit, punctuation
    or CJK (URLs, paths, file names, error codes, numbers, CJK runs), once each. Plain words are
    left to the word index, which keeps the trigram index and its cost small."""
    kept: dict[str, None] = {}
    size = 0
    for raw in text.split():
        if raw.isalpha() and raw.isascii():  # most words: left to the word index
            continue
        token = _strip_token(raw)
        if len(token) < 3 or token in kept:
            continue
        if _UNSPACED.search(token) is None and (
            token.isalpha() or len(token) > _SUBSTRING_TOKEN_MAX
        ):
            continue
        kept[token] = None
        size += len(token) + 1
        if size > _SUBSTRINGS_MAX:
            break
    return "\n".join(kept) if kept else None


@dataclass
class _EncodedMessage:
    row: tuple[Any, ...]
    text: str
    tool_call_count: int


def _encode_message(session_id: str, message: Mapping[str, Any], now: float) -> _EncodedMessage:
    """Turn a message dict into a ``messages`` row that :func:`_decode_message` turns back."""
    if not isinstance(message, Mapping):
        raise SessionStoreError(f"a message must be a dict, not {type(message).__name__}")
    extra: dict[str, Any] = {}
    role = content = parts = tool_calls = calls_text = token_count = None
    texts: dict[str, str] = {}
    for key, value in message.items():
        if key == "role" and type(value) is str and _encodable(value):
            role = value
        elif key == "content" and value is not None:
            if type(value) is str:
                if _encodable(value):
                    content = value
                else:  # kept exactly in extra; a cleaned copy is indexed
                    extra[key] = value
                    content = _clean(value)
            elif isinstance(value, list):
                parts = _dumps(value, "the message content")
                content = _clean(_parts_text(value))
            else:
                extra[key] = value
        elif key == "tool_calls" and isinstance(value, list):
            tool_calls = _dumps(value, "the tool calls")
            calls_text = _calls_text(value)
        elif key in _TEXT_COLUMNS and type(value) is str and _encodable(value):
            texts[key] = value
        elif key == "token_count" and type(value) is int and abs(value) < 2**63:
            token_count = value
        elif value is not None or key not in _NULLABLE:
            if type(key) is not str:
                raise SessionStoreError(f"cannot store a message key that is not text: {key!r}")
            extra[key] = value
    searchable = f"{content}\n{calls_text}" if content and calls_text else content or calls_text
    calls = message.get("tool_calls")
    return _EncodedMessage(
        row=(
            session_id,
            role or "",
            content,
            parts,
            tool_calls,
            texts.get("tool_call_id"),
            texts.get("tool_name"),
            texts.get("reasoning"),
            texts.get("finish_reason"),
            now,
            token_count,
            _pack_layout(list(message)),
            _dumps(extra, f"message field(s) {', '.join(map(repr, extra))}") if extra else None,
            calls_text,
            substrings_of(searchable) if searchable else None,
        ),
        text=content or "" if role == "user" else "",
        tool_call_count=len(calls) if isinstance(calls, list) else 0,
    )


_INDEXED_UPTO = "SELECT indexed_upto FROM search_state WHERE id = 1"
_INDEX_STEP = 2000
_BUSY_WAIT_MS = 10
"""How long SQLite itself waits for a lock in one attempt (it sleeps 1, 2, 5 ms...)."""
_MAX_BACKOFF = 0.005
_DELETE_STEP = 2000
_WAL_AUTOCHECKPOINT = 10_000
"""Pages (40 MB) the WAL may reach before a commit copies it into the database: checkpoints
(and their fsyncs) ten times rarer than SQLite's default, and pages written many times (the
session row, index pages) are copied once."""

_INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, role, content, content_parts, tool_calls, tool_call_id, "
    "tool_name, reasoning, finish_reason, timestamp, token_count, layout, extra, calls_text, "
    "substrings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _decode_message(row: tuple[Any, ...]) -> dict[str, Any]:
    (role, content, parts, tool_calls, call_id, tool_name, reasoning, finish, tokens, layout,
     extra_json) = row  # fmt: skip
    extra = json.loads(extra_json) if extra_json else {}
    message: dict[str, Any] = {}
    for key in _unpack_layout(layout):
        if key in extra:
            message[key] = extra[key]
        elif key == "role":
            message[key] = role
        elif key == "content":
            message[key] = json.loads(parts) if parts is not None else content
        elif key == "tool_calls":
            message[key] = json.loads(tool_calls) if tool_calls is not None else None
        elif key == "tool_call_id":
            message[key] = call_id
        elif key == "tool_name":
            message[key] = tool_name
        elif key == "reasoning":
            message[key] = reasoning
        elif key == "finish_reason":
            message[key] = finish
        elif key == "token_count":
            message[key] = tokens
        else:
            message[key] = None
    return message


def make_title(text: str, width: int = TITLE_CHARS) -> str:
    """A one-line title of at most ``width`` characters from the start of ``text``."""
    line = " ".join(text.split())
    if len(line) <= width:
        return line
    cut = line[: width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:-") + "…"


# --- search ---------------------------------------------------------------------------------


@dataclass
class SearchHit:
    """One message that matched a search.

    :param session_id: the session it belongs to.
    :param title: the session's title.
    :param started_at: when the session started (UNIX time).
    :param role: the message's role (``user``, ``assistant``, ``tool``).
    :param snippet: a one-line excerpt with each match marked ``[`` ... ``]``.
    :param message_id: the message's row id.
    :param score: relevance, higher is better (only the order is meaningful).
    """

    session_id: str
    title: str | None
    started_at: float
    role: str
    snippet: str
    message_id: int
    score: float


_WORD = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s")
_TERM = re.compile(r'"([^"]*)"|(\S+)')
_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"
_RRF_K = 60


@dataclass
class _Term:
    text: str
    quoted: bool
    tokens: list[str]
    special: bool  # CJK or punctuation inside: the trigram index finds it best

    def word_expr(self, prefix: bool = False) -> str | None:
        """The term for the word index: a phrase of its tokens; with ``prefix`` the last token
        may also begin a longer word (not for quoted terms nor very short tokens)."""
        if not self.tokens:
            return None
        last = self.tokens[-1]
        prefix = (
            prefix
            and not self.quoted
            and (len(last) >= 3 or (len(last) >= 2 and bool(_UNSPACED.search(last))))
        )
        return '"' + " ".join(self.tokens) + '"' + (" *" if prefix else "")


def _parse_query(query: str) -> list[_Term]:
    terms = []
    for match in _TERM.finditer(query):
        quoted = match.group(1) is not None
        text = match.group(1) if quoted else match.group(2)
        text = " ".join(text.split()) if quoted else _strip_token(text)
        if not text:
            continue
        special = bool(_UNSPACED.search(text)) or not _WORD.fullmatch(text)
        terms.append(_Term(text, quoted, _WORD.findall(text), special))
    return terms


def _snippet(marked: str, chars: int) -> str:
    """Cut a one-line excerpt of about ``chars`` characters around the first match."""
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    start = -1
    position = 0
    for piece in re.split(f"([{_MARK_OPEN}{_MARK_CLOSE}])", marked):
        if piece == _MARK_OPEN:
            start = position
        elif piece == _MARK_CLOSE:
            if start >= 0:
                spans.append((start, position))
            start = -1
        else:
            plain.append(piece)
            position += len(piece)
    text = "".join(plain)
    first = spans[0][0] if spans else 0
    lead = min(chars // 4, 40)
    begin = max(0, first - lead)
    end = min(len(text), begin + chars)
    begin = max(0, end - chars)
    out = []
    opens = {max(a, begin) for a, b in spans if b > begin and a < end}
    closes = {min(b, end) for a, b in spans if b > begin and a < end}
    for i in range(begin, end + 1):
        if i in closes:
            out.append("]")
        if i in opens:
            out.append("[")
        if i < end:
            out.append(text[i])
    result = " ".join("".join(out).split())
    return ("…" if begin > 0 else "") + result + ("…" if end < len(text) else "")


# --- connections ----------------------------------------------------------------------------


class _Handle:
    """One connection; closed when the thread that owns it ends (or the store closes)."""

    __slots__ = ("conn", "pid", "__weakref__")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pid = os.getpid()

    def __del__(self) -> None:
        if self.pid != os.getpid():  # inherited through fork: closing it here could disturb
            _FORK_LEFTOVERS.append(self.conn)  # the parent's WAL, so it is never closed
            return
        try:
            self.conn.close()
        except Exception:  # interpreter shutdown, already closed
            pass


_FORK_LEFTOVERS: list[sqlite3.Connection] = []


def _error_kind(exc: sqlite3.Error) -> str:
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).lower()
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED) or "locked" in text or "busy" in text:
        return "busy"
    if (
        primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
        or "malformed" in text
        or "not a database" in text
    ):
        return "corrupt"
    return "other"


class SQLiteSessionStore:
    """Sessions and messages in one SQLite file, with full-text search.

    Safe to share between threads (one connection per thread) and between processes (WAL,
    ``BEGIN IMMEDIATE`` writes, busy timeout and bounded retries).

    :param path: the database file (``$HERMES_HOME/state.db``); created when missing.
    :param timeout: seconds a call keeps trying while another connection holds the write lock
        (short waits inside SQLite, then retries after a random backoff of up to 5 ms, which
        keeps the wait fair between many writers); after that :class:`SessionStoreError`.
    :param synchronous: ``NORMAL`` (committed writes survive a killed process) or ``FULL``
        (they also survive power loss, at some cost in write speed).
    :param index_batch: after this many appends through this store, the messages waiting
        for the search indexes (from any process) are added in one transaction; a search adds
        the waiting ones first, so it always sees every committed message. Indexing each
        message in its own transaction would cost FTS5 several times the append itself.
    :raises SessionStoreError: the file is corrupt, belongs to another program, or was written
        by a newer hermes.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        synchronous: str = "NORMAL",
        index_batch: int = 1000,
    ) -> None:
        self.path = Path(path)
        self.index_batch = max(1, int(index_batch))
        self.timeout = float(timeout)
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.synchronous = synchronous.upper()
        self._local = threading.local()
        self._lock = threading.Lock()
        # Writers of this process queue here rather than in SQLite's busy handler, which sleeps
        # in growing steps: under many threads that sleep, not the write, was the latency.
        self._write_lock = threading.Lock()
        self._handles: weakref.WeakSet[_Handle] = weakref.WeakSet()
        self._inherited: list[_Handle] = []  # connections of the parent after fork: never used
        self._pid = os.getpid()
        self._closed = False
        self._appended = 0  # appends since this store last indexed
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _check_header(self.path)
        make_private(self.path)
        self._run(self._open_schema, write=False, what="open")
        make_private(self.path, sidecars_only=True)  # WAL mode made them just now

    # --- plumbing ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.path),
            timeout=self.timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_WAIT_MS}")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute("PRAGMA cache_size = -16000")
            conn.execute(f"PRAGMA wal_autocheckpoint = {_WAL_AUTOCHECKPOINT}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise SessionStoreError(f"the session store {self.path} is closed")
        pid = os.getpid()
        if pid != self._pid:  # forked: the parent's connections must not be used nor closed here
            with self._lock:
                if pid != self._pid:
                    self._inherited.extend(self._handles)
                    self._handles = weakref.WeakSet()
                    self._pid = pid
        handle: _Handle | None = getattr(self._local, "handle", None)
        if handle is None or handle.pid != pid:
            if handle is not None:
                self._inherited.append(handle)
            handle = _Handle(self._connect())
            self._local.handle = handle
            with self._lock:
                self._handles.add(handle)
        return handle.conn

    def _run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool, what: str) -> T:
        """Run ``fn`` (in a ``BEGIN IMMEDIATE`` transaction when ``write``), retrying while the
        database is busy; any failure becomes one :class:`SessionStoreError`."""
        delay = 0.001
        started = time.monotonic()
        deadline = started + self.timeout
        attempt = 0
        while True:
            try:
                conn = self._conn()
                if not write:
                    return fn(conn)
                with self._write_lock:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = fn(conn)
                        conn.execute("COMMIT")
                    except BaseException:
                        if conn.in_transaction:
                            try:
                                conn.execute("ROLLBACK")
                            except sqlite3.Error:
                                pass
                        raise
                return result
            except sqlite3.Error as exc:
                kind = _error_kind(exc)
                if kind == "busy" and time.monotonic() < deadline:
                    attempt += 1
                    if attempt % 100 == 0:
                        log.debug("%s: still busy on %s after %d tries", self.path, what, attempt)
                    time.sleep(random.uniform(0, delay))
                    delay = min(delay * 2, _MAX_BACKOFF)
                    continue
                if kind == "corrupt":
                    raise SessionStoreError(
                        f"{self.path} is damaged or not a hermes session database ({exc}); "
                        f"{REPAIR_HINT}"
                    ) from None
                waited = time.monotonic() - started
                if kind == "busy":
                    message = (
                        f"could not {what} in {self.path}: {exc} after {attempt + 1} attempts "
                        f"over {waited:.1f}s (another process holds it)"
                    )
                else:
                    message = f"could not {what} in {self.path}: {exc}"
                log.error("%s", message)
                raise SessionStoreError(message) from None

    def _open_schema(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN")  # one snapshot, in case another process is creating the schema
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = sorted(
                name
                for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )
            )
        finally:
            conn.execute("COMMIT")
        if app_id not in (0, APPLICATION_ID):
            raise SessionStoreError(
                f"{self.path} belongs to another program (application id {app_id:#x}); "
                f"{REPAIR_HINT}"
            )
        if version > SCHEMA_VERSION:
            raise SessionStoreError(
                f"{self.path} was written by a newer hermes (schema version {version}, this "
                f"version knows up to {SCHEMA_VERSION}); upgrade hermes, or move the file away "
                "to start afresh"
            )
        if version == 0 and tables:
            raise SessionStoreError(
                f"{self.path} is not a hermes session database (it holds tables "
                f"{', '.join(tables[:5])}); {REPAIR_HINT}"
            )
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        if version < SCHEMA_VERSION:
            self._migrate(conn)
        missing = {"sessions", "messages", "messages_fts", "messages_trigram"} - {
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if missing:
            raise SessionStoreError(
                f"{self.path} lacks table(s) {', '.join(sorted(missing))}; {REPAIR_HINT}"
            )

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process?
            for step in range(version, SCHEMA_VERSION):
                log.info("%s: migrating the schema to version %d", self.path, step + 1)
                MIGRATIONS[step](conn)
                conn.execute(f"PRAGMA user_version = {step + 1}")
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close every connection of this store; later calls raise :class:`SessionStoreError`."""
        self._closed = True
        with self._lock:
            handles = list(self._handles) if os.getpid() == self._pid else []
            self._handles = weakref.WeakSet()
        for handle in handles:
            try:
                handle.conn.close()
            except sqlite3.Error:
                pass

    def __enter__(self) -> SQLiteSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    # --- the SessionStore protocol ----------------------------------------------------------

    def create_session(self, session: SessionInfo) -> None:
        """Record a new session; its ``metadata`` is stored as JSON (counter names such as
        ``message_count`` go to their columns). An existing id is an error."""
        if not isinstance(session.id, str) or not session.id:
            raise SessionStoreError(f"a session id must be a non-empty string, not {session.id!r}")
        values = {name: getattr(session, name) for name in SESSION_FIELDS}
        values["started_at"] = session.started_at or time.time()
        metadata = dict(session.metadata or {})
        counters = {k: metadata.pop(k) for k in COUNTER_COLUMNS if k in metadata}
        names = ["id", *values, *counters, "metadata"]
        params = [session.id, *values.values(), *counters.values()]
        params.append(_dumps(metadata, "the session metadata"))
        sql = f"INSERT INTO sessions ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"

        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(sql, params)
            except sqlite3.IntegrityError:
                raise SessionStoreError(f"session {session.id!r} already exists") from None

        self._run(insert, write=True, what="create a session")

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session, or ``None`` when unknown. ``metadata`` holds the stored metadata plus
        the counters (``message_count``, ``tool_call_count``, token counts,
        ``estimated_cost_usd``)."""
        row = self._run(
            lambda c: c.execute(
                f"SELECT {_SESSION_SELECT} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone(),
            write=False,
            what="read a session",
        )
        return _session_from_row(row) if row else None

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change fields of a session. Columns (``system_prompt``, ``ended_at``, ``title``,
        token counters...) are set; anything else (``fallbacks``, ``todo``...) goes into the
        metadata JSON, and a ``metadata`` dict is merged into it.

        :raises SessionStoreError: the session is unknown.
        """
        if "id" in fields:
            raise SessionStoreError("a session's id cannot be changed")
        columns = {k: v for k, v in fields.items() if k in SESSION_FIELDS or k in COUNTER_COLUMNS}
        extra = {k: v for k, v in fields.items() if k not in columns and k != "metadata"}
        merged = fields.get("metadata")
        if merged is not None and not isinstance(merged, Mapping):
            raise SessionStoreError("metadata must be a dict")
        if merged:
            extra = {**merged, **extra}
        if "started_at" in columns and columns["started_at"] is None:
            raise SessionStoreError("started_at cannot be empty")

        def update(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT metadata FROM sessions WHERE id = ?", (session_id,))
            found = row.fetchone()
            if found is None:
                raise _unknown(session_id)
            sets = [f"{name} = ?" for name in columns]
            params = list(columns.values())
            if extra:
                metadata = json.loads(found[0] or "{}")
                metadata.update(extra)
                sets.append("metadata = ?")
                params.append(_dumps(metadata, "the session metadata"))
            if sets:
                conn.execute(
                    f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*params, session_id)
                )

        self._run(update, write=True, what="update a session")

    def append_message(self, session_id: str, message: dict[str, Any]) -> None:
        """Persist one completed message, exactly (every key, ``_`` ones included), in its own
        transaction. The first user message of an untitled session gives it its title.

        :raises SessionStoreError: the session is unknown, a value is not JSON, or the write
            failed after the retries.
        """
        encoded = _encode_message(session_id, message, time.time())
        title = make_title(encoded.text) if encoded.text.strip() else None

        def append(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(
                "UPDATE sessions SET message_count = message_count + 1, "
                "tool_call_count = tool_call_count + ?, title = COALESCE(title, ?) WHERE id = ?",
                (encoded.tool_call_count, title, session_id),
            )
            if cursor.rowcount == 0:
                raise _unknown(session_id)
            conn.execute(_INSERT_MESSAGE, encoded.row)

        self._run(append, write=True, what="save a message")
        with self._lock:
            self._appended += 1
            due = self._appended >= self.index_batch
            if due:
                self._appended = 0
        if due:
            self._index_quietly()

    def index_pending(self, limit: int | None = None) -> int:
        """Add messages not yet in the search indexes to them (in transactions of at most
        2,000 messages); returns how many. Appends do this every ``index_batch`` messages and
        :meth:`search` before it runs, so callers rarely need to."""
        done = 0
        while limit is None or done < limit:
            step = _INDEX_STEP if limit is None else min(_INDEX_STEP, limit - done)
            count = self._run(
                lambda c, step=step: _index_step(c, step),
                write=True,
                what="index messages for search",
            )
            done += count
            if count < step:
                break
        return done

    def _index_quietly(self) -> None:
        """Index waiting messages after an append; the message is already saved, so a failure
        here is logged and left to the next append or search."""
        try:
            self.index_pending()
        except SessionStoreError as exc:
            log.warning("search indexing deferred: %s", exc)

    def get_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order, equal to the dicts that were appended."""
        rows = self._run(
            lambda c: c.execute(
                f"SELECT {_MESSAGE_SELECT} FROM messages WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall(),
            write=False,
            what="read messages",
        )
        return [_decode_message(row) for row in rows]

    # --- listing and lineage ----------------------------------------------------------------

    def list_sessions(
        self, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionInfo]:
        """Sessions, newest first, optionally only those from ``source`` (``cli``...)."""
        where, params = ("WHERE source = ?", [source]) if source is not None else ("", [])
        rows = self._run(
            lambda c: c.execute(
                f"SELECT {_SESSION_SELECT} FROM sessions {where} "
                "ORDER BY started_at DESC, rowid DESC LIMIT ? OFFSET ?",
                (*params, max(0, int(limit)), max(0, int(offset))),
            ).fetchall(),
            write=False,
            what="list sessions",
        )
        return [_session_from_row(row) for row in rows]

    def find_sessions(self, ref: str, limit: int = 10) -> list[SessionInfo]:
        """Sessions ``ref`` may name, newest first: the one with that exact id; else those whose
        id starts with ``ref``; else those whose title equals ``ref`` (case-insensitive)."""
        exact = self.get_session(ref)
        if exact is not None:
            return [exact]
        pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        for where, value in (("id LIKE ? ESCAPE '\\'", pattern), ("lower(title) = lower(?)", ref)):
            rows = self._run(
                lambda c, w=where, v=value: c.execute(
                    f"SELECT {_SESSION_SELECT} FROM sessions WHERE {w} "
                    "ORDER BY started_at DESC, rowid DESC LIMIT ?",
                    (v, max(1, int(limit))),
                ).fetchall(),
                write=False,
                what="find sessions",
            )
            if rows:
                return [_session_from_row(row) for row in rows]
        return []

    def latest_session_id(self, source: str | None = None) -> str | None:
        """The id of the most recently started session (from ``source``), or ``None``."""
        found = self.list_sessions(limit=1, source=source)
        return found[0].id if found else None

    def newest_in_lineage(self, session_id: str) -> str:
        """The newest session that continues ``session_id`` through compression (children
        point to their parent with ``parent_session_id``, possibly over several generations);
        ``session_id`` itself when nothing continues it, or when it is not stored (yet), so a
        caller may pass a new id. Only a child of the parent's own source continues it: a
        subagent's session (source ``subagent``), also linked to its parent, does not."""

        def newest(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "WITH RECURSIVE lineage(id) AS (SELECT ? UNION "
                "SELECT s.id FROM sessions s JOIN lineage l ON s.parent_session_id = l.id "
                "JOIN sessions p ON p.id = l.id WHERE s.source = p.source) "
                "SELECT s.id FROM lineage l JOIN sessions s ON s.id = l.id "
                "ORDER BY s.started_at DESC, s.rowid DESC LIMIT 1",
                (session_id,),
            ).fetchone()
            return row[0] if row else None

        return self._run(newest, write=False, what="follow a session's lineage") or session_id

    # --- search -----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 20,
        snippet_chars: int = 160,
        *,
        exclude_session: str | None = None,
    ) -> list[SearchHit]:
        """Messages matching ``query``, best first (BM25), then most recent.

        ``query`` is plain text, not FTS syntax: words match word prefixes (``connect`` finds
        "connection"), ``"quoted text"`` matches a phrase, and a term with CJK characters,
        digits or punctuation (``数据库``, ``example.com/path``, ``config.yaml``, ``E1234``)
        also matches inside longer tokens (at least 3 characters). All terms must match; when
        nothing does, any term may. Among very many matches, the most recent
        :data:`RANK_WINDOW` are ranked.

        :param limit: at most this many hits (1..200).
        :param snippet_chars: the length of each snippet (40..2000).
        :param exclude_session: leave out this session's messages (e.g. the current one).
        """
        terms = _parse_query(query or "")
        if not terms:
            return []
        limit = max(1, min(int(limit), 200))
        snippet_chars = max(40, min(int(snippet_chars), 2000))
        word_exprs = [e for e in (t.word_expr() for t in terms) if e]
        prefix_exprs = [e for e in (t.word_expr(prefix=True) for t in terms) if e]
        needles = [t.text for t in terms if len(t.text) >= 3 and not _SPACE.search(t.text)]
        special = any(t.special for t in terms)
        unspaced = [t.text for t in terms if _UNSPACED.search(t.text)]
        word_q = " AND ".join(word_exprs) if word_exprs else None
        prefix_q = " AND ".join(prefix_exprs) if prefix_exprs != word_exprs else None
        self._index_for_search()

        def run(conn: sqlite3.Connection) -> list[SearchHit]:
            # Exact words first; word prefixes only when they are too few (a common prefix
            # merges the postings of every word it begins); substrings for CJK and punctuation.
            ranked: list[tuple[str, str, list[int]]] = []

            def add(kind: str, table: str, expr: str) -> None:
                ranked.append((kind, expr, _match(conn, table, expr, limit, exclude_session)))

            def count() -> int:
                return len({rowid for _, _, ids in ranked for rowid in ids})

            if word_q:
                add("word", _WORDS, word_q)
            if prefix_q and count() < limit:
                add("word", _WORDS, prefix_q)
            if needles and (special or count() < limit):
                found = _substring_ids(conn, needles, limit, exclude_session)
                if special:  # substring hits first: they are exactly what was typed
                    ranked.insert(0, ("substring", "", found))
                else:
                    ranked.append(("substring", "", found))
            if not count() and len(prefix_exprs) > 1:
                add("word", _WORDS, " OR ".join(prefix_exprs))
            scores: dict[int, float] = {}
            how: dict[int, tuple[str, str]] = {}
            for kind, expr, ids in ranked:
                for rank, rowid in enumerate(ids):
                    scores[rowid] = scores.get(rowid, 0.0) + 1.0 / (_RRF_K + rank + 1)
                    how.setdefault(rowid, (kind, expr))
            best = sorted(scores, key=lambda r: (-scores[r], -r))[:limit]
            if not best:
                return []
            marks = ",".join("?" * len(best))
            details = {
                row[0]: row[1:]
                for row in conn.execute(
                    "SELECT m.id, m.session_id, m.role, s.title, s.started_at, m.content, "
                    "m.calls_text FROM messages m LEFT JOIN sessions s ON s.id = m.session_id "
                    f"WHERE m.id IN ({marks})",
                    best,
                )
            }
            hits = []
            for rowid in best:
                if rowid not in details:
                    continue
                session_id, role, title, started_at, content, calls = details[rowid]
                kind, expr = how[rowid]
                if kind == "word" and not unspaced:
                    snippet = _highlight(conn, expr, rowid, snippet_chars)
                elif kind == "word":  # a CJK run is one word: mark just what was typed
                    snippet = _mark_needles(content or "", calls or "", unspaced, snippet_chars)
                else:
                    snippet = _mark_needles(content or "", calls or "", needles, snippet_chars)
                hits.append(
                    SearchHit(
                        session_id=session_id,
                        title=title,
                        started_at=started_at or 0.0,
                        role=role,
                        snippet=snippet,
                        message_id=rowid,
                        score=round(scores[rowid] * 1000, 4),
                    )
                )
            return hits

        return self._run(run, write=False, what="search")

    def _index_for_search(self) -> None:
        try:
            self.index_pending()
        except SessionStoreError as exc:  # e.g. a read-only file: search what is indexed
            if "readonly" not in str(exc) and "read-only" not in str(exc):
                raise
            log.warning("searching without indexing the newest messages: %s", exc)

    # --- maintenance ------------------------------------------------------------------------

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages (and their search entries); ``False`` when it did
        not exist. Sessions that continued it keep their own messages. A long session goes in
        several short transactions, newest messages first, the session row last."""

        def delete_some(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id = ? "
                "ORDER BY id DESC LIMIT ?)",
                (session_id, _DELETE_STEP),
            ).rowcount

        while self._run(delete_some, write=True, what="delete messages") >= _DELETE_STEP:
            pass

        def delete(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

        return self._run(delete, write=True, what="delete a session")

    def prune(self, older_than_days: float) -> int:
        """Delete sessions that started more than ``older_than_days`` ago and have had no
        message since; returns how many. Each session is deleted in its own transaction."""
        if older_than_days < 0:
            raise SessionStoreError("older_than_days must not be negative")
        cutoff = time.time() - float(older_than_days) * 86400

        def candidates(conn: sqlite3.Connection) -> list[str]:
            return [
                row[0]
                for row in conn.execute(
                    "SELECT s.id FROM sessions s WHERE s.started_at < ? AND COALESCE(("
                    "SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), 0) < ?",
                    (cutoff, cutoff),
                )
            ]

        deleted = 0
        for session_id in self._run(candidates, write=False, what="find old sessions"):
            deleted += self.delete_session(session_id)
        return deleted

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: ``sessions``, ``messages``, ``db_size_bytes`` (file and WAL),
        ``oldest`` and ``newest`` session start (UNIX time or ``None``), ``schema_version``,
        ``path``, and ``waiting_for_index`` (messages the next search or batch will index)."""

        def read(conn: sqlite3.Connection) -> tuple[Any, ...]:
            sessions, oldest, newest = conn.execute(
                "SELECT COUNT(*), MIN(started_at), MAX(started_at) FROM sessions"
            ).fetchone()
            messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
            waiting = conn.execute(
                f"SELECT COUNT(*) FROM messages WHERE id > ({_INDEXED_UPTO})"
            ).fetchone()[0]
            return sessions, messages, oldest, newest, waiting

        sessions, messages, oldest, newest, waiting = self._run(
            read, write=False, what="read statistics"
        )
        size = 0
        for suffix in ("", "-wal"):
            try:
                size += os.path.getsize(f"{self.path}{suffix}")
            except OSError:
                pass
        return {
            "path": str(self.path),
            "sessions": sessions,
            "messages": messages,
            "db_size_bytes": size,
            "oldest": oldest,
            "newest": newest,
            "schema_version": SCHEMA_VERSION,
            "waiting_for_index": waiting,
        }

    def set_title(self, session_id: str, title: str | None) -> None:
        """Set (or with ``None`` clear) a session's title.

        :raises SessionStoreError: the session is unknown.
        """
        value = " ".join(title.split()) if title is not None else None
        self.update_session(session_id, title=value or None)

    def add_usage(
        self, session_id: str, usage: Mapping[str, Any] | Any, cost_usd: float | None = None
    ) -> None:
        """Add token counts (``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
        ``cache_write_tokens``, ``reasoning_tokens``; other keys are ignored) and, when known,
        a cost to the session's totals.

        :raises SessionStoreError: the session is unknown.
        """
        if hasattr(usage, "as_dict"):
            usage = usage.as_dict()
        counts = [int(usage.get(name) or 0) for name in TOKEN_COLUMNS]
        sets = ", ".join(f"{name} = {name} + ?" for name in TOKEN_COLUMNS)
        params: list[Any] = list(counts)
        if cost_usd is not None:
            sets += ", estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + ?"
            params.append(float(cost_usd))

        def add(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(f"UPDATE sessions SET {sets} WHERE id = ?", (*params, session_id))
            if cursor.rowcount == 0:
                raise _unknown(session_id)

        self._run(add, write=True, what="save token usage")


def _unknown(session_id: str) -> SessionStoreError:
    return SessionStoreError(f"no session {session_id!r}; {FIND_IDS_HINT}")


def _session_from_row(row: tuple[Any, ...]) -> SessionInfo:
    n = len(SESSION_FIELDS)
    values = dict(zip(SESSION_FIELDS, row[1 : 1 + n], strict=True))
    counters = dict(zip(COUNTER_COLUMNS, row[1 + n : 1 + n + len(COUNTER_COLUMNS)], strict=True))
    metadata = json.loads(row[-1] or "{}")
    metadata.update(counters)
    return SessionInfo(id=row[0], metadata=metadata, **values)


RANK_WINDOW = 2000
"""When a query matches more messages than this, only the most recent ones are ranked (so a
common word costs the same over a million messages as over ten thousand)."""
_WORDS, _TRIGRAMS = "messages_fts", "messages_trigram"


def _match(
    conn: sqlite3.Connection, table: str, expr: str, limit: int, exclude_session: str | None
) -> list[int]:
    exclude = ""
    params: list[Any] = [expr]
    if exclude_session is not None:
        exclude = "AND rowid NOT IN (SELECT id FROM messages WHERE session_id = ?)"
        params.append(exclude_session)
    params += [RANK_WINDOW, limit]
    return [
        row[0]
        for row in conn.execute(
            f"SELECT rowid FROM (SELECT rowid, rank FROM {table} WHERE {table} MATCH ? {exclude} "
            "ORDER BY rowid DESC LIMIT ?) ORDER BY rank, rowid DESC LIMIT ?",
            params,
        )
    ]


SUBSTRING_CANDIDATES = 2000
"""How many messages holding a substring query's trigrams are checked at most."""


def _trigrams(needle: str) -> list[str]:
    """Non-overlapping trigrams covering ``needle`` (the last one may overlap)."""
    found = [needle[i : i + 3] for i in range(0, len(needle) - 2, 3)]
    if (len(needle) - 3) % 3:
        found.append(needle[-3:])
    return found


def _substring_ids(
    conn: sqlite3.Connection, needles: list[str], limit: int, exclude_session: str | None
) -> list[int]:
    """The newest messages whose substrings contain every needle (case-insensitive).

    Asking the trigram index for the whole needle as a phrase makes FTS5 intersect every
    overlapping trigram with positions, which costs tens of milliseconds for a long URL over a
    million messages; a third of them without positions finds the candidates, then each is
    checked here.
    """
    parts = list(dict.fromkeys(t.lower() for n in needles for t in _trigrams(n)))
    expr = " AND ".join('"' + t.replace('"', '""') + '"' for t in parts)
    lowered = [n.lower() for n in needles]
    cursor = conn.execute(
        f"SELECT rowid FROM {_TRIGRAMS} WHERE {_TRIGRAMS} MATCH ? ORDER BY rowid DESC LIMIT ?",
        (expr, SUBSTRING_CANDIDATES),
    )
    found: list[int] = []
    while len(found) < limit:
        batch = [row[0] for row in cursor.fetchmany(100)]
        if not batch:
            break
        rows = conn.execute(
            "SELECT id, session_id, substrings FROM messages "
            f"WHERE id IN ({','.join('?' * len(batch))}) ORDER BY id DESC",
            batch,
        )
        for rowid, session_id, substrings in rows:
            if session_id == exclude_session or not substrings:
                continue
            text = substrings.lower()
            if all(n in text for n in lowered):
                found.append(rowid)
    return found[:limit]


def _index_step(conn: sqlite3.Connection, count: int) -> int:
    """Add up to ``count`` waiting messages to both indexes (inside a write transaction)."""
    upto = conn.execute(_INDEXED_UPTO).fetchone()[0]
    row = conn.execute(
        "SELECT MAX(id), COUNT(*) FROM (SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT ?)",
        (upto, count),
    ).fetchone()
    last, found = row
    if not found:
        return 0
    conn.execute(
        f"INSERT INTO {_WORDS} (rowid, content, calls_text) "
        "SELECT id, content, calls_text FROM messages WHERE id > ? AND id <= ?",
        (upto, last),
    )
    conn.execute(
        f"INSERT INTO {_TRIGRAMS} (rowid, substrings) SELECT id, substrings FROM messages "
        "WHERE id > ? AND id <= ? AND substrings IS NOT NULL",
        (upto, last),
    )
    conn.execute("UPDATE search_state SET indexed_upto = ? WHERE id = 1", (last,))
    return int(found)


def _highlight(conn: sqlite3.Connection, expr: str, rowid: int, chars: int) -> str:
    row = conn.execute(
        f"SELECT highlight({_WORDS}, 0, char(2), char(3)), highlight({_WORDS}, 1, char(2), "
        f"char(3)) FROM {_WORDS} WHERE {_WORDS} MATCH ? AND rowid = ?",
        (expr, rowid),
    ).fetchone()
    if row is None:
        return ""
    content, calls = row[0] or "", row[1] or ""
    if _MARK_OPEN not in content and _MARK_OPEN in calls:
        return "tool call: " + _snippet(calls, chars)
    return _snippet(content, chars)


def _mark_needles(content: str, calls: str, needles: list[str], chars: int) -> str:
    """Mark every case-insensitive occurrence of ``needles`` (the substring hits)."""
    if not needles:
        return _snippet(content or calls, chars)
    longest_first = sorted(needles, key=len, reverse=True)
    pattern = re.compile("|".join(map(re.escape, longest_first)), re.IGNORECASE)
    for text, prefix in ((content, ""), (calls, "tool call: ")):
        marked, found = pattern.subn(lambda m: f"{_MARK_OPEN}{m.group(0)}{_MARK_CLOSE}", text)
        if found:
            return prefix + _snippet(marked, chars)
    return _snippet(content or calls, chars)


# --- opening checks and repair --------------------------------------------------------------

SIDECARS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps next to a database, which hold its recent writes."""


def make_private(path: Path, *, sidecars_only: bool = False) -> None:
    """Make the database ``path`` (created empty when missing) and the sidecar files next to it
    readable by their owner only (mode 600): they hold every conversation and tool output."""
    if not sidecars_only:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
        except OSError:
            return  # reported by the open that follows, with its own message
    names = SIDECARS if sidecars_only else ("", *SIDECARS)
    for suffix in names:
        target = Path(f"{path}{suffix}")
        try:
            if target.stat().st_mode & 0o077:
                os.chmod(target, 0o600)
        except OSError:
            pass  # absent, or not ours: `hermes doctor` reports a file others can read


def _check_header(path: Path) -> None:
    """Fail early, with the way out, when ``path`` exists and is not an SQLite file."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SessionStoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head and head != _HEADER:
        raise SessionStoreError(f"{path} is not an SQLite database; {REPAIR_HINT}")


_NEWER = "written by a newer hermes"


def _diagnose(path: Path) -> str | None:
    """Why ``path`` cannot be used as it is, or ``None`` when it is healthy."""
    try:
        _check_header(path)
        conn = sqlite3.connect(str(path), timeout=5.0, isolation_level=None)
    except (SessionStoreError, sqlite3.Error) as exc:
        return str(exc).split(";")[0]
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id not in (0, APPLICATION_ID):
            return f"it belongs to another program (application id {app_id:#x})"
        if version > SCHEMA_VERSION:
            return _NEWER
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 0 and tables:
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
    """Move an unusable ``state.db`` (corrupt, or another program's) aside as
    ``state.db.corrupt-<timestamp>``, copy what can still be read into a fresh database at
    ``path``, and return one line saying what was done. A healthy file, or one written by a
    newer hermes, is left alone. Run it while no hermes process uses the file."""
    path = Path(path)
    if not path.exists():
        return f"{path} does not exist; a new one is created when needed"
    problem = _diagnose(path)
    if problem is None:
        return f"{path} passed the integrity check; nothing to repair"
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


def iter_message_rows(
    messages: Iterable[Mapping[str, Any]], session_id: str, now: float | None = None
) -> Iterable[tuple[Any, ...]]:
    """Rows for ``INSERT`` into ``messages`` (for bulk loading, e.g. imports and benchmarks)."""
    stamp = time.time() if now is None else now
    for message in messages:
        yield _encode_message(session_id, message, stamp).row


INSERT_MESSAGE_SQL = _INSERT_MESSAGE
"""The statement :func:`iter_message_rows` rows go to."""
