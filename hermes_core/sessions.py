"""Kept for compatibility: the in-memory store is now
:class:`hermes_core.session_store.memory_store.MemorySessionStore`."""

from __future__ import annotations

from .session_store.memory_store import MemorySessionStore

__all__ = ["MemorySessionStore"]
