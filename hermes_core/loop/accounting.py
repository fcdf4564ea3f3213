"""What each model call costs and leaves behind: the spend caps checked before it, and after it
its cost in the turn, the caps' totals, a usage record in the store and the token ledger entry
of its request (kept on the message that answers it)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from hermes_hookspecs import ModelRequest, ModelResponse

from ..budgets import SpendGuard
from ..models.pricing import PriceBook
from . import request_ledger
from .turn import Turn

log = logging.getLogger("hermes.agent")

__all__ = ["CallAccounting"]

Store = Callable[..., None]
"""``store(method, *args)``: a store write queued with the step's others."""


class CallAccounting:
    """The accounting of one agent's model calls.

    :param prices: the price table.
    :param budget: the spend caps.
    :param store: queues a store write with the step's others.
    """

    def __init__(self, prices: PriceBook, budget: SpendGuard, store: Store) -> None:
        self.prices = prices
        self.budget = budget
        self._store = store
        self.catalogue_text: str | None = None
        """The tool catalogue's text in the system prompt (counted apart in the ledger)."""
        self._ledger: dict[str, Any] | None = None
        self._sizer = request_ledger.Sizer()

    def after_call(
        self,
        turn: Turn,
        response: ModelResponse,
        request: ModelRequest | None,
        *,
        session_id: str,
        model: str,
        provider: str,
        key_id: str,
    ) -> None:
        """Count a call of the turn: its cost, the caps' totals, its usage record, and the
        ledger entry of ``request`` (kept for :meth:`keep_ledger`)."""
        turn.api_calls += 1
        turn.usage.add(response.usage)
        cost = self.prices.cost(response.usage, model)
        if cost is not None:
            turn.cost_usd = (turn.cost_usd or 0.0) + cost
        self.budget.charge(response.usage, cost)
        if self.budget.ledger is not None:
            record = self.budget.record(
                response.usage, cost, session_id=session_id, model=model, provider=provider,
                key_id=key_id,
            )  # fmt: skip
            self._store("record_usage", record)
        self._ledger = self._ledger_entry(request, response, model)

    def side_call(
        self,
        response: ModelResponse,
        *,
        model: str,
        provider: str,
        key_id: str,
        session_id: str | None,
    ) -> float | None:
        """Count a side request (a summary, an image's description) towards the caps and its
        usage record; its cost, for the caller to add to the turn or the session."""
        cost = self.prices.cost(response.usage, model)
        self.budget.charge_side(response.usage, cost)
        if self.budget.ledger is not None and session_id is not None:
            record = self.budget.record(
                response.usage, cost, session_id=session_id, model=model, provider=provider,
                key_id=key_id,
            )  # fmt: skip
            self._store("record_usage", record)
        return cost

    def _ledger_entry(
        self, request: ModelRequest | None, response: ModelResponse, model: str
    ) -> dict[str, Any] | None:
        """The token ledger entry of ``request`` (logged at debug level)."""
        if request is None:
            return None
        entry = request_ledger.with_usage(
            request_ledger.measure(request, self.catalogue_text, self._sizer), response.usage, model
        )
        if log.isEnabledFor(logging.DEBUG):
            log.debug("request ledger: %s", json.dumps(entry, separators=(",", ":")))
        return entry

    def keep_ledger(self, message: dict[str, Any]) -> None:
        """Put the ledger entry of the request ``message`` answers on it."""
        entry, self._ledger = self._ledger, None
        if entry is not None:
            message[request_ledger.LEDGER_FIELD] = entry
