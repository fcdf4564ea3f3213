"""Ids of sessions and tasks."""

from __future__ import annotations

import uuid


def new_id(prefix: str) -> str:
    """A fresh id such as ``session_0123456789abcdef`` (``prefix``, then 16 hex digits)."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"
