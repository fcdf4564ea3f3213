"""Estimated cost of model calls from a price table that ``pricing`` in config.yaml extends.

Prices are US dollars per million tokens. The builtin table is a convenience with list prices
as published when it was written; providers change them, so an estimate is only an estimate,
and ``pricing:`` in config.yaml overrides or adds entries:

.. code-block:: yaml

    pricing:
      my-model: {input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.25}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import Usage

BUILTIN_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o": {"input": 2.50, "output": 10.00, "cache_read": 1.25},
    "gpt-4o-mini": {"input": 0.15, "output": 0.60, "cache_read": 0.075},
    "claude-opus-4": {"input": 15.0, "output": 75.0, "cache_read": 1.50, "cache_write": 18.75},
    "claude-sonnet-4": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_write": 3.75},
    "claude-3-5-haiku": {"input": 0.80, "output": 4.0, "cache_read": 0.08, "cache_write": 1.0},
    "deepseek-chat": {"input": 0.27, "output": 1.10, "cache_read": 0.07},
}


def price_for(model: str, config: Mapping[str, Any]) -> dict[str, float] | None:
    """The prices of ``model``: an exact entry, else the longest entry that prefixes the model
    name (so ``claude-sonnet-4`` prices ``claude-sonnet-4-20250514``), with config first."""
    name = model.rsplit("/", 1)[-1].lower()
    for table in (config.get("pricing") or {}, BUILTIN_PRICES):
        if name in table:
            return dict(table[name])
        matches = [key for key in table if name.startswith(str(key).lower())]
        if matches:
            return dict(table[max(matches, key=len)])
    return None


def estimate_cost(usage: Usage, model: str, config: Mapping[str, Any]) -> float | None:
    """Dollars for ``usage`` on ``model``, or ``None`` when the model has no price.

    ``usage.input_tokens`` includes cached tokens; those are charged at the cache prices.
    """
    prices = price_for(model, config)
    if prices is None:
        return None
    cache_read = usage.cache_read_tokens
    cache_write = usage.cache_write_tokens
    fresh = max(0, usage.input_tokens - cache_read - cache_write)
    per_token = 1 / 1_000_000
    return per_token * (
        fresh * prices.get("input", 0.0)
        + cache_read * prices.get("cache_read", prices.get("input", 0.0))
        + cache_write * prices.get("cache_write", prices.get("input", 0.0))
        + usage.output_tokens * prices.get("output", 0.0)
    )
