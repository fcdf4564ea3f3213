"""Context engines decide when the transcript is too long and how to shorten it."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

from .providers import Usage
from .tools import Tool


class ContextEngine(abc.ABC):
    """Keeps the conversation within the model's context window.

    The loop calls :meth:`should_compress_preflight` before each request, and
    :meth:`update_from_response` then :meth:`should_compress` after each response; when either says
    yes it calls :meth:`compress` before the next request. Whatever :meth:`compress` returns is
    repaired and validated by the host before it is sent.

    Before first use the host sets :attr:`summarize` (the model, for summaries) and
    :attr:`notify` (status lines for the user) on the instance; both stay ``None`` when an engine
    is built outside a host, so an engine must work without them.
    """

    name: str = ""
    """The name users put in ``context.engine``."""

    summarize: Callable[[list[dict[str, Any]], int | None], str] | None = None
    """Set by the host: ``summarize(messages, max_tokens) -> text`` sends ``messages`` (a complete
    request, system message first if any, no tools) to the auxiliary model for compression
    (``auxiliary.compression``, else the main model) and returns its answer's text. It raises
    when the model cannot answer; ``max_tokens`` caps the answer (``None``: the model's own)."""

    notify: Callable[[str], None] | None = None
    """Set by the host: ``notify(text)`` shows a one-line status message to the user."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.config: dict[str, Any] = dict(config or {})
        self.context_window: int = 0

    def set_context_window(self, tokens: int) -> None:
        """Called when the model (and so its window, in tokens) changes."""
        self.context_window = tokens

    def update_from_response(self, usage: Usage) -> None:  # noqa: B027 - optional
        """Called after every model call with its token usage."""

    @abc.abstractmethod
    def should_compress(self, prompt_tokens: int) -> bool:
        """Whether the transcript must be compressed, given the real prompt size just reported."""

    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        """A cheap estimate before a request; the default never asks for compression."""
        return False

    @abc.abstractmethod
    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus: str | None = None,
    ) -> list[dict[str, Any]]:
        """Return a shorter transcript that keeps what matters.

        ``messages`` are copies the engine may change; they never include the system prompt.
        ``current_tokens`` is the last reported prompt size (``None`` before the first response);
        ``focus`` is what the user asked to keep in detail (``/compress FOCUS``). Called when
        :meth:`should_compress` or :meth:`should_compress_preflight` said yes, when the provider
        reported a context overflow, and when the user asks (``/compress``). The host repairs
        the result (a tool call cut from its result, two user messages in a row...), puts back
        the latest user message if it was dropped, and continues in a child session.
        """

    def on_session_start(self, session_id: str) -> None:  # noqa: B027 - optional
        """Called when a session starts or is resumed."""

    def on_session_end(self, session_id: str) -> None:  # noqa: B027 - optional
        """Called when a session ends."""

    def tools(self) -> list[Tool]:
        """Tools this engine offers the model (none by default)."""
        return []

    def status(self) -> dict[str, Any]:
        """Figures for the CLI: tokens used, threshold, window, compressions so far."""
        return {"engine": self.name, "context_window": self.context_window}


__all__ = ["ContextEngine"]
