"""Spend caps: dollar (and token) limits per session, per person a day, per gateway user and
per scheduled job, checked before every model call (see docs/budgets.md)."""

from __future__ import annotations

from .caps import BudgetExhausted, Cap, Downshift, caps_for
from .guard import SpendGuard, day_start, estimate_prompt_tokens

__all__ = [
    "BudgetExhausted",
    "Cap",
    "Downshift",
    "SpendGuard",
    "caps_for",
    "day_start",
    "estimate_prompt_tokens",
]
