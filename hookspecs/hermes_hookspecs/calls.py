"""A tool call as the host runs it: the call, its result, a block verdict, and the context a
handler receives."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .approval import ApprovalRequest
from .errors import HermesError, ToolCancelled

if TYPE_CHECKING:
    from .agents import AgentRunner
    from .environment import Environment
    from .sessions import SessionStore


@dataclass
class ToolCall:
    """One call the model asked for.

    :param id: the provider's call id, echoed in the tool result.
    :param name: the tool name the model used (it may not exist).
    :param arguments: the parsed arguments; ``pre_tool_call`` hooks may replace them.
    :param raw_arguments: the arguments exactly as the model sent them (a JSON string).
    :param index: position of the call in the model's batch.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    index: int = 0


@dataclass
class ToolResult:
    """What a tool call produced, as it will be sent to the model.

    :param content: the text the model sees.
    :param is_error: the call failed (bad arguments, unknown tool, exception, denial, interrupt).
    :param duration: seconds spent in the handler.
    :param truncated: the content was cut to ``max_result_chars``.
    :param images: paths of the image files the model is shown with the content (the copies in
        the home's ``images/`` folder of a :class:`~hermes_hookspecs.ToolOutput`'s images).
    """

    content: str
    is_error: bool = False
    duration: float = 0.0
    truncated: bool = False
    images: list[str] = field(default_factory=list)


def _no_environment() -> Environment:
    raise HermesError("no execution environment is available to this tool")


def _deny(request: ApprovalRequest) -> bool:
    return False


def _no_clarify(question: str, choices: Sequence[str] | None) -> str:
    raise HermesError("no one is available to answer a clarifying question")


def _no_emit(event: str, data: dict[str, Any]) -> None:
    return None


@dataclass
class ToolContext:
    """Everything a tool handler may use besides its arguments.

    The host builds one per call. What agent-level tools need (the home folder, the session
    store, a runner for subagents) is a typed field, so they are ordinary plugins.

    :param task_id: the task this call belongs to (environments are kept per task).
    :param session_id: the session this call belongs to.
    :param call_id: the id of the tool call.
    :param tool_name: the name of the tool being called.
    :param config: the effective configuration (read-only mapping of nested dicts).
    :param cancel_event: set when the user interrupts; long handlers should check
        :attr:`cancelled` and stop.
    :param agents: runs other agents (subagents) for this tool, set by the host; runs inherit the
        calling agent's configuration, plugins and session store, and their token usage and cost
        count towards the calling agent's. ``None`` when the host offers no runner.
    :param hermes_home: the active hermes home folder (the active profile's), set by the host;
        ``None`` when the agent runs without one (a configuration given as a mapping). Code with
        no context to ask uses ``hermes_runtime.home.default_home``.
    :param session_store: the store that keeps the agent's sessions, set by the host (a
        subagent's is its parent's); ``None`` when the host offers none. A store that can
        search is a :class:`~hermes_hookspecs.SearchableSessionStore`. For a person's call
        it is a view of the store limited to that person's sessions.
    :param person: the person the call acts for (see :mod:`hermes_hookspecs.people`);
        ``None`` for the home's owner. A tool that stores data keeps it under
        :attr:`data_home` (or otherwise scoped by this), so no person reads another's.
    :param trace_context: the W3C trace context of this call as text headers (``traceparent``,
        ``tracestate``), filled in by a tracing plugin's ``hermes_pre_tool_call``; empty when
        nothing traces the turn. A tool that calls out (an HTTP request, a program) may send
        it along so that what it calls joins the trace; one that schedules work keeps it as
        the work's origin.
    """

    task_id: str
    session_id: str = ""
    call_id: str = ""
    tool_name: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)
    cancel_event: threading.Event = field(default_factory=threading.Event)
    environment_factory: Callable[[], Environment] = _no_environment
    approver: Callable[[ApprovalRequest], bool] = _deny
    clarifier: Callable[[str, Sequence[str] | None], str] = _no_clarify
    emitter: Callable[[str, dict[str, Any]], None] = _no_emit
    agents: AgentRunner | None = None
    hermes_home: Path | None = None
    session_store: SessionStore | None = None
    person: str | None = None
    trace_context: dict[str, str] = field(default_factory=dict)

    @property
    def data_home(self) -> Path | None:
        """Where this call's person keeps their own data: :attr:`hermes_home` for the owner,
        ``hermes_home/people/<person>`` for a person; ``None`` without a home."""
        if self.hermes_home is None:
            return None
        from .people import person_home

        return person_home(self.hermes_home, self.person)

    @property
    def environment(self) -> Environment:
        """The active execution environment of this task, created on first use.

        Raises :class:`~hermes_hookspecs.EnvironmentUnavailable` when it cannot start.
        """
        return self.environment_factory()

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled by an interrupt."""
        return self.cancel_event.is_set()

    def check_cancelled(self) -> None:
        """Raise :class:`~hermes_hookspecs.ToolCancelled` if the call was cancelled."""
        if self.cancel_event.is_set():
            raise ToolCancelled("interrupted by the user")

    def approve(
        self, action: str, reason: str, key: str = "", *, once_only: bool = False, **details: Any
    ) -> bool:
        """Ask for consent to do ``action``; ``True`` when approved. ``once_only``: see
        :attr:`ApprovalRequest.once_only`.

        Fails closed: with no approval plugin and no one to ask, the answer is ``False``.
        """
        request = ApprovalRequest(
            action=action,
            reason=reason,
            key=key,
            tool=self.tool_name,
            details=details,
            once_only=once_only,
        )
        return self.approver(request)

    def clarify(self, question: str, choices: Sequence[str] | None = None) -> str:
        """Ask the user a question and return the answer (one of ``choices`` when given)."""
        return self.clarifier(question, choices)

    def emit(self, event: str, **data: Any) -> None:
        """Report progress to the host's event sink (e.g. ``emit("status", text="cloning")``)."""
        self.emitter(event, data)


@dataclass(frozen=True)
class Block:
    """Returned by a ``hermes_pre_tool_call`` hook to stop a call; ``reason`` goes to the model."""

    reason: str


__all__ = ["Block", "ToolCall", "ToolContext", "ToolResult"]
