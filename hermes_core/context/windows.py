"""The context window of a model, in tokens, for the context engine.

``model.context_length`` in config.yaml wins for the configured model; otherwise a small table of
well-known model families is looked up by name (the longest matching prefix, ignoring a
``vendor/`` prefix and case); otherwise :data:`DEFAULT_CONTEXT_WINDOW`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DEFAULT_CONTEXT_WINDOW = 128_000
"""Tokens assumed for a model nobody told us about."""

KNOWN_WINDOWS: dict[str, int] = {
    "claude-": 200_000,
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2": 1_048_576,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "grok-4": 256_000,
    "llama3.1": 128_000,
    "llama-3.1": 128_000,
    "llama3.2": 128_000,
    "qwen3": 128_000,
    "mistral-large": 128_000,
}
"""Name prefix -> window, for models whose provider does not say."""


def context_window(model: str, config: Mapping[str, Any], configured_model: str | None) -> int:
    """The window of ``model``: ``model.context_length`` when ``model`` is the configured one
    (``configured_model``), else the table, else the default."""
    model_cfg = config.get("model")
    length = model_cfg.get("context_length") if isinstance(model_cfg, Mapping) else None
    if isinstance(length, int) and length > 0 and model == configured_model:
        return length
    return known_window(model) or DEFAULT_CONTEXT_WINDOW


def known_window(model: str) -> int | None:
    """The table's window for ``model``, or ``None``."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    best: str | None = None
    for prefix in KNOWN_WINDOWS:
        if name.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return KNOWN_WINDOWS[best] if best is not None else None


_STATED = (
    re.compile(r"(?i)maximum context length is (\d[\d,]*)"),  # OpenAI-compatible servers
    re.compile(r"(?i)\d[\d,]* tokens? > (\d[\d,]*)"),  # Anthropic: "210000 tokens > 200000"
    re.compile(r"(?i)context (?:window|length|size)[^\d.]{0,40}(\d[\d,]*)"),
)


def stated_window(message: str) -> int | None:
    """The context window a provider's overflow error states, if it states one."""
    for pattern in _STATED:
        found = pattern.search(message)
        if found:
            value = int(found.group(1).replace(",", ""))
            if value >= 256:
                return value
    return None
