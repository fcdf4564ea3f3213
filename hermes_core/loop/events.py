"""Progress events the agent emits, and the callbacks that receive them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("hermes.events")

EVENTS: tuple[str, ...] = (
    "tool_start",  # {call_id, name, arguments}
    "tool_end",  # {call_id, name, duration, is_error, result}
    "tool_generation",  # {index, id, name}: the model started writing a tool call (streaming)
    "thinking",  # {active}: a model call started (True) or ended (False)
    "reasoning",  # {text}: reasoning text from the model
    "text_delta",  # {text}: streamed answer text
    "step",  # {api_calls, finish_reason, tool_calls}: one iteration completed
    "status",  # {text}: state changes and warnings worth showing
)


@dataclass(frozen=True)
class Event:
    """One thing that happened while the agent worked."""

    name: str
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[Event], None]


class Events:
    """Fans events out to an optional sink and the seed-style named callbacks.

    A callback that raises is logged and ignored: a display problem must not stop the agent.
    """

    def __init__(
        self,
        sink: EventSink | None = None,
        *,
        tool_progress: Callable[[str, dict[str, Any]], None] | None = None,
        thinking: Callable[[bool], None] | None = None,
        reasoning: Callable[[str], None] | None = None,
        step: Callable[[dict[str, Any]], None] | None = None,
        stream_delta: Callable[[str], None] | None = None,
        tool_generation: Callable[[str], None] | None = None,
        status: Callable[[str], None] | None = None,
    ) -> None:
        self.sink = sink
        self._named: dict[str, Callable[[dict[str, Any]], None]] = {}
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
