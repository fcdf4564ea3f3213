"""Running agent turns for plugins (``hermes_hookspecs.AgentRunner``): subagents, scheduled jobs,
gateway conversations.

Each run gets a fresh :class:`~hermes_core.loop.agent.Agent` of the runner's
:class:`~hermes_core.host.Host`, with the task's overrides on top; the run's session is stored
like any other (``source`` is the task's). Runs are independent, so several may go on in
parallel threads.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes_hookspecs import (
    AgentOutcome,
    AgentTask,
    HermesError,
    PersonScope,
    SessionInfo,
    SessionStore,
    Usage,
    check_person,
)

from ..caching import RecentlyUsed, frozen
from ..tools.toolsets import enabled_toolsets, expand
from .events import Callbacks
from .ids import new_id

if TYPE_CHECKING:
    from ..config.loading import Config
    from ..host import Host
    from ..plugins.manager import PluginManager
    from .agent import Agent

_STATUS = {
    "completed": "completed",
    "max_turns": "max_iterations",
    "interrupted": "interrupted",
    "budget_exhausted": "budget_exhausted",
}
"""``run_conversation`` exit reasons -> outcome statuses; every other reason is ``error``."""

_NO_SCOPE = PersonScope()
"""The scope of a run with no person, or of a person no plugin limits."""

_MAX_CACHED_HOSTS = 256
"""Distinct task configurations a runner keeps ready (see ``HostRunner._host``)."""


@dataclass(frozen=True)
class CallingAgent:
    """What a :class:`ChildRunner` knows of the agent whose tool starts subagents.

    :param session_id: the calling agent's session (the parent of its subagents' sessions).
    :param toolsets: the toolsets the calling agent has; its subagents get no others.
    :param charge: counts a subagent's usage and cost towards the calling turn.
    :param person: the person the calling agent acts for; its subagents act for them too.
    :param shared_people: the people whose sessions the calling agent may search.
    :param call_id: the tool call that starts the subagents (``""`` when unknown).
    """

    session_id: str
    toolsets: frozenset[str]
    charge: Callable[[AgentOutcome], None]
    person: str | None = None
    shared_people: tuple[str, ...] = ()
    call_id: str = ""


class HostRunner:
    """Runs :class:`~hermes_hookspecs.AgentTask` s with the configuration, plugins, session
    store and model client of one :class:`~hermes_core.host.Host` (implements
    ``hermes_hookspecs.AgentRunner``). A task's ``config_overrides`` and model fields go on top
    of the host's configuration; a task that names a ``provider`` or ``base_url`` uses it rather
    than the host's model client."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._build_lock = threading.Lock()
        self._hosts: RecentlyUsed[Host] = RecentlyUsed(_MAX_CACHED_HOSTS)

    @property
    def config(self) -> Config:
        """The configuration runs start from."""
        return self.host.config

    @property
    def plugins(self) -> PluginManager:
        """The plugin manager every run uses."""
        return self.host.plugins

    @property
    def session_store(self) -> SessionStore:
        """Where runs store their sessions."""
        return self.host.session_store

    def run(self, task: AgentTask) -> AgentOutcome:
        """Run ``task`` to the end; what goes wrong inside it is an outcome, never an exception."""
        started = time.monotonic()
        cancel = task.cancel_event
        if cancel is not None and cancel.is_set():
            return AgentOutcome(
                session_id=task.session_id or "", text="", status="interrupted", error=""
            )
        try:
            agent = self._build(task)
        except HermesError as exc:
            return self._failed(task, str(exc), started)
        except Exception as exc:  # a plugin's bug while building must not crash the caller
            return self._failed(task, f"{type(exc).__name__}: {exc}", started)
        try:
            prompt = agent.user_content(task.prompt, task.images) if task.images else task.prompt
        except HermesError as exc:
            agent.close("error")
            return self._failed(task, str(exc), started)
        result = agent.run_conversation(
            prompt,
            system_message=task.system_context,
            cancel_event=cancel,
            join_unanswered=task.join_unanswered,
            resume_unanswered=task.resume_unanswered,
            trace_context=task.trace_context,
        )
        status = _STATUS.get(result["exit_reason"], "error")
        if status == "completed" and result["final_response"] is None:
            status = "error"
        error = "" if status != "error" else str(result["error"] or result["exit_reason"])
        if status == "budget_exhausted":  # the message is the answer a front end shows
            error = str(result["error"])
            result["final_response"] = error
        try:
            agent.close(status)
        except Exception:  # the answer is already stored; cleanup trouble must not lose it
            pass
        usage = Usage(**result["usage"])
        return AgentOutcome(
            session_id=result["session_id"],
            text=result["final_response"] or "",
            status=status,
            error=error,
            usage=usage,
            cost_usd=float(result["estimated_cost_usd"] or 0.0),
            duration=time.monotonic() - started,
        )

    # --- building the agent of one run ---------------------------------------------------------

    def _build(self, task: AgentTask) -> Agent:
        person = check_person(task.person)
        scope = self._scope(person)
        host = self._host(task, scope)
        store = host.session_store
        if person is not None and task.session_id is not None:
            stored = store.get_session(task.session_id)
            if stored is not None and stored.person != person:
                raise HermesError(f"session {task.session_id!r} belongs to someone else")
        shared: tuple[str, ...] = ()
        if person is not None:
            named = (*task.shared_people, *scope.shared_people)
            shared = tuple(sorted({str(check_person(p)) for p in named} - {person}))
        on_event = task.on_event
        callbacks = Callbacks(
            stream_delta=task.on_text_delta,
            approval=task.approval,
            events=(lambda event: on_event(event.name, event.data)) if on_event else None,
        )
        with self._build_lock:  # registries fill lazily on first use: one agent at a time
            agent = host.agent(
                session_id=task.session_id,
                callbacks=callbacks,
                person=person,
                shared_people=shared,
                extra_tools=task.extra_tools,
            )
        if task.parent_session_id is not None and (
            task.session_id is None or store.get_session(agent.session_id) is None
        ):
            # A new session with a parent link, stored now so that it carries the link (the
            # agent stores any other new session itself, with the same fields: no read here).
            session = SessionInfo(
                id=agent.session_id,
                source=task.source,
                model=agent.model,
                provider=agent.provider_name,
                parent_session_id=task.parent_session_id,
                started_at=time.time(),
                person=person,
            )
            try:
                store.create_session(session)
            except Exception:
                agent.close("error")
                raise
        return agent

    def _scope(self, person: str | None) -> PersonScope:
        """What the runs of ``person`` may do (``hermes_person_scope``); no limits for the
        owner or when no plugin defines people. A plugin that fails to answer fails the run."""
        if person is None:
            return _NO_SCOPE
        host = self.host
        found = host.plugins.call_first(
            "hermes_person_scope",
            fail_closed=True,
            person=person,
            config=host.config.data,
            home=host.home if host.has_home else None,
        )
        if found is None:
            return _NO_SCOPE
        if found.error is not None:
            raise HermesError(
                f"the limits of person {person!r} could not be read ({found.record.name}: "
                f"{found.error}); nothing ran"
            )
        if not isinstance(found.value, PersonScope):
            raise HermesError(
                f"plugin {found.record.name} answered hermes_person_scope with "
                f"{type(found.value).__name__}, not a PersonScope; nothing ran"
            )
        return found.value

    def _host(self, task: AgentTask, scope: PersonScope | None = None) -> Host:
        """The host of ``task``'s run: the runner's, with the task's ``config_overrides``, its
        excluded toolsets and its model, toolset, budget, streaming and source fields on top
        (the agent is built with nothing left to override), and the person's ``scope`` over
        all of them. Tasks that differ in none of these share one cached host: a
        configuration copy costs a deep copy and a validation of the whole configuration, and
        a gateway makes one per message (with the user's workspace in its overrides)."""
        scope = scope or _NO_SCOPE
        fields = {
            "model.default": task.model,
            "model.provider": task.provider,
            "model.base_url": task.base_url,
            "model.api_mode": task.api_mode,
            "toolsets": list(task.toolsets) if task.toolsets is not None else None,
            "agent.max_turns": task.max_iterations,
            "agent.stream": True if task.on_text_delta is not None else None,
            "agent.platform": task.source,
        }
        fields = {k: v for k, v in fields.items() if v is not None}
        only = sorted(task.only_toolsets) if task.only_toolsets is not None else None
        allowed = sorted(scope.toolsets) if scope.toolsets is not None else None
        key = frozen(
            (
                task.config_overrides or {},
                list(task.exclude_toolsets),
                only,
                fields,
                allowed,
                scope.config_overrides,
            )
        )
        if key is not None:
            cached = self._hosts.get(key)
            if cached is not None:  # cached once checked: the check depends on the key only
                return cached
        host = self.host.with_overrides(task.config_overrides)
        excluded = list(task.exclude_toolsets)
        for ceiling in (only, allowed):
            if ceiling is not None:
                excluded += self._outside(ceiling)
        if excluded:
            host = self._excluding(host, excluded)
        self._check_toolsets(host, task)
        direct = task.provider is None and task.base_url is None
        host = host.with_overrides(fields, keep_client=direct)
        if scope.config_overrides:
            overrides = dict(scope.config_overrides)
            limit = overrides.get("agent.max_turns")
            if isinstance(limit, int) and task.max_iterations is not None:
                # the person's budget is a ceiling: it never raises what the run asked for
                overrides["agent.max_turns"] = min(limit, task.max_iterations)
            moved = any(
                k in ("model.provider", "model.base_url", "model.api_mode") for k in overrides
            )
            host = host.with_overrides(overrides, keep_client=not moved)
        if key is not None:
            host = self._hosts.keep(key, host)
        return host

    def _excluding(self, host: Host, names: Sequence[str]) -> Host:
        """``host`` with the installed toolsets among ``names`` added to ``disabled_toolsets``."""
        installed = self.host.registry.toolsets
        disabled = list(host.config.data.get("disabled_toolsets") or [])
        disabled += [n for n in names if n in installed and n not in disabled]
        return host.with_overrides({"disabled_toolsets": disabled})

    def _outside(self, only: Sequence[str]) -> list[str]:
        """The installed toolsets to disable so that none outside ``only`` (and what those
        include) is offered: every other one, but for a bundle that includes one of them
        (disabling a bundle disables what it includes; its other members are disabled
        one by one)."""
        registry = self.host.registry
        installed = registry.toolsets
        kept = set(expand(registry, [name for name in only if name in installed]))
        return [
            name
            for name in installed
            if name not in kept and not kept.intersection(expand(registry, [name]))
        ]

    def _check_toolsets(self, host: Host, task: AgentTask) -> None:
        """Raise when the run may not have the toolsets it asks for (subclasses restrict)."""

    def _failed(self, task: AgentTask, error: str, started: float) -> AgentOutcome:
        return AgentOutcome(
            session_id=task.session_id or "",
            text="",
            status="error",
            error=error,
            duration=time.monotonic() - started,
        )


class ChildRunner(HostRunner):
    """The runner a tool handler gets as ``ToolContext.agents``: it runs subagents of the
    calling agent. Runs use the calling agent's host (its configuration, plugins, session store
    and model client); they are offered no toolset the caller lacks; their usage and cost count
    towards the calling turn (so the parent's totals include its children's); and
    ``hermes_subagent_start`` / ``hermes_subagent_stop`` are called around each."""

    def __init__(self, host: Host, caller: CallingAgent) -> None:
        super().__init__(host)
        self.caller = caller

    def run(self, task: AgentTask) -> AgentOutcome:
        """Run ``task`` as a subagent and add its usage and cost to the calling turn's."""
        caller = self.caller
        # A subagent acts for its caller's person and shares what the caller shares: a task
        # cannot name anyone else.
        task = dataclasses.replace(task, person=caller.person, shared_people=caller.shared_people)
        if task.session_id is None:
            task = dataclasses.replace(task, session_id=new_session_id())
        if task.parent_session_id is None:
            task = dataclasses.replace(task, parent_session_id=caller.session_id)
        child_id = task.session_id or ""
        plugins = self.host.plugins
        plugins.call_each(
            "hermes_subagent_start",
            parent_session_id=caller.session_id,
            child_session_id=child_id,
            goal=task.prompt,
            source=task.source,
            parent_call_id=caller.call_id,
        )
        outcome = super().run(task)
        caller.charge(outcome)
        plugins.call_each(
            "hermes_subagent_stop",
            parent_session_id=caller.session_id,
            child_session_id=outcome.session_id or child_id,
            goal=task.prompt,
            status=outcome.status,
            duration=outcome.duration,
            outcome=outcome,
        )
        return outcome

    def _check_toolsets(self, host: Host, task: AgentTask) -> None:
        """Refuse a subagent a toolset the configuration disables or the caller lacks."""
        disabled = set(self.host.config.data.get("disabled_toolsets") or [])
        off = sorted(disabled.intersection(task.toolsets or ()))
        if off:
            raise HermesError(
                f"toolset(s) {', '.join(off)} are disabled in the configuration "
                "(disabled_toolsets), so no subagent can have them"
            )
        data = host.config.data
        if task.toolsets is not None:
            data = {**data, "toolsets": list(task.toolsets)}
        wanted = enabled_toolsets(self.host.registry, data)
        extra = sorted(set(wanted) - self.caller.toolsets)
        if extra:
            offered = ", ".join(sorted(self.caller.toolsets)) or "none"
            raise HermesError(
                f"toolset(s) {', '.join(extra)} are not available to the calling agent, so not "
                f"to its subagents either (available: {offered})"
            )


def new_session_id() -> str:
    """A fresh session id in the agent's format (for callers that name a session up front)."""
    return new_id("session")
