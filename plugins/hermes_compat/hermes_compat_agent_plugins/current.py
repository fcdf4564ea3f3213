"""The tool call a Hermes agent plugin's code is running inside, if any, so that ``ctx.llm`` and
``ctx.dispatch_tool`` can reach the host's services for it."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_tool_context: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "hermes_compat_tool_context", default=None
)


@contextmanager
def inside(context: Any) -> Iterator[None]:
    """Mark ``context`` (a ``ToolContext``) as the current call while the block runs."""
    token = _tool_context.set(context)
    try:
        yield
    finally:
        _tool_context.reset(token)


def tool_context() -> Any:
    """The ``ToolContext`` of the call being run, or ``None``."""
    return _tool_context.get()


def command_context() -> Any:
    """The ``CommandContext`` of the running ``hermes`` command, or ``None``."""
    try:
        import click
    except ImportError:  # pragma: no cover - click is a dependency
        return None
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    obj = ctx.find_root().obj
    return obj if hasattr(obj, "agent_runner") else None
