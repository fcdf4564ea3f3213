"""The result of one agent turn: what the host's agent loop returns for one user message."""

from __future__ import annotations

from typing import Any, Literal, TypedDict, get_args

ExitReason = Literal[
    "completed",
    "max_turns",
    "interrupted",
    "invalid_tool_calls",
    "provider_error",
    "budget_exhausted",
    "error",
]
"""Why a turn's loop stopped: an answer, the step budget used up (the answer is a summary), an
interrupt, only invalid tool calls several steps in a row, a provider error, a spend cap
reached before a model call (``error`` names the cap and how to raise it), any other error."""

EXIT_REASONS: tuple[ExitReason, ...] = get_args(ExitReason)
"""Every :data:`ExitReason`, in that order."""


class TurnResult(TypedDict):
    """One turn, from the user's message to the end of the loop; every key is always present.

    :ivar final_response: the model's answer; ``None`` when the turn ended without one.
    :ivar messages: the whole transcript after the turn, without the system prompt.
    :ivar session_id: the session that holds the transcript.
    :ivar task_id: the id of this turn's task (its environments are keyed by it).
    :ivar api_calls: the model calls the turn made.
    :ivar usage: the tokens of this turn, :meth:`Usage.as_dict` of their sum.
    :ivar estimated_cost_usd: their estimated cost; ``None`` when the price is unknown.
    :ivar completed: the loop ran to an answer (``exit_reason`` ``completed`` or ``max_turns``).
    :ivar interrupted: the turn was interrupted (``exit_reason`` ``interrupted``).
    :ivar exit_reason: why the loop stopped (:data:`ExitReason`).
    :ivar error: one readable line when the turn failed, else ``None``.
    :ivar model: the model that answered (after any fallback).
    :ivar provider: that model's provider.
    """

    final_response: str | None
    messages: list[dict[str, Any]]
    session_id: str
    task_id: str
    api_calls: int
    usage: dict[str, int]
    estimated_cost_usd: float | None
    completed: bool
    interrupted: bool
    exit_reason: ExitReason
    error: str | None
    model: str
    provider: str


TURN_RESULT_KEYS: frozenset[str] = frozenset(TurnResult.__required_keys__)
"""The keys of every :class:`TurnResult`."""

__all__ = ["EXIT_REASONS", "TURN_RESULT_KEYS", "ExitReason", "TurnResult"]
