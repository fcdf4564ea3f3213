"""Path comparisons every part of the sandbox makes the same way."""

from __future__ import annotations

import os

__all__ = ["inside", "resolved"]


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies in it (both absolute and normalised)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def resolved(path: str) -> str:
    """Where ``path`` (``~`` expanded) really leads, every link followed; ``path`` itself when
    it cannot be resolved."""
    try:
        return os.path.realpath(os.path.expanduser(path))
    except (OSError, ValueError):
        return path
