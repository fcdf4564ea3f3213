"""The script of the fake LLM server and what it records: the steps it answers with (an
answer, tool calls, an error, a hang), how each is read from a ``Turn``, a mapping or a
``ProviderError``, the requests it records, and the helpers the wire formats share.

Standard library only: the SDKs it is tested with are never imported here.
"""

from __future__ import annotations

import json as _json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hermes_hookspecs import ProviderError

from ..scripted import Call, Turn

WIRES = ("chat_completions", "codex_responses", "anthropic_messages")
"""The ``wire`` of a recorded model call."""

DEFAULT_CHUNKS = 4
"""Pieces the text, the reasoning and each tool call's arguments are streamed in by default."""

DEFAULT_MODEL = "fake-model"

_TURN_KEYS = frozenset(
    {
        "text",
        "calls",
        "reasoning",
        "signature",
        "usage",
        "finish_reason",
        "chunks",
        "chunk_delay",
        "delay",
        "model",
        "headers",
        "break_stream_after",
        "hang_after",
    }
)
_CALL_KEYS = frozenset({"name", "arguments", "id"})
_USAGE_KEYS = frozenset(
    {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"}
)
_ERROR_KEYS = frozenset({"status", "message", "type", "code", "param", "retry_after", "headers"})
_KIND_STATUS = {
    "rate_limit": 429,
    "billing": 402,
    "overloaded": 529,
    "server": 500,
    "timeout": 408,
    "auth": 401,
    "model_not_found": 404,
    "context_overflow": 400,
    "bad_request": 400,
    "other": 500,
}


# --- recorded requests ---------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One HTTP request the fake server received, exactly as it arrived.

    :param method: ``POST``, ``GET``, ...
    :param path: the request target as sent (path and query), e.g. ``/v1/chat/completions``.
    :param headers: header names in lower case; repeated headers joined with ``", "``.
    :param body: the raw body bytes.
    :param json: the parsed body, or ``None`` when it is not JSON.
    :param wire: ``chat_completions``, ``codex_responses`` or ``anthropic_messages`` for a model
        call; ``None`` for anything else (``GET /v1/models``, unknown paths).
    :param number: for a model call, which one it was (1, 2, ...); the step it consumed.
    :param received_at: ``time.time()`` when the request's body had arrived.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None
    wire: str | None = None
    number: int | None = None
    received_at: float = field(default_factory=time.time)

    @property
    def stream(self) -> bool:
        """Whether the body asked for a streamed answer (``"stream": true``)."""
        return isinstance(self.json, dict) and self.json.get("stream") is True

    @property
    def model(self) -> str | None:
        """The ``model`` of the body, if any."""
        return self.json.get("model") if isinstance(self.json, dict) else None


# --- steps ---------------------------------------------------------------------------------------


@dataclass
class ToolCallStep:
    """A tool call to answer with; ``arguments`` is the JSON text the "model" wrote."""

    name: str
    arguments: str
    id: str | None = None

    def input(self) -> Any:
        """The arguments as an object, or the raw text when it is not valid JSON."""
        try:
            return _json.loads(self.arguments) if self.arguments else {}
        except ValueError:
            return self.arguments


@dataclass
class Answer:
    """A normalized answer step (what a :class:`Turn`, a ``str`` or a dict step becomes)."""

    text: str | None = None
    calls: list[ToolCallStep] = field(default_factory=list)
    reasoning: str | None = None
    signature: str | None = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    chunks: int = DEFAULT_CHUNKS
    chunk_delay: float = 0.0
    delay: float = 0.0
    model: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    break_stream_after: int | None = None
    hang_after: int | None = None

    def pieces(self, value: str | None) -> list[str]:
        """``value`` cut in ``chunks`` pieces of about the same size (fewer when it is short)."""
        if not value:
            return []
        count = max(1, min(self.chunks, len(value)))
        size, extra = divmod(len(value), count)
        out, start = [], 0
        for i in range(count):
            end = start + size + (1 if i < extra else 0)
            out.append(value[start:end])
            start = end
        return out


@dataclass
class ErrorStep:
    """An HTTP error answered in the error format of the endpoint."""

    status: int
    message: str | None = None
    type: str | None = None
    code: str | None = None
    param: str | None = None
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False  # a dropped connection (ProviderError of kind "connection")


@dataclass
class HangStep:
    """Never answer: wait until the client disconnects or the server stops."""

    delay: float = 0.0


Normalized = Answer | ErrorStep | HangStep


def _number(value: Any, name: str, *, integer: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"fake-llm step: {name!r} must be a number >= 0, not {value!r}")
    if integer and not isinstance(value, int):
        raise ValueError(f"fake-llm step: {name!r} must be an integer, not {value!r}")
    return value


def _headers(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(f"fake-llm step: 'headers' must be an object, not {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _call(value: Any) -> ToolCallStep:
    if isinstance(value, Call):
        name, arguments, call_id = value.name, value.arguments, value.id
    elif isinstance(value, Mapping):
        unknown = set(value) - _CALL_KEYS
        if unknown or "name" not in value:
            raise ValueError(
                f"fake-llm step: a call needs 'name' and takes 'arguments' and 'id'; got {value!r}"
            )
        name, arguments, call_id = value["name"], value.get("arguments", {}), value.get("id")
    else:
        raise ValueError(f"fake-llm step: a call is a Call or an object, not {value!r}")
    if arguments is None:
        arguments = {}
    raw = arguments if isinstance(arguments, str) else _json.dumps(arguments, ensure_ascii=False)
    return ToolCallStep(str(name), raw, None if call_id is None else str(call_id))


def _usage(value: Any) -> dict[str, int] | None:
    if value is None:
        return None
    if hasattr(value, "as_dict"):
        value = value.as_dict()
    if not isinstance(value, Mapping) or set(value) - _USAGE_KEYS:
        raise ValueError(
            f"fake-llm step: 'usage' takes {', '.join(sorted(_USAGE_KEYS))}; got {value!r}"
        )
    usage = dict.fromkeys(_USAGE_KEYS, 0)
    for key, count in value.items():
        usage[key] = int(_number(count, f"usage.{key}", integer=True))
    return usage


def _answer_from_dict(step: Mapping[str, Any]) -> Answer:
    unknown = set(step) - _TURN_KEYS
    if unknown:
        raise ValueError(
            f"fake-llm step: unknown key(s) {', '.join(sorted(unknown))}; a turn takes "
            f"{', '.join(sorted(_TURN_KEYS))} (or use 'error' or 'hang')"
        )
    text = step.get("text")
    reasoning = step.get("reasoning")
    for key, value in (("text", text), ("reasoning", reasoning), ("model", step.get("model"))):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"fake-llm step: {key!r} must be a string, not {value!r}")
    calls = step.get("calls") or []
    if not isinstance(calls, list):
        raise ValueError(f"fake-llm step: 'calls' must be a list, not {calls!r}")
    chunks = _number(step.get("chunks", DEFAULT_CHUNKS), "chunks", integer=True)
    if chunks < 1:
        raise ValueError("fake-llm step: 'chunks' must be at least 1")
    answer = Answer(
        text=text,
        calls=[_call(c) for c in calls],
        reasoning=reasoning,
        signature=step.get("signature"),
        usage=_usage(step.get("usage")),
        finish_reason=step.get("finish_reason"),
        chunks=chunks,
        chunk_delay=_number(step.get("chunk_delay", 0.0), "chunk_delay"),
        delay=_number(step.get("delay", 0.0), "delay"),
        model=step.get("model"),
        headers=_headers(step.get("headers", {})),
    )
    for key in ("break_stream_after", "hang_after"):
        if step.get(key) is not None:
            setattr(answer, key, _number(step[key], key, integer=True))
    return answer


def _error_from_dict(step: Mapping[str, Any]) -> ErrorStep:
    if set(step) - {"error", "delay"}:
        raise ValueError(f"fake-llm step: an error step takes 'error' and 'delay'; got {step!r}")
    error = step["error"]
    if not isinstance(error, Mapping) or set(error) - _ERROR_KEYS or "status" not in error:
        raise ValueError(
            "fake-llm step: 'error' needs 'status' and takes "
            f"{', '.join(sorted(_ERROR_KEYS - {'status'}))}; got {error!r}"
        )
    status = error["status"]
    if not isinstance(status, int) or not 400 <= status <= 599:
        raise ValueError(f"fake-llm step: error status must be 400-599, not {status!r}")
    retry_after = error.get("retry_after")
    return ErrorStep(
        status=status,
        message=error.get("message"),
        type=error.get("type"),
        code=error.get("code"),
        param=error.get("param"),
        retry_after=None if retry_after is None else _number(retry_after, "retry_after"),
        headers=_headers(error.get("headers", {})),
        delay=_number(step.get("delay", 0.0), "delay"),
    )


def _from_provider_error(exc: ProviderError) -> ErrorStep:
    if exc.kind == "connection" and exc.status is None:
        return ErrorStep(status=500, message=str(exc), drop=True)
    status = exc.status or _KIND_STATUS.get(exc.kind, 500)
    return ErrorStep(status=status, message=str(exc) or None, retry_after=exc.retry_after)


def normalize_step(step: Any) -> Normalized:
    """Turn any accepted step form (except a callable) into an :class:`Answer`,
    :class:`ErrorStep` or :class:`HangStep`; a malformed step raises ``ValueError``."""
    if isinstance(step, (Answer, ErrorStep, HangStep)):
        return step
    if isinstance(step, str):
        return Answer(text=step)
    if isinstance(step, Turn):
        return Answer(
            text=step.text,
            calls=[_call(c) for c in step.calls],
            reasoning=step.reasoning,
            usage=_usage(step.usage),
            delay=_number(step.delay, "delay"),
            finish_reason=step.finish_reason,
        )
    if isinstance(step, ProviderError):
        return _from_provider_error(step)
    if isinstance(step, Mapping):
        if "error" in step:
            return _error_from_dict(step)
        if "hang" in step:
            if set(step) - {"hang", "delay"} or step["hang"] is not True:
                raise ValueError(f"fake-llm step: a hang step is {{'hang': true}}; got {step!r}")
            return HangStep(delay=_number(step.get("delay", 0.0), "delay"))
        return _answer_from_dict(step)
    raise TypeError(
        "fake-llm step: expected a Turn, a str, a dict, a ProviderError or a function of the "
        f"request; got {step!r}"
    )


def load_script(path: str | Path) -> list[Any]:
    """Read a ``--script`` file: a JSON list of steps (each checked now, so typos fail early)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        steps = _json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(steps, list):
        raise ValueError(f"{path}: a script is a JSON list of steps")
    for index, step in enumerate(steps, 1):
        try:
            normalize_step(step)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}: step {index}: {exc}") from None
    return steps


# --- what the wire modules are given ------------------------------------------------------------


@dataclass
class Exchange:
    """One model call being answered: the wire modules build their bodies from it."""

    number: int
    request: RecordedRequest
    model: str
    created: int

    @property
    def body(self) -> dict[str, Any]:
        """The request body (an empty dict when it was not a JSON object)."""
        return self.request.json if isinstance(self.request.json, dict) else {}

    def call_id(self, call: ToolCallStep, index: int, prefix: str) -> str:
        """The scripted id of ``call``, or a made-up one unique to this request."""
        return call.id or f"{prefix}{self.number}_{index}"


def resolve_answer(answer: Answer, request: RecordedRequest) -> Answer:
    """A copy with the usage estimated (about 4 characters a token) and the finish reason set."""
    usage = answer.usage
    if usage is None:
        written = len(answer.text or "") + sum(len(c.arguments) + len(c.name) for c in answer.calls)
        usage = dict.fromkeys(_USAGE_KEYS, 0)
        usage["input_tokens"] = max(1, len(request.body) // 4)
        usage["reasoning_tokens"] = len(answer.reasoning or "") // 4
        usage["output_tokens"] = max(1, written // 4) + usage["reasoning_tokens"]
    finish = answer.finish_reason or ("tool_calls" if answer.calls else "stop")
    return replace(answer, usage=usage, finish_reason=finish)


def wire_of(path: str) -> str | None:
    """The wire format a request path asks for, or ``None`` for a path no model API has."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "chat_completions"
    if path.endswith("/responses"):
        return "codex_responses"
    if path.endswith("/messages"):
        return "anthropic_messages"
    return None


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, as the providers send it."""
    return _json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sse_event(wire: str, name: str | None, data: Any) -> bytes:
    """One server-sent event in the framing of ``wire``."""
    payload = data if isinstance(data, str) else dumps(data).decode("utf-8")
    if wire == "chat_completions" or name is None:
        return f"data: {payload}\n\n".encode()
    return f"event: {name}\ndata: {payload}\n\n".encode()


def format_seconds(value: float) -> str:
    """Seconds as a header value: an integer when whole."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
