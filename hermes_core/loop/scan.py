"""One pass over a transcript that finds every way it breaks the invariants of
:mod:`hermes_core.loop.transcript`, and can copy (or strip to wire fields) each message on the
way, so that a valid transcript costs a single pass before each model call."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["VIA_FIELD", "inspect_calls", "scan", "wire_function"]

VIA_FIELD = "_via"
"""Internal field of a stored tool call made through a bridge tool (tool search): the bridge
call as the model wrote it (``{"name", "arguments"}``), which the wire shows in place of the
direct call the loop ran, so the history sent back holds the model's own bytes."""


def wire_function(call: dict[str, Any], name: str, arguments: str) -> dict[str, str]:
    """The ``function`` of ``call`` as sent: the bridge call it went through, if any."""
    via = call.get(VIA_FIELD)
    if type(via) is dict:
        via_name, via_arguments = via.get("name"), via.get("arguments")
        if type(via_name) is str and via_name and type(via_arguments) is str:
            return {"name": via_name, "arguments": via_arguments}
    return {"name": name, "arguments": arguments}


# --- validation -------------------------------------------------------------------------------


def scan(
    messages: list[dict[str, Any]],
    out: list[dict[str, Any]] | None = None,
    strip: bool = False,
    system_first: bool = True,
) -> Iterator[str]:
    """Yield the problems of ``messages`` in order.

    When ``out`` is given, each message is also appended to it (stripped or shallow-copied, and
    with ``""`` for the ``None`` content of a text-only assistant message), so a caller that
    stops at the first problem gets the copies of a valid transcript in one pass. With
    ``system_first`` false, a system message is a problem even at index 0.
    """
    scanner = _Scanner(out, strip)
    for index, message in enumerate(messages):
        if type(message) is not dict and not isinstance(message, dict):
            yield f"message {index}: not a dict"
            scanner.previous = None
            continue
        role = message.get("role")
        copy = scanner.copy(message, role) if out is not None else None
        if role == "tool":
            problems = scanner.tool(index, message)
        else:
            problems = scanner.close_batch() if scanner.pending else ()
            if role == "user":
                problems = [*problems, *scanner.user(index)]
            elif role == "assistant":
                problems = [*problems, *scanner.assistant(index, message, copy)]
            elif role == "system":
                scanner.previous = "system"
                if index != 0 or not system_first:
                    problems = [
                        *problems,
                        f"message {index}: a system message is only allowed first",
                    ]
            else:
                scanner.previous = None
                problems = [*problems, f"message {index}: unknown role {role!r}"]
        if problems:
            yield from problems
    if scanner.pending:
        yield from scanner.close_batch()


_NO_PROBLEMS: tuple[str, ...] = ()


class _Scanner:
    """The state of :func:`scan` between messages.

    This runs before every model call, so the common case (results arriving in call order) is
    checked with one comparison, and the book-keeping for diagnostics happens only on a miss.
    """

    __slots__ = (
        "out",
        "strip",
        "pending",
        "answered",
        "stray",
        "last_position",
        "opened_at",
        "previous",
        "started",
    )

    def __init__(self, out: list[dict[str, Any]] | None, strip: bool) -> None:
        self.out = out
        self.strip = strip
        self.pending: list[str] = []  # ids of the calls whose results may come next, in order
        self.answered = 0  # how many of ``pending`` were answered in order
        self.stray: set[str] | None = None  # ids answered once the order was broken
        self.last_position = -1
        self.opened_at = 0
        self.previous: str | None = None
        self.started = False

    def copy(self, message: dict[str, Any], role: Any) -> dict[str, Any]:
        """Append the copy of ``message`` to ``out`` (stripped, or shallow) and return it."""
        assert self.out is not None
        if self.strip:
            copy: dict[str, Any] = {}
            if "role" in message:
                copy["role"] = role
            if "content" in message:
                copy["content"] = message["content"]
            if "tool_calls" in message:
                copy["tool_calls"] = message["tool_calls"]
            if "tool_call_id" in message:
                copy["tool_call_id"] = message["tool_call_id"]
            if "name" in message:
                copy["name"] = message["name"]
        else:
            copy = dict(message)
        self.out.append(copy)
        return copy

    def tool(self, index: int, message: dict[str, Any]) -> Sequence[str]:
        """The problems of a tool result at ``index``."""
        call_id = message.get("tool_call_id")
        self.previous = "tool"
        pending, answered = self.pending, self.answered
        if self.stray is None and answered < len(pending) and call_id == pending[answered]:
            self.answered = answered + 1
            return _NO_PROBLEMS
        problems = []
        if not self.started:
            self.started = True
            problems.append(
                f"message {index}: the first message after the system prompt is tool, not user"
            )
        if not isinstance(call_id, str) or not call_id:
            problems.append(f"message {index}: tool message without tool_call_id")
        elif call_id not in pending:
            problems.append(
                f"message {index}: orphan tool result {call_id!r}: it does not follow the "
                "assistant message that made the call"
            )
        else:
            problems.extend(self._out_of_order(index, call_id))
        return problems

    def _out_of_order(self, index: int, call_id: str) -> Sequence[str]:
        """The problems of a result of the open batch that does not come next in call order."""
        if self.stray is None:
            self.stray = set(self.pending[: self.answered])
            self.last_position = self.answered - 1
        if call_id in self.stray:
            return [f"message {index}: tool call {call_id!r} is answered twice"]
        position = self.pending.index(call_id)
        problems = []
        if position < self.last_position:
            problems.append(f"message {index}: tool result {call_id!r} is out of call order")
        self.last_position = position
        self.stray.add(call_id)
        return problems

    def close_batch(self) -> Sequence[str]:
        """The problems of the open batch of tool calls, which ends here: calls never answered."""
        if self.stray is None:
            missing = self.pending[self.answered :]
        else:
            missing = [call_id for call_id in self.pending if call_id not in self.stray]
        self.pending = []
        return [
            f"message {self.opened_at}: tool call {call_id!r} is never answered"
            for call_id in missing
        ]

    def user(self, index: int) -> Sequence[str]:
        """The problems of a user message at ``index``."""
        repeated = self.previous == "user"
        self.started = True
        self.previous = "user"
        return [f"message {index}: two user messages in a row"] if repeated else _NO_PROBLEMS

    def assistant(
        self, index: int, message: dict[str, Any], copy: dict[str, Any] | None
    ) -> Sequence[str]:
        """The problems of an assistant message at ``index`` (whose copy is ``copy``)."""
        problems = []
        if not self.started:
            self.started = True
            problems.append(
                f"message {index}: the first message after the system prompt is assistant, not user"
            )
        if self.previous == "assistant" or self.previous == "calls":
            problems.append(f"message {index}: two assistant messages in a row")
        calls = message.get("tool_calls")
        if calls is None:
            if copy is not None:
                # Not a problem in the history, but providers want text here.
                if copy.get("content") is None:
                    copy["content"] = ""
                if self.strip and "tool_calls" in copy:
                    del copy["tool_calls"]
            self.previous = "assistant"
            return problems
        wire_calls: list[dict[str, Any]] | None = [] if self.strip and copy is not None else None
        self.pending, defect = inspect_calls(calls, wire_calls)
        if defect is not None:
            problems.append(f"message {index}: malformed tool_calls: {defect}")
        elif wire_calls is not None:
            assert copy is not None
            copy["tool_calls"] = wire_calls
        self.answered = 0
        self.stray = None
        self.opened_at = index
        self.previous = "calls" if self.pending else "assistant"
        return problems


def inspect_calls(
    calls: Any, wire_calls: list[dict[str, Any]] | None
) -> tuple[list[str], str | None]:
    """Return the ids of the usable calls in order, and the first defect (or ``None``).

    When ``wire_calls`` is given and there is no defect, it receives the stripped calls.
    """
    if type(calls) is list:
        ids: list[str] = []
        for call in calls:
            if type(call) is not dict:
                break
            call_id = call.get("id")
            function = call.get("function")
            if type(call_id) is not str or not call_id or call.get("type") != "function":
                break
            if type(function) is not dict:
                break
            name = function.get("name")
            arguments = function.get("arguments")
            if type(name) is not str or not name or type(arguments) is not str or call_id in ids:
                break
            ids.append(call_id)
            if wire_calls is not None:
                wire_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": wire_function(call, name, arguments),
                    }
                )
        else:
            if ids:
                return ids, None
    if wire_calls is not None:
        wire_calls.clear()
    return _diagnose_calls(calls, wire_calls)


def _diagnose_calls(
    calls: Any, wire_calls: list[dict[str, Any]] | None
) -> tuple[list[str], str | None]:
    """The thorough version of :func:`inspect_calls`, for lists its fast path gave up on."""
    if not isinstance(calls, list) or not calls:
        return [], "expected a non-empty list"
    ids: list[str] = []
    defect: str | None = None
    for position, call in enumerate(calls):
        if not isinstance(call, dict):
            defect = defect or f"call {position} is not an object"
            continue
        call_id = call.get("id")
        function = call.get("function")
        if not isinstance(call_id, str) or not call_id:
            problem = "has no id"
        elif call_id in ids:
            problem = f"repeats id {call_id!r}"
        elif call.get("type") != "function":
            problem = "has a type other than 'function'"
        elif (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not function["name"]
        ):
            problem = "has no function name"
        elif not isinstance(function.get("arguments"), str):
            problem = "has arguments that are not a JSON string"
        else:
            ids.append(call_id)
            if wire_calls is not None:
                wire_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": wire_function(call, function["name"], function["arguments"]),
                    }
                )
            continue
        defect = defect or f"call {position} {problem}"
        if isinstance(call_id, str) and call_id and call_id not in ids:
            # Still expect its result, so one defect does not also report orphans.
            ids.append(call_id)
    return ids, defect
