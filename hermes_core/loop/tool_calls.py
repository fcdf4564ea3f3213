"""The tool calls of a model response as the loop handles them: normalized so they can be
stored, answered and sent back; parsed into :class:`~hermes_hookspecs.ToolCall`; and the
answer to each (:class:`CallOutcome`), its text made from what the handler returned."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import (
    TOOL_NAME_RE,
    HermesError,
    ModelResponse,
    ToolCall,
    ToolContext,
    ToolOutput,
    ToolResult,
)

from .events import Events
from .images import IMAGES_FIELD
from .text import clean_value
from .transcript import INTERRUPTED_RESULT, dangling_calls

PLACEHOLDER_NAME = "invalid_tool_name"
"""The name stored and echoed to the model for a call whose tool name was empty or malformed
(providers refuse such names in the history); the call is answered with an explanation."""
REQUESTED_NAME = "_requested_name"
"""Internal field of a stored tool call: the unusable name the model sent."""


@dataclass
class CallOutcome:
    """The answer to one tool call: what goes into the transcript, and whether the model's call
    itself was malformed (bad JSON, unknown tool, schema violation)."""

    call: ToolCall
    result: ToolResult
    invalid: bool = False

    def message(self) -> dict[str, Any]:
        """The ``tool`` message for the transcript; the images of the result, if any, in the
        internal field ``_images`` (paths), which :func:`hermes_core.loop.images.inline` turns
        into an image message when the request is sent."""
        message: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": self.call.id,
            "content": self.result.content,
            "tool_name": self.call.name,
        }
        if self.result.images and not self.result.is_error:
            message[IMAGES_FIELD] = list(self.result.images)
        return message


def with_images(output: ToolOutput, ctx: ToolContext) -> ToolResult:
    """The result of a handler that returned text with images: each image copied into the
    home's ``images/`` folder; one that cannot be used is named in a note."""
    from .images import attach, path_of

    text = result_text(output.text)
    kept: list[str] = []
    notes: list[str] = []
    for image in output.images:
        try:
            kept.append(str(path_of(attach(image, ctx.hermes_home, label=""))))
        except HermesError as exc:
            notes.append(str(exc))
    if notes:
        text += f"\n[{len(notes)} image(s) could not be attached: {'; '.join(notes)}]"
    return ToolResult(text, images=kept)


def result_text(value: Any) -> str:
    """Turn a handler's return value into the text the model sees."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def cap(text: str, limit: int) -> tuple[str, bool]:
    """Cut ``text`` to ``limit`` characters with a visible marker saying how much was dropped."""
    if len(text) <= limit:
        return text, False
    marker = f"\n\n[... result truncated: showing {{}} of {len(text)} characters ...]"
    keep = max(0, limit - len(marker.format(limit)))
    return text[:keep] + marker.format(keep), True


def parse_call(raw: dict[str, Any], index: int) -> tuple[ToolCall, str | None]:
    """Parse one OpenAI-format tool call; the second item explains malformed arguments."""
    function = raw.get("function") or {}
    requested = raw.get(REQUESTED_NAME)
    name = str(requested if requested is not None else function.get("name") or "")
    arguments = function.get("arguments")
    call = ToolCall(
        id=str(raw.get("id") or f"call_{index}"),
        name=name,
        arguments={},
        raw_arguments=arguments if isinstance(arguments, str) else "",
        index=index,
    )
    if isinstance(arguments, dict):
        call.arguments = clean_value(arguments)
        call.raw_arguments = json.dumps(arguments)
        return call, None
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return call, None
    try:
        parsed = json.loads(arguments)
    except (TypeError, ValueError) as exc:
        return call, (
            f"Error: the arguments of tool '{name}' are not valid JSON ({exc}). "
            "Send the arguments as one JSON object that matches the tool's schema."
        )
    if not isinstance(parsed, dict):
        return call, (
            f"Error: the arguments of tool '{name}' must be a JSON object, "
            f"got {type(parsed).__name__}."
        )
    call.arguments = clean_value(parsed)  # a JSON escape can spell a lone surrogate
    return call, None


def normalize_calls(raw_calls: Any) -> list[dict[str, Any]]:
    """The tool calls of a model response made safe to store and send back: each a dict with
    a unique ``id``, ``type`` ``function``, a valid name (an empty or malformed one is replaced
    by :data:`PLACEHOLDER_NAME` and kept in :data:`REQUESTED_NAME`), arguments as a string,
    and encodable text. Every call is kept, so each is answered and the model learns why."""
    if not isinstance(raw_calls, list):
        return []
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for raw in raw_calls:
        call = clean_value(raw) if isinstance(raw, dict) else {}
        function = call.get("function")
        function = dict(function) if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        if arguments is None:
            function["arguments"] = "{}"
        elif not isinstance(arguments, str):
            function["arguments"] = json.dumps(arguments, ensure_ascii=False, default=str)
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        seen.add(call_id)
        fixed = {**call, "id": call_id, "type": "function", "function": function}
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
            fixed[REQUESTED_NAME] = name if isinstance(name, str) else ""
            function["name"] = PLACEHOLDER_NAME
        out.append(fixed)
    return out


def assistant_message(response: ModelResponse, events: Events) -> dict[str, Any]:
    """The model's message as it enters the transcript: encodable text, and tool calls that
    can be stored, answered and sent back (see :func:`normalize_calls`); its reasoning, if
    any, goes to ``events``."""
    message = dict(clean_value(response.message))
    message["role"] = "assistant"
    message.setdefault("content", None)
    if message.get("tool_calls"):
        message["tool_calls"] = normalize_calls(message["tool_calls"])
    if not message.get("tool_calls"):
        message.pop("tool_calls", None)
    message["finish_reason"] = response.finish_reason
    if message.get("reasoning"):
        events.emit("reasoning", text=message["reasoning"])
    return message


def dangling_answers(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results that answer the calls a process killed during a tool batch left without
    one (:func:`~hermes_core.loop.transcript.dangling_calls`), in call order; ``[]`` when there
    are none."""
    answers = []
    for call in dangling_calls(messages):
        function = call.get("function") or {}
        answers.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": INTERRUPTED_RESULT,
                "tool_name": call.get(REQUESTED_NAME, function.get("name")),
            }
        )
    return answers
