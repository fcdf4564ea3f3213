"""File names as bytes: kept in JSON, shown in one line, matched against the paths a person
gives."""

from __future__ import annotations

import os


def encode_path(path: bytes) -> str:
    """``path`` as a string that JSON can hold and :func:`decode_path` turns back into the same
    bytes (bytes that are not UTF-8 become lone surrogates, which JSON escapes)."""
    return path.decode("utf-8", "surrogateescape")


def decode_path(text: str) -> bytes:
    """The bytes of a path :func:`encode_path` made, or that a person typed."""
    return text.encode("utf-8", "surrogateescape")


def show_path(path: bytes) -> str:
    """``path`` for a one-line report: as it is when it is printable UTF-8, else quoted with
    escapes (a newline as backslash-n, a byte that is not UTF-8 as backslash-x and two hex
    digits), so that every report stays one line."""
    text = path.decode("utf-8", "backslashreplace")
    if text.isprintable() and "\\x" not in text and text.strip() == text and text:
        return text
    escaped = []
    for char in path.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            escaped.append(f"\\x{code - 0xDC00:02x}")
        elif char == '"' or char == "\\":
            escaped.append("\\" + char)
        elif char.isprintable():
            escaped.append(char)
        else:
            escaped.append(char.encode("unicode_escape").decode("ascii"))
    return '"' + "".join(escaped) + '"'


def relative_to_workspace(root: bytes, given: str, cwd: str | None = None) -> bytes:
    """A path a person gave (relative to ``cwd``, the current folder by default, or absolute)
    as a path relative to the workspace ``root``; ``b""`` for the workspace itself.

    :raises ValueError: the path lies outside the workspace.
    """
    raw = decode_path(given)
    base = decode_path(cwd) if cwd is not None else os.getcwdb()
    full = os.path.normpath(os.path.join(base, raw))
    head, tail = os.path.split(full)
    full = os.path.join(os.path.realpath(head), tail) if tail else os.path.realpath(head)
    root = os.path.normpath(root)
    if full == root:
        return b""
    if not full.startswith(root.rstrip(b"/") + b"/"):
        raise ValueError(f"{given} is outside the workspace {os.fsdecode(root)}")
    return full[len(root.rstrip(b"/")) + 1 :]


def under(path: bytes, prefixes: list[bytes]) -> bool:
    """Whether ``path`` is one of ``prefixes`` or lies inside one (``b""`` is everything)."""
    return any(p == b"" or path == p or path.startswith(p + b"/") for p in prefixes)
