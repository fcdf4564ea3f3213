"""The editor's files in the file tools: when the client offers ``fs/read_text_file``, a
successful ``read_file`` of a text file shows the file as the editor has it; when it offers
``fs/write_text_file``, ``write_file`` and ``patch`` write through the editor.

``read_file`` itself runs first, with every check of the file tools (the path must be one the
agent may read); only its text is then replaced by the editor's, numbered the same way. A write
runs the tool whole too (the file tools' guard, approvals, the patch applied); only its final
write goes to the editor, through an environment that hands every other operation to the
task's own (:class:`EditorWrites`). This module holds no SDK import: the hooks that call it run
in every hermes process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from hermes_hookspecs import BackgroundProcess, CommandResult, Environment

Reader = Callable[[str, str], "str | None"]
"""``read(session_id, absolute_path)``: the editor's text of the file, or ``None``."""

Writer = Callable[[str, str, str], bool]
"""``write(session_id, absolute_path, text)``: ``True`` once the editor wrote the file,
``False`` when it could not (the file is then written to disk)."""

WRITE_TOOLS = frozenset({"write_file", "patch"})
"""The tools whose final write goes through the editor."""

READ_TIMEOUT = 10.0
"""Seconds the editor has to give a file; then the file on disk is used."""

DEFAULT_LINES = 500
"""Lines ``read_file`` shows without a ``limit`` (as the file tools do)."""

_sessions: dict[str, tuple[str, Reader | None]] = {}
_writers: dict[str, Writer] = {}
_written: dict[tuple[str, str], str] = {}
_lock = threading.Lock()


def open_session(
    session_id: str, cwd: str, reader: Reader | None, writer: Writer | None = None
) -> None:
    """Reads of ``session_id`` go through ``reader``, writes through ``writer`` (either
    ``None``: the disk; relative paths start at ``cwd``)."""
    with _lock:
        _sessions[session_id] = (cwd, reader)
        if writer is not None:
            _writers[session_id] = writer


def close_session(session_id: str) -> None:
    """Reads and writes of ``session_id`` see the disk again."""
    with _lock:
        _sessions.pop(session_id, None)
        _writers.pop(session_id, None)
        for key in [k for k in _written if k[0] == session_id]:
            del _written[key]


def written_text(session_id: str, path: str) -> str | None:
    """The text last written through the editor to ``path`` in ``session_id`` (the editor may
    not have saved it yet), or ``None``."""
    with _lock:
        return _written.get((session_id, os.path.realpath(path)))


class EditorWrites(Environment):
    """The task's environment ``inner``, except that a text file written on this machine goes
    through the editor (``writer``), and to disk when the editor cannot."""

    def __init__(
        self, inner: Environment, session_id: str, writer: Writer, reader: Reader | None = None
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.session_id = session_id
        self.writer = writer
        self.reader = reader

    def __getattr__(self, name: str) -> Any:  # cwd, path_sight, the sandbox's methods...
        return getattr(self.inner, name)

    def run(self, command: str, **kwargs: Any) -> CommandResult:
        """The inner environment runs it."""
        return self.inner.run(command, **kwargs)

    def read_file(self, path: str) -> bytes:
        """The editor's text of a file of this machine when the client gives its buffers (so
        that ``patch`` edits what ``read_file`` showed), else the inner environment's."""
        data = self.inner.read_file(path)  # first: a missing file is missing, as always
        if self.reader is not None and self.inner.name == "local" and os.path.isabs(path):
            text = self.reader(self.session_id, path)
            if text is not None:
                return text.encode("utf-8")
        return data

    def write_file(self, path: str, data: bytes) -> None:
        """Through the editor when the file is this machine's, text, and the editor writes it;
        else (or when the editor fails) by the inner environment."""
        local = self.inner.name == "local" and os.path.isabs(path)
        try:
            text = data.decode("utf-8") if local else None
        except UnicodeDecodeError:
            text = None
        if (
            text is not None
            and not os.path.isdir(path)
            and self.writer(self.session_id, path, text)
        ):
            with _lock:
                _written[(self.session_id, os.path.realpath(path))] = text
            return
        self.inner.write_file(path, data)

    def list_files(self, pattern: str, cwd: str | None = None) -> list[str]:
        """The inner environment lists them."""
        return self.inner.list_files(pattern, cwd)

    def start_background(self, command: str, **kwargs: Any) -> str:
        """The inner environment starts it."""
        return self.inner.start_background(command, **kwargs)

    def poll(self, process_id: str) -> BackgroundProcess:
        """The inner environment's process."""
        return self.inner.poll(process_id)

    def read_output(self, process_id: str, offset: int = 0) -> tuple[str, int]:
        """The inner environment's process output."""
        return self.inner.read_output(process_id, offset)

    def kill(self, process_id: str) -> None:
        """The inner environment stops it."""
        self.inner.kill(process_id)

    def list_background(self) -> list[BackgroundProcess]:
        """The inner environment's processes."""
        return self.inner.list_background()


def route_writes(tool: str, session_id: str, environment: Callable[[], Environment]) -> Any:
    """The environment factory of a ``tool`` call in ``session_id``: one whose writes go
    through the editor when the call is a write and the session's client writes files, else
    ``None`` (the call keeps its own)."""
    if tool not in WRITE_TOOLS:
        return None
    with _lock:
        writer = _writers.get(session_id)
        found = _sessions.get(session_id)
    if writer is None:
        return None
    reader = found[1] if found is not None else None

    def make() -> Environment:
        return EditorWrites(environment(), session_id, writer, reader)

    return make


def _number(text: str, offset: int, limit: int, path: str) -> str:
    lines = text.splitlines()
    if not lines:
        return f"{path} is empty."
    last = min(len(lines), offset + limit - 1)
    out = [f"{n:>6}\t{lines[n - 1]}" for n in range(offset, last + 1)]
    note = "[as open in the editor, unsaved changes included]"
    if last < len(lines):
        note += f" [lines {offset}-{last} of {len(lines)}; read on with offset={last + 1}]"
    return "\n".join([*out, note])


def buffer_text(arguments: dict[str, Any], session_id: str, shown: str) -> str | None:
    """The ``read_file`` result from the editor's buffer, or ``None`` to keep ``shown`` (no
    editor for this session, an image, a range past the buffer's end, no answer)."""
    with _lock:
        found = _sessions.get(session_id)
    if found is None or not shown or not shown.lstrip().startswith(tuple("0123456789")):
        return None  # not an editor session, or not numbered text (an image, an empty file)
    cwd, reader = found
    if reader is None:
        return None
    path = str(arguments.get("path") or "")
    absolute = path if os.path.isabs(path) else os.path.normpath(os.path.join(cwd, path))
    text = reader(session_id, absolute)
    if text is None:
        return None
    offset = max(1, int(arguments.get("offset") or 1))
    limit = max(1, int(arguments.get("limit") or DEFAULT_LINES))
    if offset > max(1, len(text.splitlines())):
        return None
    return _number(text, offset, limit, path)
