"""Conversation rewind: the chat goes back to where a checkpoint's turn began.

A checkpoint remembers how many messages its session held when it was taken (the turn's user
message and what the model said before its first change are among them). Rewinding makes a new
session holding the messages before that turn's user message, and the chat continues there;
the session as it was stays in the store, whole, as the other branch (sessions are never cut:
a store only appends). The new session names the one it was rewound from and the checkpoint.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import HermesError, SessionInfo, SessionStore, ToolContext

from .catalog import Checkpoint

__all__ = ["RewindPlan", "Rewound", "fork", "messages_so_far", "plan_rewind"]


def messages_so_far(context: ToolContext) -> int | None:
    """How many messages the session of ``context`` holds now (``None``: there is no store, or
    it cannot say)."""
    store = context.session_store
    if store is None or not context.session_id:
        return None
    try:
        return len(store.get_messages(context.session_id))
    except Exception:  # the checkpoint is still worth taking; only the rewind point is lost
        return None


@dataclass(frozen=True)
class Rewound:
    """A rewind's result: the new session, how many messages it kept, and the text of the
    user message whose turn was undone (to type again, changed)."""

    session_id: str
    kept: int
    message: str


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return ""


@dataclass(frozen=True)
class RewindPlan:
    """Where a rewind cuts: the session, its messages and the index of the user message that
    began the checkpoint's turn."""

    info: SessionInfo
    messages: list[dict[str, Any]]
    cut: int
    checkpoint: Checkpoint


def plan_rewind(store: SessionStore, session_id: str, checkpoint: Checkpoint) -> RewindPlan:
    """Where rewinding ``session_id`` to ``checkpoint``'s turn cuts; nothing is written.

    :raises HermesError: the checkpoint is of another session, it does not know where its turn
        began, or the session no longer holds that turn.
    """
    if checkpoint.meta.get("session") != session_id:
        raise HermesError(
            f"checkpoint {checkpoint.id} was taken in another session "
            f"({checkpoint.meta.get('session') or 'unknown'}): only its files can be restored "
            "here (--files)"
        )
    count = checkpoint.meta.get("messages")
    if not isinstance(count, int) or isinstance(count, bool):
        raise HermesError(
            f"checkpoint {checkpoint.id} does not know where its turn began in the conversation: "
            "only its files can be restored (--files)"
        )
    info = store.get_session(session_id)
    messages = store.get_messages(session_id)
    if info is None or count > len(messages):
        raise HermesError(f"session {session_id} no longer holds the turn of {checkpoint.id}")
    starts = [i for i, m in enumerate(messages[:count]) if m.get("role") == "user"]
    if not starts:
        raise HermesError(f"no message of the person starts the turn of {checkpoint.id}")
    return RewindPlan(info, messages, starts[-1], checkpoint)


def fork(store: SessionStore, plan: RewindPlan) -> Rewound:
    """Make the session ``plan`` describes: the messages before the cut, in a new session that
    names the one it was rewound from (see the module's docstring)."""
    info = plan.info
    new = SessionInfo(
        id=f"session_{uuid.uuid4().hex[:16]}",
        source=info.source,
        model=info.model,
        provider=info.provider,
        system_prompt=info.system_prompt,
        started_at=time.time(),
        title=f"{info.title or info.id} (rewound)",
        metadata={"rewound_from": info.id, "rewound_to_checkpoint": plan.checkpoint.id},
        person=info.person,
    )
    store.create_session(new)
    batch = getattr(store, "batch", None)
    with batch() if batch is not None else contextlib.nullcontext():
        for message in plan.messages[: plan.cut]:
            store.append_message(new.id, message)
    return Rewound(new.id, plan.cut, _text(plan.messages[plan.cut]))
