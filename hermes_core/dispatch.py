"""Running the tool calls of one model response: validation, hooks, approval, execution
(inline, in parallel, or one by one), result capping, and answers for every call."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import inspect
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import Block, ToolCall, ToolCancelled, ToolContext, ToolError, ToolResult

from .approvals import ApprovalGate
from .events import Events
from .plugins import PluginManager
from .schema_check import check as check_schema
from .toolsets import ToolBox

DEFAULT_MAX_RESULT_CHARS = 100_000
POLL_SECONDS = 0.05


class AsyncBridge:
    """One event loop in a daemon thread, kept for the life of the process, that runs the
    coroutines of ``async`` tool handlers (so no handler ever sees "event loop is closed")."""

    _instance: AsyncBridge | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="hermes-async", daemon=True
        )
        self.thread.start()

    @classmethod
    def shared(cls) -> AsyncBridge:
        """The process-wide bridge, started on first use."""
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def run(self, coroutine: Any, cancel: threading.Event) -> Any:
        """Run ``coroutine`` on the bridge loop and return its result; cancel it on interrupt."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        while True:
            try:
                return future.result(timeout=POLL_SECONDS)
            except cf.TimeoutError:
                if cancel.is_set():
                    future.cancel()
                    raise ToolCancelled("interrupted by the user") from None


@dataclass
class CallOutcome:
    """The answer to one tool call: what goes into the transcript, and whether the model's call
    itself was malformed (bad JSON, unknown tool, schema violation)."""

    call: ToolCall
    result: ToolResult
    invalid: bool = False

    def message(self) -> dict[str, Any]:
        """The ``tool`` message for the transcript."""
        return {
            "role": "tool",
            "tool_call_id": self.call.id,
            "content": self.result.content,
            "tool_name": self.call.name,
        }


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
    name = str(function.get("name") or "")
    arguments = function.get("arguments")
    call = ToolCall(
        id=str(raw.get("id") or f"call_{index}"),
        name=name,
        arguments={},
        raw_arguments=arguments if isinstance(arguments, str) else "",
        index=index,
    )
    if isinstance(arguments, dict):
        call.arguments = arguments
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
    call.arguments = parsed
    return call, None


class Dispatcher:
    """Runs tool calls for one agent.

    :param toolbox: the tools offered to the model.
    :param plugins: for the pre/post tool-call hooks.
    :param approvals: decides calls whose tool says they need approval.
    :param events: receives ``tool_start``/``tool_end``.
    :param concurrency: most calls of one batch running at once.
    :param max_result_chars: default cap for tools that set none.
    """

    def __init__(
        self,
        toolbox: ToolBox,
        plugins: PluginManager,
        approvals: ApprovalGate,
        events: Events,
        *,
        concurrency: int = 8,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self.toolbox = toolbox
        self.plugins = plugins
        self.approvals = approvals
        self.events = events
        self.concurrency = max(1, concurrency)
        self.max_result_chars = max_result_chars
        self._pool: cf.ThreadPoolExecutor | None = None
        self._has_pre = plugins.has_implementations("hermes_pre_tool_call")
        self._has_post = plugins.has_implementations("hermes_post_tool_call")

    def close(self) -> None:
        """Stop the worker threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    # --- one call --------------------------------------------------------------------------

    def _invalid(self, call: ToolCall, text: str) -> CallOutcome:
        return CallOutcome(call, ToolResult(text, is_error=True), invalid=True)

    def validate(self, call: ToolCall) -> str | None:
        """Why ``call`` cannot run as the model sent it (unknown tool, schema), else ``None``."""
        tool = self.toolbox.get(call.name)
        if tool is None:
            available = ", ".join(self.toolbox.names) or "none"
            return f"Error: unknown tool '{call.name}'. Available tools: {available}."
        problems = check_schema(call.arguments, tool.parameters)
        if problems:
            return (
                f"Error: invalid arguments for tool '{call.name}': {'; '.join(problems)}. "
                f"The parameters schema is: {json.dumps(tool.parameters, ensure_ascii=False)}"
            )
        return None

    def execute(
        self,
        raw: dict[str, Any],
        index: int,
        context: Callable[[ToolCall], ToolContext],
        cancel: threading.Event,
    ) -> CallOutcome:
        """Run one call through the whole pipeline and return its answer (never raises)."""
        call, parse_error = parse_call(raw, index)
        if parse_error:
            return self._invalid(call, parse_error)
        problem = self.validate(call)
        if problem:
            return self._invalid(call, problem)
        tool = self.toolbox.tools[call.name]
        ctx = context(call)
        started = time.perf_counter()
        self.events.emit("tool_start", call_id=call.id, name=call.name, arguments=call.arguments)
        result = self._run_checked(call, ctx, cancel)
        result.duration = time.perf_counter() - started
        limit = tool.max_result_chars or self.max_result_chars
        result.content, result.truncated = cap(result.content, limit)
        if self._has_post:
            for _record, hook in self.plugins.implementations("hermes_post_tool_call"):
                try:
                    replaced = hook(call=call, result=result, context=ctx)
                except Exception as exc:
                    self.plugins.record_error(_record, "hermes_post_tool_call", exc)
                    continue
                if isinstance(replaced, str):
                    result.content = replaced
        self.events.emit(
            "tool_end",
            call_id=call.id,
            name=call.name,
            duration=result.duration,
            is_error=result.is_error,
            result=result.content,
        )
        return CallOutcome(call, result)

    def _run_checked(self, call: ToolCall, ctx: ToolContext, cancel: threading.Event) -> ToolResult:
        if self._has_pre:
            for record, hook in self.plugins.implementations("hermes_pre_tool_call"):
                try:
                    verdict = hook(call=call, context=ctx)
                except Exception as exc:  # a guard that crashes must not let the call through
                    self.plugins.record_error(record, "hermes_pre_tool_call", exc)
                    verdict = Block(
                        f"the plugin failed while checking this call ({type(exc).__name__}: {exc})"
                    )
                if isinstance(verdict, Block):
                    return ToolResult(
                        f"Error: blocked by plugin '{record.name}': {verdict.reason}", is_error=True
                    )
                if isinstance(verdict, dict):
                    call.arguments = verdict
            problem = self.validate(call)
            if problem:
                return ToolResult(problem + " (arguments rewritten by a plugin)", is_error=True)
        tool = self.toolbox.tools[call.name]
        if tool.needs_approval is not None:
            try:
                request = tool.needs_approval(call.arguments)
            except Exception as exc:
                return ToolResult(
                    f"Error: approval check of '{call.name}' failed: {type(exc).__name__}: {exc}",
                    is_error=True,
                )
            if request is not None:
                approved, who = self.approvals.decide(request, ctx)
                if not approved:
                    return ToolResult(
                        f"Error: not approved ({who}): {request.reason}: {request.action}. "
                        "Do not retry the same action; choose a safer one or ask the user.",
                        is_error=True,
                    )
        if cancel.is_set():
            return ToolResult("Error: interrupted by the user before this tool ran.", is_error=True)
        try:
            value = tool.handler(call.arguments, ctx)
            if inspect.isawaitable(value):
                value = AsyncBridge.shared().run(value, cancel)
        except ToolCancelled:
            return ToolResult(
                "Error: interrupted by the user while this tool was running.", is_error=True
            )
        except ToolError as exc:
            return ToolResult(f"Error: {exc}", is_error=True)
        except Exception as exc:
            return ToolResult(
                f"Error: tool '{call.name}' raised {type(exc).__name__}: {exc}", is_error=True
            )
        return ToolResult(result_text(value))

    # --- a batch ---------------------------------------------------------------------------

    def run_batch(
        self,
        raw_calls: Sequence[dict[str, Any]],
        context: Callable[[ToolCall], ToolContext],
        cancel: threading.Event,
    ) -> list[CallOutcome]:
        """Answer every call of one response, in the model's order.

        One call runs inline; several run in parallel unless one of them is ``sequential``.
        On interrupt, calls not finished are answered with an error.
        """
        if len(raw_calls) == 1:
            return [self.execute(raw_calls[0], 0, context, cancel)]
        sequential = any(
            (tool := self.toolbox.get(str((raw.get("function") or {}).get("name")))) is not None
            and tool.sequential
            for raw in raw_calls
        )
        if sequential:
            outcomes = []
            for index, raw in enumerate(raw_calls):
                if cancel.is_set():
                    outcomes.append(self._interrupted(raw, index, "before this tool ran"))
                else:
                    outcomes.append(self.execute(raw, index, context, cancel))
            return outcomes
        if self._pool is None:
            self._pool = cf.ThreadPoolExecutor(self.concurrency, thread_name_prefix="hermes-tool")
        futures = [
            self._pool.submit(self.execute, raw, i, context, cancel)
            for i, raw in enumerate(raw_calls)
        ]
        pending = set(futures)
        while pending and not cancel.is_set():
            _done, pending = cf.wait(pending, timeout=POLL_SECONDS)
        outcomes = []
        for index, (raw, future) in enumerate(zip(raw_calls, futures, strict=True)):
            if future.done() and not future.cancelled():
                outcomes.append(future.result())
            else:
                started = not future.cancel()
                when = "while this tool was running" if started else "before this tool ran"
                outcomes.append(self._interrupted(raw, index, when))
        return outcomes

    @staticmethod
    def _interrupted(raw: dict[str, Any], index: int, when: str) -> CallOutcome:
        call, _ = parse_call(raw, index)
        return CallOutcome(
            call, ToolResult(f"Error: interrupted by the user {when}.", is_error=True)
        )
