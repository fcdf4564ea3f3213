"""What a session store may keep besides sessions for spend caps and credential pools: one
record per model call (who spent what, on which model and key) and the shared state of each
pooled API key (cooldowns and usage), changed with compare-and-swap so that every process that
shares the store agrees.

Both are optional capabilities, checked with ``isinstance``: a store without them still works,
with caps that count only what the process itself spent and pool state kept in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class UsageRecord:
    """One model call as the spend ledger keeps it.

    :param at: ``time.time()`` of the answer.
    :param session_id: the session it belongs to.
    :param person: whom the run acted for (``None``: the home's owner).
    :param source: the session's source (``cli``, ``cron``, a gateway platform ...).
    :param job: the scheduled job the run was for, if any.
    :param model: the model that answered.
    :param provider: its provider.
    :param key_id: the id of the pooled key that made the call (empty when not pooled).
    :param input_tokens: the whole prompt, cached tokens included.
    :param output_tokens: the answer's tokens.
    :param cache_read_tokens: prompt tokens served from the cache.
    :param cache_write_tokens: prompt tokens written to the cache.
    :param cost_usd: the estimated cost; ``None`` when the model has no price.
    """

    at: float
    session_id: str
    person: str | None
    source: str
    job: str | None
    model: str
    provider: str
    key_id: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


@dataclass(frozen=True)
class Spent:
    """Totals over some usage records: dollars of the priced calls, tokens of the unpriced."""

    usd: float = 0.0
    unpriced_tokens: int = 0


@runtime_checkable
class UsageLedger(Protocol):
    """A store that keeps one :class:`UsageRecord` per model call."""

    def record_usage(self, record: UsageRecord) -> None:
        """Keep ``record`` (inside the thread's open batch when there is one)."""
        ...

    def spent(
        self,
        since: float,
        *,
        session_id: str | None = None,
        person: str | None = None,
        owner: bool = False,
        job: str | None = None,
    ) -> Spent:
        """What the records since ``since`` add up to, narrowed to one session, one person
        (``owner``: the owner's records, whose person is ``None``) or one job."""
        ...

    def last_call_tokens(self, session_id: str) -> int:
        """Prompt and answer tokens of the session's last recorded call (0 when none): the
        least the next call's prompt will be."""
        ...

    def usage_rows(self, since: float, by: str) -> list[dict[str, Any]]:
        """Totals since ``since`` grouped ``by`` ``day``, ``model``, ``user``, ``job`` or
        ``key``: dicts with ``group``, ``calls``, the token counts, ``cost_usd`` and
        ``unpriced_calls``, largest cost first (by day: oldest first)."""
        ...


USAGE_ROW_KEYS = (
    "group",
    "calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "unpriced_calls",
)
"""The keys of a :meth:`UsageLedger.usage_rows` row, in the order a store selects them."""


def usage_row(columns: Sequence[Any]) -> dict[str, Any]:
    """A row of :meth:`UsageLedger.usage_rows` from the columns a store's query gives in the
    order of :data:`USAGE_ROW_KEYS` (a sum over no row, ``NULL``, counts as 0)."""
    group, calls, *tokens, cost, unpriced = columns
    return {
        "group": group,
        "calls": int(calls),
        **{key: int(value or 0) for key, value in zip(USAGE_ROW_KEYS[2:6], tokens, strict=True)},
        "cost_usd": float(cost or 0.0),
        "unpriced_calls": int(unpriced or 0),
    }


@dataclass(frozen=True)
class KeyState:
    """The shared state of one pooled key.

    :param fingerprint: a digest of the key's value; when the value changes the state is
        someone else's and starts afresh.
    :param version: bumped by every change; a change names the version it read.
    :param cooldown_until: ``time.time()`` before which the key is not used (0: usable).
    :param reason: why it cools down (``usage_limit``, ``revoked``, ``auth`` ...).
    :param uses: requests made with it.
    :param errors: errors charged to it.
    :param last_used: ``time.time()`` of its last request.
    """

    fingerprint: str = ""
    version: int = 0
    cooldown_until: float = 0.0
    reason: str = ""
    uses: int = 0
    errors: int = 0
    last_used: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class KeyStateStore(Protocol):
    """A store that keeps the state of pooled keys, shared by every process using it."""

    def key_states(self, provider: str) -> dict[str, KeyState]:
        """The stored state of each key of ``provider``'s pool, by key id."""
        ...

    def swap_key_state(
        self, provider: str, key_id: str, expected_version: int, state: KeyState
    ) -> bool:
        """Store ``state`` (its ``version`` is ``expected_version + 1``) if the stored version
        is still ``expected_version`` (0: no row yet); ``False`` when another process changed
        it first (read again and retry)."""
        ...

    def forget_key_states(self, provider: str, key_ids: Sequence[str] | None = None) -> int:
        """Delete the state of ``key_ids`` (every key of ``provider`` when ``None``); returns
        how many rows went."""
        ...


__all__ = [
    "USAGE_ROW_KEYS",
    "KeyState",
    "KeyStateStore",
    "Spent",
    "UsageLedger",
    "UsageRecord",
    "usage_row",
]
