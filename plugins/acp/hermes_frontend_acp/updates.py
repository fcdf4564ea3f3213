"""The agent's progress events of one turn as ACP ``session/update`` payloads."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    FileEditToolCallContent,
    PlanEntry,
    PlanEntryStatus,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)

from .editor_files import written_text
from .tools import (
    diff_of,
    kind_of,
    locations_of,
    parse_arguments,
    text_content,
    title_of,
)

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | UsageUpdate
)
"""One ``session/update`` this module makes."""

EDITS = frozenset({"write_file", "patch"})
"""The tools whose calls show the whole file before and after as a diff."""

_MAX_BEFORE_BYTES = 1024 * 1024
"""A file edited by a call is read for its diff only up to this size."""


def message_chunk(text: str) -> AgentMessageChunk:
    """A piece of the answer."""
    return AgentMessageChunk(
        session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text)
    )


def thought_chunk(text: str) -> AgentThoughtChunk:
    """A piece of the model's reasoning."""
    return AgentThoughtChunk(
        session_update="agent_thought_chunk", content=TextContentBlock(type="text", text=text)
    )


_PLAN_MARKS: dict[str, PlanEntryStatus | None] = {
    "[ ]": "pending",
    "[>]": "in_progress",
    "[x]": "completed",
    "[-]": None,  # cancelled: not part of the plan any more
}
"""The todo tool's marks (its rendered list, one ``MARK id: text`` line per item)."""


def plan_of(result: Any) -> AgentPlanUpdate | None:
    """The plan the todo tool's answer shows (the whole list after each call), or ``None``
    when the answer is not a list."""
    if not isinstance(result, str) or not result.startswith(("Todo list", "Todo list is empty")):
        return None
    entries = []
    for line in result.splitlines()[1:]:
        mark, rest = line[:3], line[4:]
        if mark not in _PLAN_MARKS or ": " not in rest:
            continue
        status = _PLAN_MARKS[mark]
        if status is not None:
            content = rest.split(": ", 1)[1]
            entries.append(PlanEntry(content=content, priority="medium", status=status))
    return AgentPlanUpdate(session_update="plan", entries=entries)


def usage_of(step: Mapping[str, Any]) -> UsageUpdate | None:
    """How full the context is after a model call (its input and output tokens, out of the
    model's window), when the step says."""
    window = step.get("context_window")
    used = step.get("input_tokens")
    if not isinstance(window, int) or not isinstance(used, int) or window <= 0:
        return None
    output = step.get("output_tokens")
    used += output if isinstance(output, int) else 0
    return UsageUpdate(session_update="usage_update", used=max(0, used), size=window)


def _read_before(path: str) -> str | None:
    try:
        if os.path.getsize(path) > _MAX_BEFORE_BYTES:
            return None
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


class TurnUpdates:
    """Turns the events of one turn into updates; remembers the calls under way so that an
    approval request can name the call it is about."""

    def __init__(self, cwd: str, session_id: str = "") -> None:
        self.cwd = cwd
        self.session_id = session_id
        self.open_calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._diffs: dict[str, list[FileEditToolCallContent]] = {}
        self._before: dict[str, tuple[str, str | None]] = {}
        self._streamed_reasoning = False

    def call_of(self, tool: str) -> tuple[str, dict[str, Any]] | None:
        """The newest call under way of ``tool`` (its id and arguments), if any."""
        for call_id, (name, arguments) in reversed(self.open_calls.items()):
            if name == tool or not tool:
                return call_id, arguments
        return None

    def translate(self, name: str, data: Mapping[str, Any]) -> list[Update]:
        """The updates event ``name`` with ``data`` makes (none for most events)."""
        if name == "reasoning":
            text = str(data.get("text") or "")
            if data.get("delta"):
                self._streamed_reasoning = True
            elif self._streamed_reasoning:  # the whole text again after its deltas
                return []
            return [thought_chunk(text)] if text else []
        if name == "step":
            self._streamed_reasoning = False
            usage = usage_of(data)
            return [usage] if usage is not None else []
        if name == "tool_start":
            return [self._start(data)]
        if name == "tool_end":
            updates: list[Update] = [self._end(data)]
            plan = plan_of(data.get("result")) if data.get("name") == "todo" else None
            if plan is not None:
                updates.append(plan)
            return updates
        return []

    def _start(self, data: Mapping[str, Any]) -> ToolCallStart:
        call_id = str(data.get("call_id") or "")
        tool = str(data.get("name") or "")
        arguments = parse_arguments(data.get("arguments"))
        self.open_calls[call_id] = (tool, arguments)
        before = None
        if tool in EDITS:
            located = locations_of(tool, arguments, self.cwd)
            if located:
                before = _read_before(located[0].path)
                self._before[call_id] = (located[0].path, before)
        diff = diff_of(tool, arguments, self.cwd, before)
        if diff:
            self._diffs[call_id] = diff
        return ToolCallStart(
            session_update="tool_call",
            tool_call_id=call_id,
            title=title_of(tool, arguments, self.cwd),
            kind=kind_of(tool),
            status="in_progress",
            locations=locations_of(tool, arguments, self.cwd) or None,
            content=list(diff) or None,
            raw_input=arguments,
        )

    def _end(self, data: Mapping[str, Any]) -> ToolCallProgress:
        call_id = str(data.get("call_id") or "")
        self.open_calls.pop(call_id, None)
        diff = self._diffs.pop(call_id, [])
        result = data.get("result")
        failed = bool(data.get("is_error"))
        edited = self._before.pop(call_id, None)
        if edited is not None and not failed:  # the whole file before and after the edit
            path, before = edited
            after = written_text(self.session_id, path)  # the editor may not have saved it
            if after is None:
                after = _read_before(path)
            if after is not None and after != before:
                diff = [
                    FileEditToolCallContent(type="diff", path=path, old_text=before, new_text=after)
                ]
        content: list[Any] = [] if diff and not failed else list(text_content(result))
        return ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=call_id,
            status="failed" if failed else "completed",
            content=(list(diff) + content) if diff else (content or None),
            raw_output={"result": result} if result is not None else None,
        )
