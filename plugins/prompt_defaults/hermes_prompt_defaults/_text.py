"""Reading prompt files and cutting long ones, shared by the layers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import DEFAULT_MAX_CHARS

HEAD_SHARE = 0.7
"""Share of the limit kept from the start of a long file; :data:`TAIL_SHARE` from its end."""
TAIL_SHARE = 0.2


def read_text(path: Path) -> str | None:
    """The file's text (newlines normalised, undecodable bytes replaced), or ``None`` when it is
    missing, not a regular file, or unreadable."""
    try:
        if not path.is_file():
            return None
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def max_chars(config: Mapping[str, Any], key: str) -> int:
    """``prompt.<key>`` from the configuration when it is a positive integer, else the default."""
    section = config.get("prompt") if isinstance(config, Mapping) else None
    value = section.get(key) if isinstance(section, Mapping) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return DEFAULT_MAX_CHARS


def truncate_middle(text: str, limit: int, label: str) -> str:
    """``text`` unchanged when it fits in ``limit`` characters; else its head and tail around a
    visible marker that says how much of ``label`` was cut.

    The cut is moved to line boundaries when one is near, so no line is split.
    """
    if len(text) <= limit:
        return text
    head_len = int(limit * HEAD_SHARE)
    tail_len = int(limit * TAIL_SHARE)
    head = text[:head_len]
    tail = text[len(text) - tail_len :] if tail_len else ""
    line_end = head.rfind("\n")
    if line_end >= head_len // 2:
        head = head[: line_end + 1]
    line_start = tail.find("\n")
    if 0 <= line_start < tail_len // 2:
        tail = tail[line_start + 1 :]
    cut = len(text) - len(head) - len(tail)
    marker = (
        f"[... {cut:,} of {len(text):,} characters of {label} cut here;"
        " read the file for the full text ...]"
    )
    return f"{head.rstrip()}\n\n{marker}\n\n{tail.lstrip()}".rstrip()
