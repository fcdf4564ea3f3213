"""Running agents from plugins: the task a plugin hands the host, the outcome it gets back, the
runner that does it, and what a plugin's CLI command can reach.

A tool handler reaches the runner as :attr:`ToolContext.agents <hermes_hookspecs.ToolContext>`
(the host sets it; runs inherit the calling agent's configuration, plugins and session store). A
command registered through ``hermes_register_commands`` reaches it as
``click.get_current_context().obj.agent_runner()`` (a :class:`CommandContext`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .approval import ApprovalRequest
from .providers import Usage
from .sessions import SessionStore
from .tools import Tool

OUTCOME_STATUSES: tuple[str, ...] = (
    "completed",
    "interrupted",
    "max_iterations",
    "budget_exhausted",
    "error",
)
"""The values of :attr:`AgentOutcome.status`."""


@dataclass
class AgentTask:
    """One turn of an agent that a plugin asks the host to run.

    :param prompt: the user message of the turn.
    :param session_id: continue this stored session; ``None`` starts a new one.
    :param parent_session_id: link a new session to its parent (e.g. a subagent's to the
        session that delegated); ignored when continuing a session.
    :param source: the session's source (platform): ``"cron"``, ``"subagent"``,
        ``"api-server"``, ``"webhook"``...
    :param toolsets: the toolsets to offer; ``None`` uses the configured ones.
    :param model: the model; ``None`` uses the configured one.
    :param provider: the provider; ``None`` uses the configured one.
    :param base_url: the API endpoint; ``None`` uses the configured one.
    :param api_mode: the wire format; ``None`` uses the configured one.
    :param max_iterations: the iteration budget (model calls) of the turn; ``None`` uses
        ``agent.max_turns``.
    :param system_context: extra context for this agent (e.g. a subagent's goal and context),
        added to the system prompt of a new session.
    :param approval: who approves dangerous actions: called with the request, returns a decision
        (``once``/``session``/``always``/``deny``) or ``None``. ``None`` means nobody: requests
        that no approval plugin decides are denied (security fails closed).
    :param cancel_event: set it (from any thread) to interrupt the run.
    :param on_text_delta: receives the answer text as it streams, when given.
    :param config_overrides: dotted configuration keys (``"terminal.timeout"``) and values applied
        over the inherited configuration for this run.
    :param exclude_toolsets: toolsets never offered to this run, whatever enables or includes
        them (e.g. ``clarify`` for an agent no one can answer); names that are not installed are
        ignored.
    :param join_unanswered: when the session's last user message got no answer (its turn was
        interrupted), join ``prompt`` to it instead of closing it with a note, so the model
        answers both as one message (the gateway's ``busy: interrupt``).
    :param person: the person the run acts for (a gateway's user, see
        :mod:`hermes_hookspecs.people`): its session is theirs, and its tools read and write
        their memory, skills, todo lists, sessions and jobs only. ``None``: the home's owner. A
        subagent's run always acts for its caller's person, whatever this says.
    :param shared_people: other people whose sessions ``person`` may also find with
        ``session_search`` (the members of a group configured to share); only with ``person``.
        A subagent's run shares what its caller shares.
    :param only_toolsets: when given, no toolset outside these (and those they include) is
        offered, whatever the configuration or ``toolsets`` enable: a narrowing, never a
        widening (a person's allowed toolsets).
    :param on_event: receives every progress event of the run as ``(name, data)`` (tool
        calls starting and ending, reasoning text, streamed text, steps, status lines), when
        given: what a front end needs to show the run as it goes.
    :param images: image files attached to ``prompt`` (copied into the home's ``images/``
        folder and referenced from the user message, as the chat attaches them).
    :param trace_context: the W3C trace context the run belongs to, as text headers
        (``traceparent``, ``tracestate``; e.g. those of the HTTP request that asked for it);
        handed to ``hermes_turn_start`` so that a tracer makes the run part of that trace.
    :param resume_unanswered: when the session's last user message is ``prompt`` and has no
        answer yet (the same turn, repeated after the process running it died), continue that
        turn from what the store recorded instead of adding ``prompt`` again.
    :param extra_tools: tools offered in this run only, besides those of the enabled toolsets
        (e.g. those of MCP servers an editor passes in for its session); they go through the
        same dispatch, hooks and approvals. A name already offered fails the run. A subagent
        does not inherit them.
    """

    prompt: str
    session_id: str | None = None
    parent_session_id: str | None = None
    source: str = "library"
    toolsets: Sequence[str] | None = None
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    api_mode: str | None = None
    max_iterations: int | None = None
    system_context: str | None = None
    approval: Callable[[ApprovalRequest], str | None] | None = None
    cancel_event: threading.Event | None = None
    on_text_delta: Callable[[str], None] | None = None
    config_overrides: Mapping[str, Any] = field(default_factory=dict)
    exclude_toolsets: Sequence[str] = ()
    join_unanswered: bool = False
    person: str | None = None
    shared_people: Sequence[str] = ()
    only_toolsets: Sequence[str] | None = None
    on_event: Callable[[str, Mapping[str, Any]], None] | None = None
    images: Sequence[str] = ()
    trace_context: Mapping[str, str] = field(default_factory=dict)
    resume_unanswered: bool = False
    extra_tools: Sequence[Tool] = ()


@dataclass
class AgentOutcome:
    """How a run ended.

    :param session_id: the session that holds the run's transcript.
    :param text: the final answer; ``""`` when there is none.
    :param status: ``completed``, ``interrupted``, ``max_iterations`` (the budget ran out; ``text``
        is the agent's summary of where it stopped), ``budget_exhausted`` (a spend cap was
        reached before a model call; ``text`` and ``error`` name the cap and how to raise it)
        or ``error``.
    :param error: one readable line when ``status`` is ``error``.
    :param usage: the tokens the run used.
    :param cost_usd: its estimated cost (0.0 when unknown).
    :param duration: seconds it took.
    """

    session_id: str
    text: str
    status: str
    error: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    duration: float = 0.0


@runtime_checkable
class AgentRunner(Protocol):
    """Runs agent turns for plugins. Thread-safe: several runs may go on in parallel.

    The runner a tool gets (``ToolContext.agents``) runs subagents of the calling agent: a run
    is offered no toolset the calling agent lacks, its usage and cost count towards the calling
    agent's, and ``hermes_subagent_start`` / ``hermes_subagent_stop`` are called around it.
    """

    def run(self, task: AgentTask) -> AgentOutcome:
        """Run ``task`` to the end and return its outcome.

        Never raises for what goes wrong inside the run (a provider error, a bad model name, an
        interrupt): that is an outcome with ``status`` ``error`` or ``interrupted``.
        """
        ...


@runtime_checkable
class CommandContext(Protocol):
    """What a plugin's CLI command finds in ``click.get_current_context().obj``.

    :ivar home: the active hermes home folder.
    :ivar config: the effective configuration (nested mappings; read-only by convention).
    :ivar debug: ``--debug`` was given (show tracebacks).
    """

    home: Path
    config: Mapping[str, Any]
    debug: bool

    def agent_runner(self) -> AgentRunner:
        """A runner for this invocation's configuration, plugins and session store."""
        ...

    def session_store(self) -> SessionStore:
        """The session store of this invocation's home (a
        :class:`~hermes_hookspecs.PersonalSessionStore` when it can keep people apart)."""
        ...

    def set_config(self, key: str, value: Any) -> None:
        """Write ``value`` (plain data) at the dotted ``key`` of the home's ``config.yaml``:
        validated first, written atomically, the other keys kept in their order; ``config``
        shows the change afterwards. Raises :class:`~hermes_hookspecs.HermesError` (file
        untouched) when the result would be invalid."""
        ...

    def unset_config(self, key: str) -> bool:
        """Remove the dotted ``key`` from the home's ``config.yaml`` (mappings it leaves empty
        too); ``False`` when it was not there."""
        ...

    def registered(self, hook: str) -> Mapping[str, Any]:
        """What plugins registered through ``hook``, a registration hook that a loaded plugin
        declares (named ``hermes_register_<things>``, taking ``register``; each call
        ``register(name, value)``), by name. The host refuses a name registered twice, naming
        both plugins. Raises :class:`~hermes_hookspecs.HermesError` when no loaded plugin
        declares ``hook``."""
        ...


__all__ = ["OUTCOME_STATUSES", "AgentOutcome", "AgentRunner", "AgentTask", "CommandContext"]
