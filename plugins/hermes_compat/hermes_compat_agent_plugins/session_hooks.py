"""The session and subagent hooks: ``on_session_start``, ``on_session_end``,
``on_session_finalize``, ``subagent_start`` and ``subagent_stop`` of Hermes agent plugins."""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import hookimpl

from . import turns
from .locate import host_of


def subagent_status(status: str, summary: str) -> str:
    """The Hermes agent's ``child_status`` of ``subagent_stop`` for a child that ended with
    ``status`` (of ``hermes_subagent_stop``) and ``summary``: ``interrupted``; ``error`` for a
    child that raised; else ``completed`` when it left a summary (at its step limit too), and
    ``failed`` when it did not."""
    if status in ("interrupted", "error"):
        return status
    return "completed" if summary.strip() and summary.strip() != "(empty)" else "failed"


@hookimpl
def hermes_session_start(session: Any) -> None:
    """``on_session_start``."""
    turns.started(session.id, session.source or "cli")
    host = host_of()
    if session.source != turns.PLUGIN_SOURCE and host.has_hook("on_session_start"):
        host.invoke(
            "on_session_start",
            {"session_id": session.id, "model": session.model, "platform": session.source},
        )


@hookimpl
def hermes_session_end(session: Any) -> None:
    """``on_session_end`` and ``on_session_finalize``."""
    if session.source != turns.PLUGIN_SOURCE:
        host = host_of()
        if host.hooks:
            _end(host, session)
    turns.ended(session.id)


def _end(host: Any, session: Any) -> None:
    reason = getattr(session, "end_reason", "") or ""
    payload = {
        "session_id": session.id,
        "task_id": session.id,
        "turn_id": turns.turn_ids(session.id)["turn_id"],
        "completed": True,
        "failed": False,
        "interrupted": False,
        "turn_exit_reason": reason,
        "reason": reason,
        "model": session.model,
        "platform": session.source,
    }
    host.invoke("on_session_end", payload)
    host.invoke(
        "on_session_finalize",
        {"session_id": session.id, "platform": session.source, "reason": reason},
    )


@hookimpl
def hermes_subagent_start(parent_session_id: str, child_session_id: str, goal: str) -> None:
    """``subagent_start``."""
    host = host_of()
    if host.has_hook("subagent_start"):
        host.invoke(
            "subagent_start",
            {
                "parent_session_id": parent_session_id,
                "parent_turn_id": turns.turn_ids(parent_session_id)["turn_id"],
                "parent_subagent_id": "",
                "child_session_id": child_session_id,
                "child_subagent_id": child_session_id,
                "child_role": "leaf",
                "child_goal": goal,
            },
        )


@hookimpl
def hermes_subagent_stop(
    parent_session_id: str, child_session_id: str, status: str, duration: float, outcome: Any
) -> None:
    """``subagent_stop``."""
    host = host_of()
    if host.has_hook("subagent_stop"):
        host.invoke(
            "subagent_stop",
            {
                "parent_session_id": parent_session_id,
                "parent_turn_id": turns.turn_ids(parent_session_id)["turn_id"],
                "child_session_id": child_session_id,
                "child_role": "leaf",
                "child_summary": getattr(outcome, "text", "") or "",
                "child_status": subagent_status(status, getattr(outcome, "text", "") or ""),
                "tool_call_history": [],
                "duration_ms": int(duration * 1000),
            },
        )
