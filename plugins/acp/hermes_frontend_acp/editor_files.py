"""The editor's unsaved buffers in ``read_file``: when the client offers ``fs/read_text_file``,
a successful ``read_file`` of a text file shows the file as the editor has it.

``read_file`` itself runs first, with every check of the file tools (the path must be one the
agent may read); only its text is then replaced by the editor's, numbered the same way. This
module holds no SDK import: the hook that calls it runs in every hermes process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

Reader = Callable[[str, str], "str | None"]
"""``read(session_id, absolute_path)``: the editor's text of the file, or ``None``."""

READ_TIMEOUT = 10.0
"""Seconds the editor has to give a file; then the file on disk is used."""

DEFAULT_LINES = 500
"""Lines ``read_file`` shows without a ``limit`` (as the file tools do)."""

_sessions: dict[str, tuple[str, Reader]] = {}
_lock = threading.Lock()


def open_session(session_id: str, cwd: str, reader: Reader) -> None:
    """Reads of ``session_id`` go through ``reader`` (relative paths start at ``cwd``)."""
    with _lock:
        _sessions[session_id] = (cwd, reader)


def close_session(session_id: str) -> None:
    """Reads of ``session_id`` see the disk again."""
    with _lock:
        _sessions.pop(session_id, None)


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
