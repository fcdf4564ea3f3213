"""A scripted model for tests: a queue of turns, or a function of the request, that records
every request it receives."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_hookspecs import Cancelled, ModelRequest, ModelResponse, ProviderError, Usage


class ScriptExhausted(ProviderError):
    """The scripted model was asked for more turns than it was given."""


@dataclass
class Call:
    """A tool call in a scripted turn. ``arguments`` may be a dict or a raw (even broken) string."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass
class Turn:
    """One scripted model answer.

    :param text: the answer text (``None`` with tool calls and no text).
    :param calls: tool calls to make.
    :param reasoning: reasoning text to report.
    :param usage: token counts to report; by default about 4 characters per token.
    :param delay: seconds to wait first (interrupts cut the wait short).
    :param finish_reason: defaults to ``tool_calls`` or ``stop``.
    """

    text: str | None = None
    calls: list[Call] = field(default_factory=list)
    reasoning: str | None = None
    usage: Usage | None = None
    delay: float = 0.0
    finish_reason: str | None = None


Step = Turn | str | BaseException | Callable[[ModelRequest], Any]


def text(content: str, *, reasoning: str | None = None, delay: float = 0.0) -> Turn:
    """A turn that answers with ``content``."""
    return Turn(text=content, reasoning=reasoning, delay=delay)


def tool_call(
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    id: str | None = None,
    text: str | None = None,
    delay: float = 0.0,
) -> Turn:
    """A turn that calls one tool."""
    return Turn(
        text=text, calls=[Call(name, arguments if arguments is not None else {}, id)], delay=delay
    )


def tool_calls(
    *calls: Call | tuple[str, Mapping[str, Any] | str], text: str | None = None, delay: float = 0.0
) -> Turn:
    """A turn that calls several tools at once; each call is a :class:`Call` or ``(name, args)``."""
    made = [c if isinstance(c, Call) else Call(c[0], c[1]) for c in calls]
    return Turn(text=text, calls=made, delay=delay)


def _estimate_tokens(request: ModelRequest) -> int:
    size = sum(
        len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or []))
        for m in request.messages
    )
    return max(1, size // 4)


class ScriptedModel:
    """A model client that plays back a script (implements ``ModelClient``).

    Each step is a :class:`Turn`, a ``str`` (a text answer), an exception instance (raised, e.g.
    ``RateLimitError("slow down")``), or a function ``f(request)`` returning any of these or a
    ``ModelResponse``. ``ScriptedModel(fn=f)`` answers every request with ``f``.
    With ``request.stream`` set, text and reasoning are streamed in small deltas.
    """

    def __init__(self, *steps: Step, fn: Callable[[ModelRequest], Any] | None = None) -> None:
        self.steps: list[Step] = list(steps)
        self.fn = fn
        self.requests: list[ModelRequest] = []
        self._lock = threading.Lock()
        self._ids = 0

    def add(self, *steps: Step) -> ScriptedModel:
        """Append steps to the script."""
        self.steps.extend(steps)
        return self

    @property
    def last_request(self) -> ModelRequest:
        """The most recent request (fails the test when there was none)."""
        assert self.requests, "the scripted model received no request"
        return self.requests[-1]

    @property
    def remaining(self) -> int:
        """Steps not yet played."""
        return len(self.steps)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Record ``request`` and answer it with the next step of the script."""
        with self._lock:
            self.requests.append(_snapshot(request))
            if self.fn is not None:
                step: Any = self.fn
            elif self.steps:
                step = self.steps.pop(0)
            else:
                raise ScriptExhausted(
                    f"the scripted model has no turn left for request {len(self.requests)}"
                )
        if callable(step) and not isinstance(step, (Turn, BaseException)):
            step = step(request)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ModelResponse):
            return step
        if isinstance(step, str):
            step = Turn(text=step)
        if not isinstance(step, Turn):
            raise TypeError(f"unsupported scripted step: {step!r}")
        return self._play(step, request)

    def _play(self, turn: Turn, request: ModelRequest) -> ModelResponse:
        if turn.delay and request.cancel.wait(turn.delay):
            raise Cancelled("scripted: the model call was cancelled")
        if request.stream:
            for piece in _chunks(turn.reasoning or ""):
                request.emit("reasoning_delta", text=piece)
            for piece in _chunks(turn.text or ""):
                request.emit("text_delta", text=piece)
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.reasoning:
            message["reasoning"] = turn.reasoning
        if turn.calls:
            calls = []
            for index, call in enumerate(turn.calls):
                with self._lock:
                    self._ids += 1
                    call_id = call.id or f"call_{self._ids}"
                args = (
                    call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments)
                )
                if request.stream:
                    request.emit("tool_call_started", index=index, id=call_id, name=call.name)
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": args},
                    }
                )
            message["tool_calls"] = calls
        usage = turn.usage or Usage(
            input_tokens=_estimate_tokens(request), output_tokens=max(1, len(turn.text or "") // 4)
        )
        finish = turn.finish_reason or ("tool_calls" if turn.calls else "stop")
        return ModelResponse(
            message=message, finish_reason=finish, usage=usage, model=request.model
        )


def _chunks(value: str, size: int = 8) -> Iterable[str]:
    return (value[i : i + size] for i in range(0, len(value), size))


def _snapshot(request: ModelRequest) -> ModelRequest:
    """A copy whose message list later loop steps cannot change."""
    return dataclasses.replace(
        request, messages=[dict(m) for m in request.messages], options=dict(request.options)
    )


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass; return its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()
