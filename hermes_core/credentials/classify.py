"""What a provider's error means for the pooled key that made the request, from the table in
``error_classes.json``, and when a key that hit a usage limit may be used again."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hermes_hookspecs import ProviderError

Verdict = Literal["retry_same", "cooldown", "refresh", "revoke", "no_penalty", "retry_once"]
"""What happens to the key (see the table's ``verdicts``); ``retry_once``: no rule matched."""

TABLE_FILE = Path(__file__).with_name("error_classes.json")


@dataclass(frozen=True)
class Rule:
    """One row of the table."""

    name: str
    verdict: Verdict
    statuses: frozenset[int]
    kinds: frozenset[str]
    pattern: re.Pattern[str] | None

    def matches(self, error: ProviderError) -> bool:
        """Whether ``error`` is of this row."""
        if self.statuses and error.status not in self.statuses:
            return False
        if self.kinds and error.kind not in self.kinds:
            return False
        return self.pattern is None or bool(self.pattern.search(str(error)))


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The table's rules, in order (read once per process)."""
    data = json.loads(TABLE_FILE.read_text(encoding="utf-8"))
    found = []
    for row in data["rules"]:
        pattern = row.get("match")
        found.append(
            Rule(
                name=row["name"],
                verdict=row["verdict"],
                statuses=frozenset(int(s) for s in row.get("status", ())),
                kinds=frozenset(row.get("kind", ())),
                pattern=re.compile(pattern, re.IGNORECASE) if pattern else None,
            )
        )
    return tuple(found)


def classify(error: ProviderError) -> tuple[Verdict, str]:
    """The verdict for ``error`` and the name of the rule that gave it."""
    for rule in rules():
        if rule.matches(error):
            return rule.verdict, rule.name
    return "retry_once", "unknown"


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_RESET_HEADERS = (
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
    "x-ratelimit-reset",
)
_BODY_RESET = re.compile(
    r"(?:reset|try again|resets?)\D{0,20}?(?:in\s+)?(\d+(?:\.\d+)?)\s*(seconds?|minutes?|hours?)",
    re.IGNORECASE,
)


def _seconds(value: str, now: float) -> float | None:
    """Seconds until the reset a header gives: a duration (``6m0s``, ``1.5s``, ``20ms``), a
    number of seconds or an epoch time, or an RFC 3339 date."""
    text = value.strip()
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return number - now if number > 1_000_000_000 else number
    parts = _DURATION.findall(text)
    if parts and "".join(n + u for n, u in parts) == text:
        unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
        return sum(float(n) * unit[u] for n, u in parts)
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    return when.timestamp() - now


def reset_after(error: ProviderError, now: float) -> float | None:
    """Seconds until the key's limit resets, from the headers or the message; the longest
    reset a header names (every limit must have reset), ``None`` when none is given."""
    waits: list[float] = []
    headers: dict[str, Any] = getattr(error, "headers", {}) or {}
    for name in _RESET_HEADERS:
        if name in headers:
            wait = _seconds(str(headers[name]), now)
            if wait is not None:
                waits.append(wait)
    if error.retry_after is not None:
        waits.append(error.retry_after)
    found = _BODY_RESET.search(str(error))
    if found:
        unit = found.group(2).lower()
        scale = 3600 if unit.startswith("hour") else 60 if unit.startswith("minute") else 1
        waits.append(float(found.group(1)) * scale)
    positive = [w for w in waits if w > 0]
    return max(positive) if positive else None
