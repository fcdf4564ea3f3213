"""Calling a Hermes agent plugin's callback the way the Hermes agent does: keyword arguments only,
a callback that does not take ``**kwargs`` gets only the names it declares, and a coroutine is run
to its end."""

from __future__ import annotations

import contextvars
import inspect
import threading
from collections.abc import Callable, Mapping
from typing import Any

AWAIT_TIMEOUT = 30.0
"""Longest wait, in seconds, for an ``async`` callback called from inside a running event loop."""


def accepted_kwargs(callback: Callable[..., Any], payload: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``payload`` that ``callback`` accepts: all of it for a ``**kwargs`` callback
    (or one whose signature cannot be read), else only the keyword parameters it declares."""
    try:
        parameters = inspect.signature(callback).parameters
    except (TypeError, ValueError):
        return dict(payload)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return dict(payload)
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {k: v for k, v in payload.items() if k in parameters and parameters[k].kind in keyword}


def resolve(value: Any) -> Any:
    """``value``, or the result of awaiting it when it is awaitable. Inside a running event loop
    the coroutine runs on a helper thread with its own loop, at most :data:`AWAIT_TIMEOUT`."""
    if not inspect.isawaitable(value):
        return value
    import asyncio  # here: `hermes --help` loads this plugin and needs no event loop

    async def _await() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await())
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = asyncio.run(_await())
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True)
    worker.start()
    worker.join(AWAIT_TIMEOUT)
    if worker.is_alive():
        raise TimeoutError(f"async callback did not finish within {AWAIT_TIMEOUT:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def call(callback: Callable[..., Any], payload: Mapping[str, Any]) -> Any:
    """Call ``callback`` with the accepted part of ``payload`` and return its (awaited) result."""
    return resolve(callback(**accepted_kwargs(callback, payload)))
