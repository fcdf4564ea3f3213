"""The book-keeping of one user turn: its task id, model calls, usage and cost (subagents'
included), how it ended, and the result ``run_conversation`` returns."""

from __future__ import annotations

import threading
from typing import Any

from hermes_hookspecs import TURN_RESULT_KEYS, AgentOutcome, ExitReason, TurnResult, Usage

BUDGET_SUMMARY_PROMPT = (
    "You have used all the steps allowed for this task, so no more tools can be called. "
    "Summarise for the user what you did, what you found, and what is left to do."
)


RESULT_KEYS: frozenset[str] = TURN_RESULT_KEYS
"""The keys of the :class:`~hermes_hookspecs.TurnResult` ``run_conversation`` returns, on every
path (``hermes_hookspecs.TURN_RESULT_KEYS``)."""


UNANSWERED_NOTE = "(no answer: this turn was interrupted, or failed, before the model answered)"
"""What closes a user message a turn left unanswered, so the next one stays apart."""


class Turn:
    """Book-keeping of one ``run_conversation`` call."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.api_calls = 0
        self.usage = Usage()
        self.final_response: str | None = None
        self.cost_usd: float | None = None
        self.exit_reason: ExitReason = "error"
        self.error: str | None = None
        self._charge_lock = threading.Lock()

    def charge(self, outcome: AgentOutcome) -> None:
        """Count a subagent's usage and cost towards this turn (subagents may run in
        parallel threads)."""
        with self._charge_lock:
            self.usage.add(outcome.usage)
            if outcome.cost_usd:
                self.cost_usd = (self.cost_usd or 0.0) + outcome.cost_usd

    def add_side(self, usage: Usage, cost: float | None) -> None:
        """Count a side request's usage and cost (a compression summary, an image
        description) towards this turn."""
        with self._charge_lock:
            self.usage.add(usage)
            if cost is not None:
                self.cost_usd = (self.cost_usd or 0.0) + cost

    def finish(self, exit_reason: ExitReason, error: str | None = None) -> None:
        """Record how the turn ended (and its error, in one line)."""
        self.exit_reason = exit_reason
        self.error = error

    def result(
        self, messages: list[dict[str, Any]], session_id: str, model: str, provider: str
    ) -> TurnResult:
        """The turn's result: its figures, and the conversation's ``messages`` (copied),
        ``session_id``, ``model`` and ``provider`` at its end."""
        return {
            "final_response": self.final_response,
            "messages": list(messages),
            "session_id": session_id,
            "task_id": self.task_id,
            "api_calls": self.api_calls,
            "usage": self.usage.as_dict(),
            "estimated_cost_usd": self.cost_usd,
            "completed": self.exit_reason in ("completed", "max_turns"),
            "interrupted": self.exit_reason == "interrupted",
            "exit_reason": self.exit_reason,
            "error": self.error,
            "model": model,
            "provider": provider,
        }
