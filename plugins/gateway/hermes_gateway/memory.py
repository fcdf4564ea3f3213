"""Keeping the garbage collector's full passes short while a gateway serves.

A full collection walks every object the collector tracks, and a gateway holds a great many
that live as long as the process: hermes, aiohttp, the provider's SDK and its hundreds of
types. Walking them took about 100 ms, during which no conversation moved, every few seconds
under load. While at least one gateway serves, the objects alive are frozen
(``gc.freeze()``: the collector leaves them alone), once when it starts and once after its first
turn (which imports the provider's SDK); when the last gateway stops they are handed back.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_serving = 0


def hold() -> None:
    """A gateway starts serving: collect what is garbage now, freeze the rest."""
    global _serving
    with _lock:
        _serving += 1
        gc.collect()
        gc.freeze()


def refreeze() -> None:
    """Freeze what came alive since (the provider's SDK, imported by the first turn)."""
    with _lock:
        if _serving:
            gc.freeze()


def release() -> None:
    """A gateway stopped: when none serves any longer, the collector tracks everything again."""
    global _serving
    with _lock:
        _serving = max(0, _serving - 1)
        if _serving == 0:
            gc.unfreeze()


def serving() -> int:
    """How many gateways of this process hold the freeze."""
    return _serving
