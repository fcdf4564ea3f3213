"""Context compression of a conversation: when to compress, the context window the engine works
with, the engine's summaries on the compression model, and the one sequence every compaction
follows (compress, check for an interrupt, then continue in a child session)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from hermes_hookspecs import (
    CONTEXT_SUMMARY_FLAG,
    Cancelled,
    ContextEngine,
    HermesError,
    ModelResponse,
    ProviderError,
    SessionInfo,
)

from ..context.windows import stated_window
from ..models.calls import INTERRUPTED
from . import transcript
from .events import Events
from .ids import new_id

log = logging.getLogger("hermes.agent")


class Conversation(Protocol):
    """What the compactor needs of the conversation it compresses (the agent gives it this)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The transcript, without the system prompt."""
        ...

    @property
    def session(self) -> SessionInfo | None:
        """The current session; ``None`` before it started."""
        ...

    @property
    def model(self) -> str:
        """The model of the current turn."""
        ...

    @property
    def provider(self) -> str:
        """The provider of the current turn."""
        ...

    @property
    def cancel_event(self) -> threading.Event:
        """Set when the user interrupts the current turn."""
        ...

    def reset_interrupt(self) -> None:
        """Forget an interrupt of an earlier turn."""

    def ensure_session(self) -> None:
        """Start (or resume) the session if that did not happen yet."""

    def stored_session(self, session_id: str) -> SessionInfo | None:
        """The session as the store holds it."""

    def side_request(
        self, task: str, messages: list[dict[str, Any]], max_tokens: int | None
    ) -> ModelResponse:
        """Ask the model of ``auxiliary.<task>`` (see ``Agent.side_request``)."""
        ...

    def continue_in(
        self,
        child: SessionInfo,
        messages: list[dict[str, Any]],
        system_message: str | None,
        *,
        ended_at: float,
    ) -> None:
        """End the current session (compressed, at ``ended_at``) and go on in ``child`` holding
        ``messages``, with the system prompt built again."""


class Compactor:
    """The context compression of one conversation, with its context engine.

    It keeps what the decisions need between calls: whether a response asked for compression,
    the prompt size the provider last reported, the user's latest request (kept through every
    compaction) and the context windows providers proved smaller than assumed.

    :param conversation: the conversation it compresses.
    :param engine: the context engine; ``None``: nothing is ever compressed.
    :param events: where status lines go.
    :param window: the context window of a model, in tokens.
    """

    def __init__(
        self,
        conversation: Conversation,
        engine: ContextEngine | None,
        events: Events,
        window: Callable[[str], int],
    ) -> None:
        self.conversation = conversation
        self.engine = engine
        self.events = events
        self._window = window
        self.pending = False
        """A response said the next request should be compressed first."""
        self.last_prompt_tokens: int | None = None
        self.request_content: Any = None
        """The content of the user's message of the latest turn."""
        self._window_model: str | None = None
        self._window_overrides: dict[str, int] = {}
        if engine is not None:
            engine.summarize = self.summarize
            engine.notify = self.engine_status

    # --- the agent loop's calls ------------------------------------------------------------

    def before_request(self) -> None:
        """Before a request: compress when a response asked for it or the engine's preflight
        estimate says so. A failing engine is reported and the request goes out uncompressed.

        :raises Cancelled: the user interrupted the compaction; nothing changed.
        """
        engine = self.engine
        if engine is None:
            return
        self.sync_window()
        if not self.pending:
            try:
                wanted = engine.should_compress_preflight(self.conversation.messages)
            except Exception as exc:
                self._engine_failed("should_compress_preflight", exc)
                return
            if not wanted:
                return
        self._compact(None, lambda exc: self._engine_failed("compress", exc))

    def after_overflow(
        self, error: ProviderError, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> None:
        """The provider said the request (``messages`` and ``tools``) does not fit: learn the
        smaller window and compress now (the caller retries once).

        :raises ProviderError: ``error``, when the engine failed.
        :raises Cancelled: the user interrupted the compaction; nothing changed.
        """
        self._learn_window(error, messages, tools)
        self.events.emit(
            "status", text="the request did not fit in the context window; compressing and retrying"
        )

        def failed(exc: Exception) -> None:
            raise error from exc

        self._compact(None, failed)

    def after_response(self, response: ModelResponse) -> None:
        """After a response: note its prompt size and let the engine decide whether the next
        request is compressed first. An engine's failure is reported, never raised."""
        if response.usage.input_tokens > 0:
            self.last_prompt_tokens = response.usage.input_tokens
        engine = self.engine
        if engine is None:
            return
        self.sync_window()
        try:
            engine.update_from_response(response.usage)
            if engine.should_compress(response.usage.input_tokens):
                self.pending = True
        except Exception as exc:  # an engine's bug must not lose the answer
            self._engine_failed("update_from_response/should_compress", exc)

    def compress(self, focus: str | None = None) -> dict[str, Any]:
        """Compress the transcript now (``Agent.compress``); returns the compaction's figures.

        :raises HermesError: no engine is active, the conversation is empty, the engine failed
            or the user interrupted it.
        """
        conversation = self.conversation
        engine = self.engine
        if engine is None:
            raise HermesError(
                "no context engine is active (context.engine in config.yaml; install one, e.g. "
                "hermes-engine-compressor)"
            )
        conversation.ensure_session()
        if not conversation.messages:
            raise HermesError("nothing to compress yet: the conversation is empty")
        conversation.reset_interrupt()  # an interrupt of an earlier turn does not apply

        def failed(exc: Exception) -> None:
            if isinstance(exc, HermesError):
                raise exc
            raise HermesError(
                f"context engine {engine.name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

        assert conversation.session is not None
        parent = conversation.session.id
        try:
            figures = self._compact(focus, failed)
        except Cancelled:  # the public answer of ``Agent.compress`` stays a HermesError
            raise HermesError("compression interrupted; nothing changed") from None
        assert figures is not None  # ``failed`` always raises
        if figures["session_id"] == parent:
            self.events.emit("status", text="nothing to compress: the engine kept every message")
        return figures

    # --- the engine's hooks ----------------------------------------------------------------

    def summarize(self, messages: list[dict[str, Any]], max_tokens: int | None) -> str:
        """``ContextEngine.summarize``: the compression model's answer to ``messages``.

        :raises Cancelled: the user interrupted (it passes through an engine's own ``except
            Exception``, so an interrupted summary is never taken for a failed one).
        """
        conversation = self.conversation
        if conversation.cancel_event.is_set():
            raise Cancelled(INTERRUPTED)
        response = conversation.side_request("compression", messages, max_tokens)
        content = response.message.get("content")
        if isinstance(content, list):
            return "\n".join(
                str(part.get("text") or "")
                for part in content
                if isinstance(part, Mapping) and part.get("type") in (None, "text", "output_text")
            )
        return content if isinstance(content, str) else ""

    def engine_status(self, text: str) -> None:
        """``ContextEngine.notify``: a status line from the engine."""
        self.events.emit("status", text=str(text))

    # --- the context window ----------------------------------------------------------------

    def sync_window(self) -> None:
        """Tell the engine the window of the model in use, when that model changed."""
        if self.engine is None:
            return
        model = self.conversation.model
        if model == self._window_model:
            return
        self._window_model = model
        window = self._window_overrides.get(model) or self._window(model)
        self.engine.set_context_window(window)

    def _learn_window(
        self, error: ProviderError, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> None:
        """After an overflow: the model's window is smaller than assumed. Use the limit the
        provider stated, else 90% of the refused request's estimated size, for this model from
        now on."""
        engine = self.engine
        model = self.conversation.model
        assert engine is not None
        refused = _estimate_tokens(messages) + len(json.dumps(tools, default=str)) // 4
        window = stated_window(str(error)) or int(refused * 0.9)
        current = engine.context_window
        if window <= 0 or (current and window >= current):
            return
        self._window_overrides[model] = window
        self._window_model = model
        engine.set_context_window(window)
        self.events.emit(
            "status", text=f"assuming a context window of {window:,} tokens for {model}"
        )

    # --- the one compaction sequence -------------------------------------------------------

    def _compact(
        self, focus: str | None, failed: Callable[[Exception], None]
    ) -> dict[str, Any] | None:
        """Compress, then commit unless the user interrupted meanwhile; the figures, or ``None``
        when the engine failed and ``failed(exc)`` returned instead of raising.

        :raises Cancelled: the user interrupted; nothing changed.
        """
        self.sync_window()
        self.pending = False
        try:
            shortened = self._compressed(focus)
        except Exception as exc:
            if self.conversation.cancel_event.is_set():  # an engine reported it its own way
                raise Cancelled(INTERRUPTED) from None
            failed(exc)
            return None
        if self.conversation.cancel_event.is_set():  # interrupted while the engine worked
            raise Cancelled(INTERRUPTED)
        return self._commit(shortened)

    def _compressed(self, focus: str | None) -> list[dict[str, Any]]:
        """The engine's shorter transcript, repaired and validated; nothing is changed yet."""
        engine = self.engine
        assert engine is not None
        # Memory needs no flush first: the memory toolset writes to disk before a call returns.
        before = self.conversation.messages
        result = engine.compress([dict(m) for m in before], self.last_prompt_tokens, focus)
        if not isinstance(result, list):
            raise HermesError(
                f"context engine {engine.name!r} returned {type(result).__name__}, "
                "not a list of messages"
            )
        shortened = [m for m in result if not (isinstance(m, dict) and m.get("role") == "system")]
        shortened = _keep_latest_request(before, shortened, self.request_content)
        shortened = transcript.repair(shortened)
        transcript.ensure_valid(shortened)
        return shortened

    def _commit(self, shortened: list[dict[str, Any]]) -> dict[str, Any]:
        """Continue in a child session holding ``shortened``; rebuild the system prompt once.
        A result equal to the transcript changes nothing (no child session)."""
        conversation = self.conversation
        before = conversation.messages
        parent = conversation.session
        assert parent is not None
        if shortened == before:
            tokens = _estimate_tokens(before)
            return {
                "session_id": parent.id,
                "parent_session_id": parent.parent_session_id,
                "messages_before": len(before),
                "messages_after": len(before),
                "tokens_before": tokens,
                "tokens_after": tokens,
            }
        now = time.time()
        stored = self._stored_session(parent.id)
        metadata = {**parent.metadata, **(stored.metadata if stored is not None else {})}
        for key in _SESSION_COUNTERS:
            metadata.pop(key, None)
        child = SessionInfo(
            id=new_id("session"),
            source=parent.source,
            model=conversation.model,
            provider=conversation.provider,
            parent_session_id=parent.id,
            started_at=max(now, parent.started_at),
            title=(stored.title if stored is not None else None) or parent.title,
            metadata=metadata,
            person=parent.person,
        )
        self.last_prompt_tokens = None  # reported for the transcript just replaced
        conversation.continue_in(child, shortened, metadata.get("system_message"), ended_at=now)
        figures = {
            "session_id": child.id,
            "parent_session_id": parent.id,
            "messages_before": len(before),
            "messages_after": len(conversation.messages),
            "tokens_before": _estimate_tokens(before),
            "tokens_after": _estimate_tokens(conversation.messages),
        }
        self.events.emit(
            "status",
            text=(
                f"context compressed: {figures['messages_before']} -> "
                f"{figures['messages_after']} messages, ~{figures['tokens_before']:,} -> "
                f"~{figures['tokens_after']:,} tokens; continuing in session {child.id}"
            ),
        )
        return figures

    def _stored_session(self, session_id: str) -> SessionInfo | None:
        try:
            return self.conversation.stored_session(session_id)
        except Exception:
            return None

    def _engine_failed(self, what: str, exc: Exception) -> None:
        engine = self.engine
        assert engine is not None
        log.warning("context engine %r failed in %s", engine.name, what, exc_info=exc)
        self.events.emit(
            "status",
            text=f"context engine {engine.name!r} failed ({type(exc).__name__}: {exc}); "
            "continuing without compressing",
        )


_SESSION_COUNTERS = (
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "estimated_cost_usd",
)
"""Metadata a store keeps per session (see ``SQLiteSessionStore``): never copied to a child."""


def _estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """About 4 characters a token, for the figures of a compaction."""
    chars = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif content is not None:
            chars += len(str(content))
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                chars += len(str(function.get("arguments") or "")) + 16
    return chars // 4 + 4 * len(messages)


def _keep_latest_request(
    before: list[dict[str, Any]], after: list[dict[str, Any]], request: Any = None
) -> list[dict[str, Any]]:
    """``after``, with the user's latest request in ``before`` put back if an engine dropped it.

    ``request`` is the content of the latest user turn when the agent knows it; otherwise the
    latest user message that is not marked :data:`~hermes_hookspecs.CONTEXT_SUMMARY_FLAG` (nothing
    but a summary) counts. A user message whose
    content ends with the request's content, or is the end of it (a summary an engine put in
    front of the request, in the same message, now or in an earlier compaction) keeps it.
    A dropped request goes back in front of the first message of ``after`` that came after it
    in ``before`` (so the tool calls that answer it follow it), or at the end.
    """
    index: int | None = None
    for i in range(len(before) - 1, -1, -1):
        message = before[i]
        if message.get("role") != "user" or message.get(CONTEXT_SUMMARY_FLAG):
            continue
        if request is None or _keeps(message, request):
            index = i
            break
    if index is None:
        return after
    original = before[index]
    if any(_keeps(message, original.get("content")) for message in after):
        return after
    later = before[index + 1 :]
    position = next(
        (i for i, message in enumerate(after) if any(message == m for m in later)), len(after)
    )
    return [*after[:position], dict(original), *after[position:]]


def _keeps(message: Any, content: Any) -> bool:
    """Whether ``message`` is a user message holding ``content``, or the end of it."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    kept = message.get("content")
    if kept == content:
        return True
    if isinstance(kept, str) and isinstance(content, str) and kept and content:
        return kept.endswith(content) or content.endswith(kept)
    if isinstance(kept, list) and isinstance(content, list) and kept and content:
        size = min(len(kept), len(content))
        return kept[-size:] == content[-size:]
    return False
