"""Credential pools: several keys per provider, the key each request leases, what an error
does to the key that made it, and their state shared through the session store (see
docs/credentials.md)."""

from __future__ import annotations

from .classify import classify, reset_after
from .leases import KeyRouter, make_pool
from .pool import STRATEGIES, KeyPool, Lease, MemoryKeyStates, PooledKey, configured_keys

__all__ = [
    "STRATEGIES",
    "KeyPool",
    "KeyRouter",
    "Lease",
    "MemoryKeyStates",
    "PooledKey",
    "classify",
    "configured_keys",
    "make_pool",
    "reset_after",
]
