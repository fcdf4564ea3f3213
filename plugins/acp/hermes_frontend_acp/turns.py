"""Pieces of one ``session/prompt``: the trace context it carries, the editor's buffers it may
read, and the answer that ends it."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from acp.interfaces import Client
from acp.schema import PromptResponse, StopReason, Usage

from hermes_hookspecs import (
    AgentOutcome,
    AgentRunner,
    AgentTask,
    LockingSessionStore,
    SessionStore,
)

from . import editor_files

log = logging.getLogger("hermes.acp")

STOP_REASONS: dict[str, StopReason] = {
    "completed": "end_turn",
    "interrupted": "cancelled",
    "max_iterations": "max_turn_requests",
}
"""Outcome status -> ACP stop reason (``error`` is an error answer)."""


def trace_context(meta: Mapping[str, Any]) -> dict[str, str]:
    """The W3C trace context a request's ``_meta`` carries (``traceparent``, ``tracestate``;
    the SDK hands ``_meta``'s keys over as keywords)."""
    return {k: v for k in ("traceparent", "tracestate") if isinstance(v := meta.get(k), str)}


def prompt_response(outcome: AgentOutcome, cancelled: bool) -> PromptResponse:
    """The answer to ``session/prompt`` for a turn that ended with ``outcome``."""
    reason: StopReason = "cancelled" if cancelled else STOP_REASONS.get(outcome.status, "end_turn")
    usage = outcome.usage
    return PromptResponse(
        stop_reason=reason,
        usage=Usage(
            total_tokens=usage.input_tokens + usage.output_tokens,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            thought_tokens=usage.reasoning_tokens or None,
            cached_read_tokens=usage.cache_read_tokens or None,
            cached_write_tokens=usage.cache_write_tokens or None,
        ),
    )


def buffer_reader(conn: Client, loop: asyncio.AbstractEventLoop) -> editor_files.Reader:
    """Reads a file as the editor has it, from the turn's worker thread."""

    def read(session_id: str, path: str) -> str | None:
        future = asyncio.run_coroutine_threadsafe(
            conn.read_text_file(path=path, session_id=session_id), loop
        )
        try:
            return str(future.result(editor_files.READ_TIMEOUT).content)
        except Exception as exc:  # the editor could not: the file as it is on disk
            future.cancel()
            log.info("the editor did not give %s (%s); the file on disk is used", path, exc)
            return None

    return read


def buffer_writer(conn: Client, loop: asyncio.AbstractEventLoop) -> editor_files.Writer:
    """Writes a file through the editor, from the turn's worker thread."""

    def write(session_id: str, path: str, text: str) -> bool:
        future = asyncio.run_coroutine_threadsafe(
            conn.write_text_file(content=text, path=path, session_id=session_id), loop
        )
        try:
            future.result(editor_files.READ_TIMEOUT)
            return True
        except Exception as exc:  # the editor could not: hermes writes the file itself
            future.cancel()
            log.warning("the editor did not write %s (%s); hermes writes it to disk", path, exc)
            return False

    return write


WAIT_NOTICE_AFTER = 0.5
"""Seconds of waiting for another process's turn of the session before the editor is told."""


def run_held(
    runner: AgentRunner, task: AgentTask, store: SessionStore, notice: Callable[[str], None]
) -> AgentOutcome:
    """Run ``task`` holding its session's turn lock (when the store has locks), as the chat
    does: a ``hermes chat --resume`` or a second editor of the same session takes turns with
    this one instead of interleaving messages. ``notice`` is told once when the wait lasts;
    a cancel while waiting runs nothing (an ``interrupted`` outcome)."""
    session_id = task.session_id or ""
    cancel = task.cancel_event or threading.Event()
    if not isinstance(store, LockingSessionStore) or not session_id:
        return runner.run(task)
    waiting = threading.Event()

    def tell() -> None:
        if not waiting.wait(WAIT_NOTICE_AFTER):
            notice("Waiting for another turn of this session (in another hermes) to end…\n")

    threading.Thread(target=tell, name="hermes-acp-turn-wait", daemon=True).start()
    try:
        with store.hold_session(session_id, cancel) as held:
            waiting.set()
            if not held:
                return AgentOutcome(session_id=session_id, text="", status="interrupted")
            return runner.run(task)
    finally:
        waiting.set()
