"""The spans and metrics of the hook bus: ``invoke_agent hermes`` per turn (a subagent's nested
under the tool call that started it), ``chat {model}`` per model request, ``execute_tool
{tool}`` per tool call; ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``
per model request. Spans are parented explicitly (a turn moves between threads), found by the
ids the hooks carry: a turn's task id, a request object, a session and call id."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from hermes_hookspecs import (
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolContext,
    ToolResult,
    TurnResult,
)

from . import content
from . import conventions as c
from .trace_context import error_type, inject, server_attributes, turn_parent

_FINE_EXITS = frozenset({"completed", "max_turns"})
"""Exit reasons of a turn that are not errors."""


@dataclass
class _Turn:
    span: Span
    context: Context
    session_id: str
    capture: bool


@dataclass
class _Chat:
    turn: _Turn
    started: int
    model: str
    attributes: dict[str, Any]
    metric_attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Tool:
    span: Span
    task_id: str


class Tracing:
    """Turns hook calls into spans and metrics.

    :param tracer_provider: where spans go.
    :param meter_provider: where the metrics go (``None``: no metrics).
    :param capture: ``capture(config)``: whether a turn with that configuration records
        message and tool content.
    :param environ: the environment (``TRACEPARENT``, ``TRACESTATE``).
    :param version: this plugin's version (the instrumentation scope's).
    """

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider | None,
        capture: Callable[[Mapping[str, Any]], bool],
        environ: Mapping[str, str],
        version: str,
    ) -> None:
        self.tracer = tracer_provider.get_tracer(
            "hermes_tracing_otel", version, schema_url=c.SCHEMA_URL
        )
        self.capture = capture
        self.environ = environ
        self.token_usage: Any = None
        self.duration: Any = None
        if meter_provider is not None:
            meter = meter_provider.get_meter(
                "hermes_tracing_otel", version, schema_url=c.SCHEMA_URL
            )
            self.token_usage = meter.create_histogram(
                c.METRIC_TOKEN_USAGE,
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=list(c.TOKEN_BUCKETS),
            )
            self.duration = meter.create_histogram(
                c.METRIC_DURATION,
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=list(c.DURATION_BUCKETS),
            )
        self.turns: dict[str, _Turn] = {}
        self.chats: dict[int, _Chat] = {}
        self.tools: dict[tuple[str, str], _Tool] = {}
        self.children: dict[str, Context] = {}

    # --- turns -------------------------------------------------------------------------------

    def turn_start(
        self,
        session_id: str,
        task_id: str,
        source: str,
        model: str,
        provider: str,
        config: Mapping[str, Any],
        trace_context: Mapping[str, str],
    ) -> None:
        """Open the turn's ``invoke_agent`` span."""
        parent, links = turn_parent(
            self.children.pop(session_id, None), source, trace_context, self.environ
        )
        span = self.tracer.start_span(
            f"{c.OP_INVOKE_AGENT} {c.AGENT_NAME}",
            context=parent,
            kind=SpanKind.INTERNAL,
            links=links,
            attributes={
                c.OPERATION_NAME: c.OP_INVOKE_AGENT,
                c.AGENT_NAME_ATTR: c.AGENT_NAME,
                c.PROVIDER_NAME: c.provider_name(provider),
                c.CONVERSATION_ID: session_id,
                c.REQUEST_MODEL: model,
                c.TASK_ID: task_id,
                c.SOURCE: source,
            },
        )
        self.turns[task_id] = _Turn(
            span, trace.set_span_in_context(span, Context()), session_id, self.capture(config)
        )

    def turn_end(self, session_id: str, task_id: str, result: TurnResult) -> None:
        """Close the turn's span with its figures (and what it left open)."""
        turn = self.turns.pop(task_id, None)
        if turn is None:
            return
        for key, tool in list(self.tools.items()):
            if tool.task_id == task_id and self.tools.pop(key, None) is not None:
                tool.span.set_attribute(c.ERROR_TYPE, "cancelled")
                tool.span.set_status(Status(StatusCode.ERROR, "the turn ended before the tool"))
                tool.span.end()
        for request_key, chat in list(self.chats.items()):
            if chat.turn is turn and self.chats.pop(request_key, None) is not None:
                self._failed_chat(chat, "cancelled", "the turn ended before the answer")
        span = turn.span
        usage = result["usage"]
        span.set_attributes(
            {
                c.RESPONSE_MODEL: result["model"],
                c.PROVIDER: result["provider"],
                c.USAGE_INPUT_TOKENS: usage.get("input_tokens", 0),
                c.USAGE_OUTPUT_TOKENS: usage.get("output_tokens", 0),
                c.EXIT_REASON: result["exit_reason"],
                c.API_CALLS: result["api_calls"],
            }
        )
        for count, name in (
            ("cache_read_tokens", c.USAGE_CACHE_READ),
            ("cache_write_tokens", c.USAGE_CACHE_CREATION),
            ("reasoning_tokens", c.USAGE_REASONING),
        ):
            if usage.get(count):
                span.set_attribute(name, usage[count])
        if session_id != turn.session_id:  # continued in a child session by a compression
            span.set_attribute(c.PARENT_SESSION_ID, turn.session_id)
        if result["estimated_cost_usd"] is not None:
            span.set_attribute(c.COST_USD, float(result["estimated_cost_usd"]))
        if result["exit_reason"] not in _FINE_EXITS:
            span.set_attribute(c.ERROR_TYPE, result["exit_reason"])
            span.set_status(Status(StatusCode.ERROR, result["error"] or result["exit_reason"]))
        span.end()

    # --- model calls ---------------------------------------------------------------------------

    def request_start(self, request: ModelRequest) -> None:
        """Note the start of a request of a traced turn. Its ``chat`` span is made in one go
        when the outcome is known (with this start time): one attribute set, not two."""
        turn = self.turns.get(request.task_id)
        if turn is None:
            return
        provider = c.provider_name(request.provider, request.base_url)
        metric_attributes = {
            c.OPERATION_NAME: c.OP_CHAT,
            c.PROVIDER_NAME: provider,
            c.REQUEST_MODEL: request.model,
            **server_attributes(request.base_url),
        }
        attributes: dict[str, Any] = {**metric_attributes, c.CONVERSATION_ID: request.session_id}
        if request.provider and request.provider != provider:
            attributes[c.PROVIDER] = request.provider
        if request.max_tokens:
            attributes[c.REQUEST_MAX_TOKENS] = request.max_tokens
        if request.options:
            for key, name in (
                ("temperature", c.REQUEST_TEMPERATURE),
                ("top_p", c.REQUEST_TOP_P),
                ("seed", c.REQUEST_SEED),
            ):
                value = request.options.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    attributes[name] = value
        if turn.capture:
            attributes[c.INPUT_MESSAGES] = content.input_messages(request.messages)
            instructions = content.system_instructions(request.system_prompt)
            if instructions is not None:
                attributes[c.SYSTEM_INSTRUCTIONS] = instructions
            if request.tools:
                attributes[c.TOOL_DEFINITIONS] = content.tool_definitions(request.tools)
        self.chats[id(request)] = _Chat(
            turn, time.time_ns(), request.model, attributes, metric_attributes
        )

    def _chat_span(self, chat: _Chat) -> Span:
        return self.tracer.start_span(
            f"{c.OP_CHAT} {chat.model}",
            context=chat.turn.context,
            kind=SpanKind.CLIENT,
            attributes=chat.attributes,
            start_time=chat.started,
        )

    def request_end(self, response: ModelResponse, request: ModelRequest | None) -> None:
        """Make the request's ``chat`` span with the response, and record the metrics."""
        chat = self.chats.pop(id(request), None) if request is not None else None
        if chat is None:
            return
        usage = response.usage
        model = response.model or chat.model
        attributes = chat.attributes
        attributes[c.RESPONSE_MODEL] = model
        attributes[c.RESPONSE_FINISH_REASONS] = [response.finish_reason]
        attributes[c.USAGE_INPUT_TOKENS] = usage.input_tokens
        attributes[c.USAGE_OUTPUT_TOKENS] = usage.output_tokens
        # the provider-dependent counts only when there are some (most calls have none)
        if usage.cache_read_tokens:
            attributes[c.USAGE_CACHE_READ] = usage.cache_read_tokens
        if usage.cache_write_tokens:
            attributes[c.USAGE_CACHE_CREATION] = usage.cache_write_tokens
        if usage.reasoning_tokens:
            attributes[c.USAGE_REASONING] = usage.reasoning_tokens
        response_id = getattr(response.raw, "id", None)
        if isinstance(response_id, str) and response_id:
            attributes[c.RESPONSE_ID] = response_id
        if chat.turn.capture:
            attributes[c.OUTPUT_MESSAGES] = content.output_messages(
                response.message, response.finish_reason
            )
        ended = time.time_ns()
        self._chat_span(chat).end(ended)
        if self.duration is not None:
            measured = chat.metric_attributes
            measured[c.RESPONSE_MODEL] = model
            self.duration.record((ended - chat.started) / 1e9, measured)
            self.token_usage.record(usage.input_tokens, {**measured, c.TOKEN_TYPE: "input"})
            self.token_usage.record(usage.output_tokens, {**measured, c.TOKEN_TYPE: "output"})

    def request_failed(self, request: ModelRequest, error: BaseException) -> None:
        """Make the request's ``chat`` span as failed, and record its duration."""
        chat = self.chats.pop(id(request), None)
        if chat is not None:
            self._failed_chat(chat, error_type(error), str(error), getattr(error, "status", None))

    def _failed_chat(self, chat: _Chat, kind: str, description: str, status: object = None) -> None:
        chat.attributes[c.ERROR_TYPE] = kind
        if isinstance(status, int):
            chat.attributes[c.HTTP_STATUS] = status
        ended = time.time_ns()
        span = self._chat_span(chat)
        span.set_status(Status(StatusCode.ERROR, description[:500]))
        span.end(ended)
        if self.duration is not None:
            self.duration.record(
                (ended - chat.started) / 1e9, {**chat.metric_attributes, c.ERROR_TYPE: kind}
            )

    # --- tool calls ----------------------------------------------------------------------------

    def _tool_span(
        self, call: ToolCall, context: ToolContext, turn: _Turn, start: int | None = None
    ) -> Span:
        attributes: dict[str, Any] = {
            c.OPERATION_NAME: c.OP_EXECUTE_TOOL,
            c.TOOL_NAME: call.name,
            c.TOOL_CALL_ID: call.id,
            c.TOOL_TYPE: "function",
            c.CONVERSATION_ID: context.session_id,
        }
        if turn.capture:
            attributes[c.TOOL_CALL_ARGUMENTS] = content.dumps(call.arguments)
        return self.tracer.start_span(
            f"{c.OP_EXECUTE_TOOL} {call.name}",
            context=turn.context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start,
        )

    def tool_start(self, call: ToolCall, context: ToolContext) -> None:
        """Open an ``execute_tool`` span for a call of a traced turn."""
        turn = self.turns.get(context.task_id)
        if turn is None:
            return
        span = self._tool_span(call, context, turn)
        self.tools[(context.session_id, call.id)] = _Tool(span, context.task_id)
        carrier = getattr(context, "trace_context", None)
        if isinstance(carrier, dict):  # what the tool sends along, or keeps as an origin
            inject(carrier, span)

    def tool_end(self, call: ToolCall, result: ToolResult, context: ToolContext) -> None:
        """Close the call's span with how it went (``error.type`` when refused or failed)."""
        tool = self.tools.pop((context.session_id, call.id), None)
        if tool is None:
            turn = self.turns.get(context.task_id)
            if turn is None:
                return
            # refused by a guard that ran before this plugin's: a span of the call's length
            started = time.time_ns() - int(result.duration * 1e9)
            tool = _Tool(self._tool_span(call, context, turn, started), context.task_id)
        span = tool.span
        if result.is_error:
            from hermes_hookspecs import BLOCKED_MARKER

            refused = result.content.startswith(BLOCKED_MARKER)
            span.set_attribute(c.ERROR_TYPE, "refused" if refused else "tool_error")
            first_line = result.content.strip().splitlines()[0] if result.content.strip() else ""
            span.set_status(Status(StatusCode.ERROR, first_line[:500]))
        turn = self.turns.get(context.task_id)
        if turn is not None and turn.capture:
            span.set_attribute(c.TOOL_CALL_RESULT, content.dumps(result.content))
        span.end()

    # --- subagents -----------------------------------------------------------------------------

    def subagent_start(
        self, parent_session_id: str, child_session_id: str, parent_call_id: str
    ) -> None:
        """Remember the tool call span a subagent's turn nests under (else the parent's turn)."""
        tool = self.tools.get((parent_session_id, parent_call_id))
        if tool is not None:
            self.children[child_session_id] = trace.set_span_in_context(tool.span, Context())
            return
        for turn in list(self.turns.values()):
            if turn.session_id == parent_session_id:
                self.children[child_session_id] = turn.context
                return

    def subagent_stop(self, child_session_id: str) -> None:
        """Forget a subagent's parent (its turn may never have started)."""
        self.children.pop(child_session_id, None)


__all__ = ["Tracing"]
