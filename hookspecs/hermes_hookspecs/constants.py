"""Names shared by the core and plugins, kept apart so that reading them imports nothing else."""

from __future__ import annotations

API_MODES: tuple[str, ...] = ("chat_completions", "codex_responses", "anthropic_messages")
"""The wire formats hermes knows. Messages are always OpenAI-style inside hermes."""

FINISH_REASONS: tuple[str, ...] = ("stop", "tool_calls", "length", "content_filter")
"""Why a model stopped: the OpenAI names, which every provider maps its own reasons to."""

__all__ = ["API_MODES", "FINISH_REASONS"]
