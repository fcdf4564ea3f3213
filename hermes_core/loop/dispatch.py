"""Running the tool calls of one model response: validation, hooks, approval, execution
(in parallel or one by one, each with a timeout), and answers for every call.

Every answer passes the tool boundary once (:meth:`Dispatcher.seal`): its text is made
encodable (:func:`~hermes_core.loop.transcript.clean_text`), secrets are redacted
(:func:`hermes_runtime.secrets.redact`) and it is capped, before ``hermes_post_tool_call`` hooks,
events, the transcript, the session store and the model see it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextvars
import inspect
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import (
    BLOCKED_MARKER,
    TOOL_NAME_RE,
    AgentRunner,
    AgentTask,
    Block,
    Cancelled,
    EnvironmentRefused,
    EnvironmentUnavailable,
    HermesError,
    Tool,
    ToolCall,
    ToolCancelled,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolResult,
    blocked,
)
from hermes_hookspecs.refusals import is_blocked
from hermes_runtime.secrets import redact
from hermes_runtime.threads import Workers

from ..plugins.manager import PluginManager
from ..tools.schema_check import check as check_schema
from ..tools.toolsets import ToolBox
from .approvals import ApprovalGate, refusal
from .events import Events
from .images import IMAGES_FIELD
from .transcript import clean_text, clean_value

DEFAULT_MAX_RESULT_CHARS = 100_000
DEFAULT_TOOL_TIMEOUT = 300.0
"""Seconds a handler may run (``tools.timeout``) before its call is answered with an error."""
POLL_SECONDS = 0.05
STOP_GRACE_SECONDS = 0.25
"""After an interrupt or a timeout, how long a handler gets to notice its cancel event and end
(a subagent stopping, a command being killed) before its call is answered anyway."""

PLACEHOLDER_NAME = "invalid_tool_name"
"""The name stored and echoed to the model for a call whose tool name was empty or malformed
(providers refuse such names in the history); the call is answered with an explanation."""
REQUESTED_NAME = "_requested_name"
"""Internal field of a stored tool call: the unusable name the model sent."""


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


HANDLER_THREADS = Workers("hermes-tool")
"""The threads tool handlers run on, reused from call to call: starting a thread per call costs
more than the loop's own work for a quick tool, and a handler that never returns keeps its
thread while the next call gets another."""


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


def _with_images(output: ToolOutput, ctx: ToolContext) -> ToolResult:
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


class ToolTimeout(Exception):
    """A handler ran longer than its timeout; the host stopped waiting for it."""


class _ToolClock:
    """Time a handler has spent on its own: time it waits for a person (approval, a clarifying
    question) or for subagents, which bound their own steps, does not count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._paused_total = 0.0
        self._pauses = 0
        self._pause_started = 0.0

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the clock while the block runs."""
        with self._lock:
            if self._pauses == 0:
                self._pause_started = time.monotonic()
            self._pauses += 1
        try:
            yield
        finally:
            with self._lock:
                self._pauses -= 1
                if self._pauses == 0:
                    self._paused_total += time.monotonic() - self._pause_started

    def elapsed(self) -> float:
        """Seconds the handler has run, pauses left out."""
        with self._lock:
            now = time.monotonic()
            paused = self._paused_total + (now - self._pause_started if self._pauses else 0.0)
            return now - self._started - paused

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, with the clock stopped while it runs."""

        def paused_call(*args: Any, **kwargs: Any) -> Any:
            with self.paused():
                return function(*args, **kwargs)

        return paused_call


class _PausedRunner:
    """A tool's :class:`~hermes_hookspecs.AgentRunner`, with the tool's clock stopped while a
    subagent runs."""

    def __init__(self, runner: AgentRunner, clock: _ToolClock) -> None:
        self._runner = runner
        self._clock = clock

    def run(self, task: AgentTask) -> Any:
        """Run ``task`` with the runner of the host."""
        with self._clock.paused():
            return self._runner.run(task)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)


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
        result = self._run_checked(call, tool, ctx, cancel)
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
    ) -> ToolResult:
        if self._has_pre:
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
        if tool.needs_approval is not None:
            try:
                request = tool.needs_approval(call.arguments)
            except Exception as exc:  # a check that cannot decide refuses: fail closed
                reason = (
                    f"the approval check of '{call.name}' failed ({type(exc).__name__}: {exc}), "
                    "so the call is refused"
                )
                return ToolResult(blocked("approval-check-failed", reason), is_error=True)
            if request is not None:
                approved, who = self.approvals.decide(request, ctx)
                if not approved:
                    return ToolResult(refusal(request, who), is_error=True)
        if cancel.is_set():
            return ToolResult("Error: interrupted by the user before this tool ran.", is_error=True)
        timeout = self.timeout_for(call.name, tool)
        try:
            value = self._invoke(tool, call, ctx, cancel, timeout)
        except Cancelled:  # the host's interrupt, or the handler's own (ToolCancelled and others)
            return ToolResult(
                "Error: interrupted by the user while this tool was running.", is_error=True
            )
        except ToolTimeout:
            if call.name in self.timeouts:
                setting = f"tools.timeouts.{call.name}"
            elif tool.timeout is not None:
                setting = f"the tool's own limit; tools.timeouts.{call.name} changes it"
            else:
                setting = "tools.timeout"
            return ToolResult(
                f"Error: tool '{call.name}' did not finish within {timeout:g} seconds "
                f"({setting}), so it was abandoned; its work may be incomplete. Try a "
                "smaller step, or another way.",
                is_error=True,
            )
        except ToolError as exc:
            text = str(exc)
            return ToolResult(text if is_blocked(text) else f"Error: {text}", is_error=True)
        except EnvironmentRefused as exc:  # a security policy's refusal: the model must see it
            reason = f"the execution environment was refused: {exc}"
            return ToolResult(blocked(exc.rule, reason), is_error=True)
        except EnvironmentUnavailable as exc:
            return ToolResult(
                f"Error: the execution environment is not available: {exc}", is_error=True
            )
        except Exception as exc:
            return ToolResult(
                f"Error: tool '{call.name}' raised {type(exc).__name__}: {exc}", is_error=True
            )
        if isinstance(value, ToolOutput):
            return _with_images(value, ctx)
        return ToolResult(result_text(value))

    def _invoke(
        self,
        tool: Tool,
        call: ToolCall,
        ctx: ToolContext,
        cancel: threading.Event,
        timeout: float | None,
    ) -> Any:
        """Run the handler in a thread of its own and wait for its value.

        A thread cannot be killed, so on interrupt (:class:`ToolCancelled`) or timeout
        (:class:`ToolTimeout`) the handler's cancel event is set (a coroutine is cancelled, a
        handler that checks the event stops) and the host waits at most
        :data:`STOP_GRACE_SECONDS` more before it answers the call.
        """
        stop = threading.Event()  # this call's cancel event: interrupt or timeout
        clock = _ToolClock()
        ctx.cancel_event = stop
        ctx.approver = clock.wrap(ctx.approver)
        ctx.clarifier = clock.wrap(ctx.clarifier)
        if ctx.agents is not None:
            ctx.agents = _PausedRunner(ctx.agents, clock)
        done = threading.Event()
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                value = tool.handler(call.arguments, ctx)
                if inspect.isawaitable(value):
                    value = AsyncBridge.shared().run(value, stop)
                outcome["value"] = value
            except BaseException as exc:  # handed to the waiting thread
                outcome["error"] = exc
            finally:
                done.set()

        context = contextvars.copy_context()
        HANDLER_THREADS.submit(context.run, work)
        while not done.wait(POLL_SECONDS):
            if cancel.is_set():
                stop.set()
                done.wait(STOP_GRACE_SECONDS)
                raise ToolCancelled("interrupted by the user")
            if timeout and clock.elapsed() >= timeout:
                stop.set()
                done.wait(STOP_GRACE_SECONDS)
                raise ToolTimeout(call.name)
        error = outcome.get("error")
        if isinstance(error, (Exception, Cancelled)):
            raise error
        if error is not None:  # SystemExit and the like end the call, not the agent
            raise RuntimeError(f"{type(error).__name__}: {error}")
        return outcome.get("value")

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
