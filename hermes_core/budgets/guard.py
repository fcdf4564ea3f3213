"""The spend check made before every model call, and the record kept after it.

At the start of a turn the guard reads, once, what each cap has already counted (from the
store's ledger when it keeps one, so other processes' spending counts too); during the turn it
adds what the turn spent, so the check before each call is arithmetic only.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Mapping
from typing import Any

from hermes_hookspecs import Spent, Usage, UsageLedger, UsageRecord

from ..models.pricing import PriceBook
from .caps import BudgetExhausted, Cap, caps_for

MAX_LINEAGE = 100
"""The most compressions back a session cap follows a conversation."""


def day_start(now: float | None = None) -> float:
    """``time.time()`` of the last local midnight."""
    today = _dt.datetime.fromtimestamp(time.time() if now is None else now).date()
    return _dt.datetime.combine(today, _dt.time()).timestamp()


def _money(value: float) -> str:
    return f"${value:.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


class SpendGuard:
    """The caps of one agent's runs.

    :param config: the effective configuration (``budgets``, ``pricing``).
    :param prices: the price book to estimate calls with.
    :param store: the session store; a :class:`~hermes_hookspecs.UsageLedger` is read for
        what was spent before (else only this guard's own spending counts).
    :param person: the person the agent acts for (``None``: the owner).
    :param job: the scheduled job it runs for, if any.
    :param say: told, once each, of what the caps cannot count (a model with no price).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        prices: PriceBook,
        store: object,
        *,
        person: str | None,
        source: str,
        job: str | None,
        say: Callable[[str], None],
    ) -> None:
        self.caps, self.downshift, self.reserve = caps_for(config, person=person, job=job)
        self.prices = prices
        self.ledger = store if isinstance(store, UsageLedger) else None
        self.person = person
        self.source = source
        self.job = job
        self.say = say
        self._base: list[Spent] = [Spent() for _ in self.caps]
        self._own = Spent()  # what this guard's turns spent: the counts without a ledger
        self._turn_usd = 0.0
        self._turn_tokens = 0
        self._told: set[str] = set()
        self.prompt_tokens = 0
        """The prompt size of the last call (the next one's is at least that)."""

    @property
    def active(self) -> bool:
        """Whether any cap applies."""
        return bool(self.caps)

    def start_turn(self, session_id: str) -> None:
        """Read what each cap has counted so far (one query per cap, with a ledger)."""
        self._turn_usd = 0.0
        self._turn_tokens = 0
        if not self.caps:
            return
        if self.ledger is not None and not self.prompt_tokens:  # a resumed session
            self.prompt_tokens = self.ledger.last_call_tokens(session_id)
        since = day_start()
        for i, cap in enumerate(self.caps):
            if self.ledger is None:
                self._base[i] = self._own
            elif cap.scope == "session":
                self._base[i] = self._conversation_spent(session_id)
            elif cap.scope == "person_day":
                self._base[i] = self.ledger.spent(
                    since, person=self.person, owner=self.person is None
                )
            else:
                self._base[i] = self.ledger.spent(since, job=self.job)

    def _conversation_spent(self, session_id: str) -> Spent:
        """What the conversation of ``session_id`` spent: that session and the sessions it
        continues after compression (parents of the same source; a subagent's session, whose
        parent is its caller's, has a source of its own and keeps its own cap)."""
        assert self.ledger is not None
        store: Any = self.ledger
        usd, tokens = 0.0, 0
        current: str | None = session_id
        for _ in range(MAX_LINEAGE):
            if current is None:
                break
            spent = self.ledger.spent(0.0, session_id=current)
            usd, tokens = usd + spent.usd, tokens + spent.unpriced_tokens
            info = store.get_session(current)
            parent_id = getattr(info, "parent_session_id", None)
            parent = store.get_session(parent_id) if parent_id else None
            current = parent.id if parent is not None and parent.source == info.source else None
        return Spent(usd, tokens)

    def finish_turn(self, turn_cost: float | None) -> None:
        """Count the turn that ended (``turn_cost``: its cost, subagents included)."""
        self._own = Spent(
            self._own.usd + (turn_cost or 0.0), self._own.unpriced_tokens + self._turn_tokens
        )
        self._turn_usd = 0.0
        self._turn_tokens = 0

    def choose_model(self, model: str) -> str:
        """The model for the next call: the downshift model once a dollar cap is nearly
        spent (``budgets.downshift_to``), else ``model``."""
        shift = self.downshift
        if shift is None or shift.model == model:
            return model
        for i, cap in enumerate(self.caps):
            if cap.usd and self._base[i].usd + self._turn_usd >= shift.at * cap.usd:
                return shift.model
        return model

    def check(self, model: str, turn_cost: float, prompt_tokens: int) -> None:
        """Raise :class:`BudgetExhausted` when a call to ``model`` with a prompt of about
        ``prompt_tokens`` (and an answer of ``reserve_output_tokens``) could take a cap past
        its limit. ``turn_cost`` is what this turn has spent, its subagents included."""
        if not self.caps:
            return
        self._turn_usd = turn_cost
        prices = self.prices.prices(model)
        prompt = max(prompt_tokens, self.prompt_tokens)
        if prices is None:
            call_tokens = prompt + self.reserve
            self._unpriced(model)
            for i, cap in enumerate(self.caps):
                if cap.tokens is not None:
                    spent = self._base[i].unpriced_tokens + self._turn_tokens
                    if spent + call_tokens > cap.tokens:
                        raise self._exhausted(cap, f"{spent:,} tokens", f"{call_tokens:,} tokens")
            return
        call_usd = (prompt * prices["input"] + self.reserve * prices["output"]) / 1_000_000
        for i, cap in enumerate(self.caps):
            if cap.usd is not None:
                spent_usd = self._base[i].usd + turn_cost
                if spent_usd + call_usd > cap.usd:
                    raise self._exhausted(cap, _money(spent_usd), _money(call_usd))

    def charge(self, usage: Usage, cost: float | None) -> None:
        """Count a finished call of this agent (its cost, or its tokens when unpriced)."""
        if usage.input_tokens:
            self.prompt_tokens = usage.input_tokens + usage.output_tokens
        if cost is None:
            self._turn_tokens += usage.input_tokens + usage.output_tokens

    def charge_side(self, usage: Usage, cost: float | None) -> None:
        """Count a side request (its cost reaches the caps through the turn's cost; an
        unpriced one's tokens are counted here)."""
        if cost is None:
            self._turn_tokens += usage.input_tokens + usage.output_tokens

    def record(
        self,
        usage: Usage,
        cost: float | None,
        *,
        session_id: str,
        model: str,
        provider: str,
        key_id: str = "",
    ) -> UsageRecord:
        """The ledger's record of one call."""
        return UsageRecord(
            at=time.time(),
            session_id=session_id,
            person=self.person,
            source=self.source,
            job=self.job,
            model=model,
            provider=provider,
            key_id=key_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=cost,
        )

    def _unpriced(self, model: str) -> None:
        if model in self._told:
            return
        self._told.add(model)
        if any(cap.tokens is not None for cap in self.caps):
            self.say(
                f"model {model} has no price: its tokens count against the token caps "
                f"(set pricing.{model} in config.yaml to count dollars)"
            )
        else:
            self.say(
                f"model {model} has no price, so the dollar caps cannot count it: set "
                f"pricing.{model} or a budgets.*_tokens cap"
            )

    def _exhausted(self, cap: Cap, spent: str, call: str) -> BudgetExhausted:
        limit = (
            _money(cap.usd)
            if cap.usd is not None and not cap.key.endswith("tokens")
            else f"{cap.tokens:,} tokens"
        )
        whose = {"session": "this session has", "job_day": f"{cap.what} has"}.get(
            cap.scope, "you have" if cap.what == "you" else f"{cap.what} has"
        )
        today = "" if cap.scope == "session" else " today"
        return BudgetExhausted(
            f"spend cap reached: {cap.key} is {limit} and {whose} spent {spent}{today}; the "
            f"next model call could cost up to {call}. Raise it with "
            f"`hermes config set {cap.key} <amount>`",
            cap,
        )


def estimate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """About 4 characters a token: the prompt of a first call, before any answer has told the
    real figure."""
    chars = 0
    for message in messages:
        content = message.get("content")
        chars += len(content) if isinstance(content, str) else len(str(content or ""))
        for call in message.get("tool_calls") or ():
            chars += len(str(call)) if call else 0
    return chars // 4 + 4 * len(messages)
