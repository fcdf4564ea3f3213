"""Running the tool calls of one model response: validation, hooks, approval, execution
(in parallel or one by one, each with a timeout), and answers for every call.

Every answer passes the tool boundary once (:meth:`Dispatcher.seal`): its text is made
encodable (:func:`~hermes_core.loop.transcript.clean_text`), secrets are redacted
(:func:`hermes_runtime.secrets.redact`) and it is capped, before ``hermes_post_tool_call`` hooks,
events, the transcript, the session store and the model see it.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hermes_hookspecs import (
    BLOCKED_MARKER,
    TOOL_NAME_RE,
    Block,
    Cancelled,
    EnvironmentRefused,
    EnvironmentUnavailable,
    Tool,
    ToolCall,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolResult,
    blocked,
)
from hermes_hookspecs.refusals import is_blocked
from hermes_runtime.secrets import redact

from ..plugins.manager import PluginManager
from ..tools.schema_check import check as check_schema
from ..tools.toolsets import ToolBox
from .approvals import ApprovalGate, refusal
from .events import Events
from .handlers import STOP_GRACE_SECONDS, ToolStep, ToolTimeout
from .steps import POLL_SECONDS, Steps, run_steps
from .text import clean_text
from .tool_calls import (
    PLACEHOLDER_NAME,
    REQUESTED_NAME,
    CallOutcome,
    cap,
    normalize_calls,
    parse_call,
    result_text,
    with_images,
)

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_TOOL_TIMEOUT",
    "PLACEHOLDER_NAME",
    "REQUESTED_NAME",
    "CallOutcome",
    "Dispatcher",
    "cap",
    "normalize_calls",
    "parse_call",
    "result_text",
]

DEFAULT_MAX_RESULT_CHARS = 100_000
DEFAULT_TOOL_TIMEOUT = 300.0
"""Seconds a handler may run (``tools.timeout``) before its call is answered with an error."""


class Dispatcher:
    """Runs tool calls for one agent.

    :param toolbox: the tools offered to the model.
    :param plugins: for the pre/post tool-call hooks.
    :param approvals: decides calls whose tool says they need approval.
    :param events: receives ``tool_start``/``tool_end``.
    :param concurrency: most calls of one batch running at once.
    :param max_result_chars: default cap for tools that set none.
    :param timeout: seconds a handler may run (``tools.timeout``); ``None`` for no limit.
    :param timeouts: per tool name, a timeout that replaces ``timeout`` (``tools.timeouts``).
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
        timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        timeouts: Mapping[str, float | None] | None = None,
    ) -> None:
        self.toolbox = toolbox
        self.plugins = plugins
        self.approvals = approvals
        self.events = events
        self.concurrency = max(1, concurrency)
        self.max_result_chars = max_result_chars
        self.timeout = timeout
        self.timeouts = dict(timeouts or {})
        self._pool: cf.ThreadPoolExecutor | None = None
        self._has_pre = plugins.has_implementations("hermes_pre_tool_call")
        self._has_post = plugins.has_implementations("hermes_post_tool_call")

    def close(self) -> None:
        """Stop the worker threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    # --- one call --------------------------------------------------------------------------

    def seal(self, text: str, limit: int | None = None) -> tuple[str, bool]:
        """``text`` as it crosses the tool boundary: encodable, secrets redacted, capped to
        ``limit`` (default: the dispatcher's). Returns the text and whether it was cut."""
        return cap(redact(clean_text(text)), limit or self.max_result_chars)

    def _invalid(self, call: ToolCall, text: str) -> CallOutcome:
        content, truncated = self.seal(text)
        return CallOutcome(call, ToolResult(content, is_error=True, truncated=truncated), True)

    def timeout_for(self, name: str, tool: Tool | None = None) -> float | None:
        """The timeout of tool ``name``: its entry in ``timeouts``, else the tool's own
        ``timeout`` (``0``: none), else ``timeout``."""
        if name in self.timeouts:
            return self.timeouts[name]
        if tool is not None and tool.timeout is not None:
            return tool.timeout or None
        return self.timeout

    def validate(self, call: ToolCall) -> str | None:
        """Why ``call`` cannot run as the model sent it (unknown tool, schema), else ``None``."""
        tool = self.toolbox.get(call.name) if TOOL_NAME_RE.match(call.name) else None
        if tool is None:
            available = ", ".join(self.toolbox.names) or "none"
            if not call.name.strip():
                return (
                    "Error: this tool call has no tool name. Call a tool by its exact name. "
                    f"Available tools: {available}."
                )
            return f"Error: unknown tool '{call.name}'. Available tools: {available}."
        if call.name in self.toolbox.disabled:
            reason = self.toolbox.disabled[call.name]
            return f"Error: tool '{call.name}' was disabled during this session: {reason}."
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
        """Run one call through the whole pipeline and return its answer (never raises); its
        handler runs on a worker thread watched from this one."""
        return run_steps(self.execute_steps(raw, index, context, cancel))

    def execute_steps(
        self,
        raw: dict[str, Any],
        index: int,
        context: Callable[[ToolCall], ToolContext],
        cancel: threading.Event,
    ) -> Steps[CallOutcome]:
        """:meth:`execute` as steps of the turn (:mod:`hermes_core.loop.steps`): the handler
        is the step a driver runs."""
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
        result = yield from self._run_checked(call, tool, ctx, cancel)
        result.duration = time.perf_counter() - started
        limit = tool.max_result_chars or self.max_result_chars
        result.content, result.truncated = self.seal(result.content, limit)
        if self._has_post:
            for _record, hook in self.plugins.implementations("hermes_post_tool_call"):
                try:
                    replaced = hook(call=call, result=result, context=ctx)
                except Exception as exc:
                    self.plugins.record_error(_record, "hermes_post_tool_call", exc)
                    continue
                if isinstance(replaced, str):
                    # A replacement crosses the boundary too; it is not cut (the hook chose it).
                    result.content = redact(clean_text(replaced))
        self.events.emit(
            "tool_end",
            call_id=call.id,
            name=call.name,
            duration=result.duration,
            is_error=result.is_error,
            result=result.content,
        )
        return CallOutcome(call, result)

    def _run_checked(
        self, call: ToolCall, tool: Tool, ctx: ToolContext, cancel: threading.Event
    ) -> Steps[ToolResult]:
        refused = self._guard(call, ctx) if self._has_pre else None
        if refused is None and tool.needs_approval is not None:
            refused = self._approve(call, tool, ctx)
        if refused is not None:
            return refused
        if cancel.is_set():
            return ToolResult("Error: interrupted by the user before this tool ran.", is_error=True)
        timeout = self.timeout_for(call.name, tool)
        try:
            value = yield ToolStep(tool, call, ctx, cancel, timeout)
        except ToolTimeout:
            return ToolResult(self._timeout_text(call, tool, timeout), is_error=True)
        except (Cancelled, Exception) as exc:
            return ToolResult(_failure_text(call, exc), is_error=True)
        if isinstance(value, ToolOutput):
            return with_images(value, ctx)
        return ToolResult(result_text(value))

    def _guard(self, call: ToolCall, ctx: ToolContext) -> ToolResult | None:
        """The ``hermes_pre_tool_call`` hooks: the refusal of one that blocks the call (or
        fails: fail closed, or rewrites the arguments into invalid ones), else ``None``."""
        for record, hook in self.plugins.implementations("hermes_pre_tool_call"):
            try:
                verdict = hook(call=call, context=ctx)
            except Exception as exc:  # a guard that crashes must not let the call through
                self.plugins.record_error(record, "hermes_pre_tool_call", exc)
                verdict = Block(
                    f"the plugin failed while checking this call ({type(exc).__name__}: "
                    f"{exc}), so the call is refused"
                )
            if isinstance(verdict, Block):
                reason = verdict.reason
                if not reason.startswith(BLOCKED_MARKER):  # already blocked() text: as is
                    reason = blocked(f"plugin:{record.name}", reason)
                return ToolResult(reason, is_error=True)
            if isinstance(verdict, dict):
                call.arguments = verdict
        problem = self.validate(call)
        if problem:
            return ToolResult(problem + " (arguments rewritten by a plugin)", is_error=True)
        return None

    def _approve(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> ToolResult | None:
        """The refusal of a call its tool says needs approval and nobody approved, else
        ``None``; a check that cannot decide refuses (fail closed)."""
        assert tool.needs_approval is not None
        try:
            request = tool.needs_approval(call.arguments)
        except Exception as exc:
            reason = (
                f"the approval check of '{call.name}' failed ({type(exc).__name__}: {exc}), "
                "so the call is refused"
            )
            return ToolResult(blocked("approval-check-failed", reason), is_error=True)
        if request is None:
            return None
        approved, who = self.approvals.decide(request, ctx)
        return None if approved else ToolResult(refusal(request, who), is_error=True)

    def _timeout_text(self, call: ToolCall, tool: Tool, timeout: float | None) -> str:
        """What the model reads when ``call`` ran past its timeout, naming the setting."""
        if call.name in self.timeouts:
            setting = f"tools.timeouts.{call.name}"
        elif tool.timeout is not None:
            setting = f"the tool's own limit; tools.timeouts.{call.name} changes it"
        else:
            setting = "tools.timeout"
        return (
            f"Error: tool '{call.name}' did not finish within {timeout or 0:g} seconds "
            f"({setting}), so it was abandoned; its work may be incomplete. Try a "
            "smaller step, or another way."
        )

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
        return run_steps(self.batch_steps(raw_calls, context, cancel))

    def batch_steps(
        self,
        raw_calls: Sequence[dict[str, Any]],
        context: Callable[[ToolCall], ToolContext],
        cancel: threading.Event,
    ) -> Steps[list[CallOutcome]]:
        """:meth:`run_batch` as steps of the turn: the handler of a lone call, or of each
        call of a sequential batch, is a step; a parallel batch runs on a pool, each call
        watched by its pool thread."""
        if len(raw_calls) == 1:
            return [(yield from self.execute_steps(raw_calls[0], 0, context, cancel))]
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
                    outcomes.append((yield from self.execute_steps(raw, index, context, cancel)))
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
        if pending:  # interrupted: calls not started never start, running ones get a grace
            running = {future for future in pending if not future.cancel()}
            cf.wait(running, timeout=STOP_GRACE_SECONDS + POLL_SECONDS)
        outcomes = []
        for index, (raw, future) in enumerate(zip(raw_calls, futures, strict=True)):
            if future.cancelled():
                outcomes.append(self._interrupted(raw, index, "before this tool ran"))
            elif future.done():
                outcomes.append(future.result())
            else:
                outcomes.append(self._interrupted(raw, index, "while this tool was running"))
        return outcomes

    @staticmethod
    def _interrupted(raw: dict[str, Any], index: int, when: str) -> CallOutcome:
        call, _ = parse_call(raw, index)  # the text is the host's own: nothing to seal
        return CallOutcome(
            call, ToolResult(f"Error: interrupted by the user {when}.", is_error=True)
        )


def _failure_text(call: ToolCall, exc: BaseException) -> str:
    """What the model reads when the handler of ``call`` raised ``exc``."""
    if isinstance(exc, Cancelled):  # the host's interrupt, or the handler's own
        return "Error: interrupted by the user while this tool was running."
    if isinstance(exc, ToolError):
        text = str(exc)
        return text if is_blocked(text) else f"Error: {text}"
    if isinstance(exc, EnvironmentRefused):  # a security policy's refusal: the model must see it
        return blocked(exc.rule, f"the execution environment was refused: {exc}")
    if isinstance(exc, EnvironmentUnavailable):
        return f"Error: the execution environment is not available: {exc}"
    return f"Error: tool '{call.name}' raised {type(exc).__name__}: {exc}"
