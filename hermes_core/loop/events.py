"""Progress events the agent emits, and the callbacks that receive them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .approvals import ApprovalCallback

log = logging.getLogger("hermes.events")

EVENTS: tuple[str, ...] = (
    "tool_start",  # {call_id, name, arguments}
    "tool_end",  # {call_id, name, duration, is_error, result}
    "tool_generation",  # {index, id, name}: the model started writing a tool call (streaming)
    "thinking",  # {active}: a model call started (True) or ended (False)
    "reasoning",  # {text}: reasoning text from the model
    "text_delta",  # {text}: streamed answer text
    # {api_calls, finish_reason, tool_calls, input_tokens, output_tokens, context_window}: one
    # iteration completed (the tokens of its model call; the window of the model that answered)
    "step",
    "status",  # {text}: state changes and warnings worth showing
)


@dataclass(frozen=True)
class Event:
    """One thing that happened while the agent worked."""

    name: str
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[Event], None]
ClarifyCallback = Callable[[str, Sequence[str] | None], str]
"""Asks a person the clarify tool's question (with its choices, if any) and returns the answer."""


@dataclass(frozen=True)
class Callbacks:
    """How a user interface follows an agent and answers it; every one is optional.

    :param events: receives every :class:`Event`.
    :param tool_progress: ``("start" | "end", data)`` around each tool call.
    :param thinking: ``True`` when a model call starts, ``False`` when it ends.
    :param reasoning: the model's reasoning text.
    :param step: the figures of each completed iteration.
    :param stream_delta: the answer's text as it streams (asking for it turns streaming on).
    :param tool_generation: the name of a tool call the model started writing.
    :param status: state changes and warnings worth showing.
    :param clarify: answers the clarify tool; without it the model is told no one can answer.
    :param approval: asks a person to approve a dangerous action; without it, what no approval
        plugin decides is denied.
    """

    events: EventSink | None = None
    tool_progress: Callable[[str, dict[str, Any]], None] | None = None
    thinking: Callable[[bool], None] | None = None
    reasoning: Callable[[str], None] | None = None
    step: Callable[[dict[str, Any]], None] | None = None
    stream_delta: Callable[[str], None] | None = None
    tool_generation: Callable[[str], None] | None = None
    status: Callable[[str], None] | None = None
    clarify: ClarifyCallback | None = None
    approval: ApprovalCallback | None = None


class Events:
    """Fans events out to the user interface's sink and its named callbacks.

    A callback that raises is logged and ignored: a display problem must not stop the agent.
    """

    def __init__(self, callbacks: Callbacks | None = None) -> None:
        callbacks = callbacks or Callbacks()
        self.sink = callbacks.events
        self._named: dict[str, Callable[[dict[str, Any]], None]] = {}
        tool_progress, thinking, reasoning = (
            callbacks.tool_progress,
            callbacks.thinking,
            callbacks.reasoning,
        )
        step, stream_delta, tool_generation, status = (
            callbacks.step,
            callbacks.stream_delta,
            callbacks.tool_generation,
            callbacks.status,
        )
        if tool_progress:
            self._named["tool_start"] = lambda d: tool_progress("start", d)
            self._named["tool_end"] = lambda d: tool_progress("end", d)
        if thinking:
            self._named["thinking"] = lambda d: thinking(bool(d.get("active")))
        if reasoning:
            self._named["reasoning"] = lambda d: reasoning(d.get("text", ""))
        if step:
            self._named["step"] = step
        if stream_delta:
            self._named["text_delta"] = lambda d: stream_delta(d.get("text", ""))
        if tool_generation:
            self._named["tool_generation"] = lambda d: tool_generation(d.get("name", ""))
        if status:
            self._named["status"] = lambda d: status(d.get("text", ""))

    @property
    def streaming(self) -> bool:
        """Whether anyone listens to streamed text."""
        return self.sink is not None or "text_delta" in self._named

    def emit(self, name: str, /, **data: Any) -> None:
        """Deliver event ``name`` with ``data`` to every listener."""
        named = self._named.get(name)
        if named is None and self.sink is None:
            return
        try:
            if named is not None:
                named(data)
            if self.sink is not None:
                self.sink(Event(name, data))
        except Exception:
            log.warning("event callback for %r failed", name, exc_info=True)
