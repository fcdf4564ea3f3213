"""Estimated cost of model calls, from the one price table hermes keeps (``prices.json`` beside
this module: input, cached input, cache write and output prices per model, with the date they
were read) that ``pricing`` in config.yaml overrides or extends.

Prices are US dollars per million tokens. Providers change them, so an estimate is only an
estimate:

.. code-block:: yaml

    pricing:
      my-model: {input: 1.0, cached_input: 0.1, cache_write: 1.25, output: 2.0}

(``cache_read`` is accepted for ``cached_input``.)
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import Usage

PRICES_FILE = Path(__file__).with_name("prices.json")
"""The builtin price table."""

Prices = dict[str, float]
"""``input``, ``cache_read``, ``cache_write`` and ``output``, dollars per million tokens."""


def _normalise(entry: Mapping[str, Any]) -> Prices:
    """An entry with the four prices: ``cached_input`` is ``cache_read``; a missing cache
    price is the input price."""
    source = dict(entry)
    if "cached_input" in source and "cache_read" not in source:
        source["cache_read"] = source["cached_input"]
    base = float(source.get("input") or 0.0)
    return {
        "input": base,
        "cache_read": float(source.get("cache_read", base) or 0.0),
        "cache_write": float(source.get("cache_write", base) or 0.0),
        "output": float(source.get("output") or 0.0),
    }


@functools.cache
def builtin_table() -> tuple[str, dict[str, Prices]]:
    """The date of the builtin table and its prices by model (read once per process)."""
    data = json.loads(PRICES_FILE.read_text(encoding="utf-8"))
    models = {str(k).lower(): _normalise(v) for k, v in data["models"].items()}
    return str(data.get("as_of") or ""), models


def _lookup(name: str, table: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if name in table:
        return table[name]  # type: ignore[no-any-return]
    matches = [key for key in table if name.startswith(str(key).lower())]
    return table[max(matches, key=len)] if matches else None


def price_for(model: str, config: Mapping[str, Any]) -> Prices | None:
    """The prices of ``model``: an exact entry, else the longest entry that prefixes the model
    name (so ``claude-sonnet-4`` prices ``claude-sonnet-4-20250514``), with config first."""
    name = model.rsplit("/", 1)[-1].lower()
    configured = config.get("pricing") or {}
    if isinstance(configured, Mapping):
        found = _lookup(name, {str(k).lower(): v for k, v in configured.items()})
        if isinstance(found, Mapping):
            return _normalise(found)
    builtin = _lookup(name, builtin_table()[1])
    return dict(builtin) if builtin is not None else None


def cost_of(usage: Usage, prices: Prices) -> float:
    """Dollars for ``usage`` at ``prices``; ``usage.input_tokens`` includes the cached
    tokens, which are charged at the cache prices."""
    cache_read = usage.cache_read_tokens
    cache_write = usage.cache_write_tokens
    fresh = max(0, usage.input_tokens - cache_read - cache_write)
    return (
        fresh * prices["input"]
        + cache_read * prices["cache_read"]
        + cache_write * prices["cache_write"]
        + usage.output_tokens * prices["output"]
    ) / 1_000_000


def estimate_cost(usage: Usage, model: str, config: Mapping[str, Any]) -> float | None:
    """Dollars for ``usage`` on ``model``, or ``None`` when the model has no price."""
    prices = price_for(model, config)
    return None if prices is None else cost_of(usage, prices)


class PriceBook:
    """The prices of one configuration, each model's looked up once (the budget check runs
    before every model call)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config
        self._known: dict[str, Prices | None] = {}

    def prices(self, model: str) -> Prices | None:
        """``price_for(model, config)``, remembered."""
        try:
            return self._known[model]
        except KeyError:
            found = self._known[model] = price_for(model, self.config)
            return found

    def cost(self, usage: Usage, model: str) -> float | None:
        """``estimate_cost(usage, model, config)``, with the prices remembered."""
        prices = self.prices(model)
        return None if prices is None else cost_of(usage, prices)
