"""The :class:`~hermes_hookspecs.ToolContext` each tool handler gets: the task and session, the
read-only configuration, the store, the execution environment (made on first use), approval,
clarifying questions, events and a runner for subagents charged to the turn."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_hookspecs import SessionStore, ToolCall, ToolContext

from ..host import Host
from ..tools.environments import EnvironmentManager
from .approvals import ApprovalGate
from .events import Events
from .runner import CallingAgent
from .turn import Turn

Clarify = Callable[[str, Sequence[str] | None], str]
"""``clarify(question, choices)``: a person's answer."""


class ToolContexts:
    """Makes the tool contexts of one agent.

    :param config: the configuration, read-only.
    :param hermes_home: the home folder, if there is one.
    :param session_store: the session store.
    :param environments: the execution environments, one per task.
    :param approvals: decides what needs approval.
    :param events: where handlers' events go.
    :param host: runs subagents.
    :param toolsets: the agent's toolsets (subagents get at most these).
    :param clarify: asks the person a question.
    :param person: the person the agent acts for (``None``: the owner).
    :param shared_people: other people whose sessions ``person`` may search.
    """

    def __init__(
        self,
        *,
        config: Mapping[str, Any],
        hermes_home: Path | None,
        session_store: SessionStore,
        environments: EnvironmentManager,
        approvals: ApprovalGate,
        events: Events,
        host: Host,
        toolsets: frozenset[str],
        clarify: Clarify,
        person: str | None = None,
        shared_people: tuple[str, ...] = (),
    ) -> None:
        self.person = person
        self.shared_people = shared_people
        self.config = config
        self.hermes_home = hermes_home
        self.session_store = session_store
        self.environments = environments
        self.approvals = approvals
        self.events = events
        self.host = host
        self.toolsets = toolsets
        self.clarify = clarify

    def make(
        self, call: ToolCall, turn: Turn, session_id: str, cancel: threading.Event
    ) -> ToolContext:
        """The context of ``call``, made in ``turn`` of session ``session_id``; ``cancel`` is
        the turn's interrupt flag."""
        ctx = ToolContext(
            task_id=turn.task_id,
            session_id=session_id,
            call_id=call.id,
            tool_name=call.name,
            config=self.config,
            hermes_home=self.hermes_home,
            session_store=self.session_store,
            person=self.person,
            cancel_event=cancel,
            environment_factory=lambda: self.environments.get(turn.task_id),
            clarifier=self.clarify,
            emitter=lambda event, data: self.events.emit(event, **data),
        )
        ctx.approver = lambda request: self.approvals.approve(request, ctx)
        ctx.agents = self.host.child_runner(
            CallingAgent(
                session_id=session_id,
                toolsets=self.toolsets,
                charge=turn.charge,
                person=self.person,
                shared_people=self.shared_people,
                call_id=call.id,
            )
        )
        return ctx
