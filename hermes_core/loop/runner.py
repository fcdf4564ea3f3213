"""Running agent turns for plugins (``hermes_hookspecs.AgentRunner``): subagents, scheduled jobs,
gateway conversations.

Each run gets a fresh :class:`~hermes_core.loop.agent.Agent` built from the runner's configuration,
plugin manager and session store, with the task's overrides on top; the run's session is stored
like any other (``source`` is the task's). Runs are independent, so several may go on in
parallel threads.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import (
    AgentOutcome,
    AgentTask,
    HermesError,
    ModelClient,
    SessionInfo,
    SessionStore,
    Usage,
)

from ..config.loading import Config
from ..plugins.registry import Registry

if TYPE_CHECKING:
    from ..plugins.manager import PluginManager
    from .agent import Agent, _Turn

_STATUS = {
    "completed": "completed",
    "max_turns": "max_iterations",
    "interrupted": "interrupted",
}
"""``run_conversation`` exit reasons -> outcome statuses; every other reason is ``error``."""

_MAX_CACHED_CONFIGS = 32
"""Distinct task configurations a runner keeps ready (see ``HostRunner._config``)."""
_ACCOUNT_LOCK = threading.Lock()


class HostRunner:
    """Runs :class:`~hermes_hookspecs.AgentTask` s with one configuration, plugin manager and
    session store (implements ``hermes_hookspecs.AgentRunner``).

    :param config: the configuration runs start from (a task's ``config_overrides`` and model
        fields go on top).
    :param plugins: the plugin manager every run uses.
    :param session_store: where runs store their sessions.
    :param client: a model client to use directly (an embedder's or the test kit's), for tasks
        that name no ``provider`` or ``base_url``; ``None`` resolves the configured provider.
    """

    def __init__(
        self,
        *,
        config: Config,
        plugins: PluginManager,
        session_store: SessionStore,
        client: ModelClient | None = None,
    ) -> None:
        self.config = config
        self.plugins = plugins
        self.session_store = session_store
        self.client = client
        self._build_lock = threading.Lock()
        self._configs: dict[tuple[Any, ...], Config] = {}
        self._configs_lock = threading.Lock()

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
        result = agent.run_conversation(
            task.prompt, system_message=task.system_context, cancel_event=cancel
        )
        status = _STATUS.get(result["exit_reason"], "error")
        if status == "completed" and result["final_response"] is None:
            status = "error"
        error = "" if status != "error" else str(result["error"] or result["exit_reason"])
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
        from .agent import Agent

        config = self._config(task)
        direct = self.client is not None and task.provider is None and task.base_url is None
        with self._build_lock:  # registries fill lazily on first use: one agent at a time
            agent = Agent(
                config=config,
                plugins=self.plugins,
                client=self.client if direct else None,
                stream_delta_callback=task.on_text_delta,
                session_store=self.session_store,
                session_id=task.session_id,
                approval_callback=task.approval,
            )
        if task.parent_session_id is not None and (
            task.session_id is None or self.session_store.get_session(agent.session_id) is None
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
            )
            try:
                self.session_store.create_session(session)
            except Exception:
                agent.close("error")
                raise
        return agent

    def _config(self, task: AgentTask) -> Config:
        """The configuration of ``task``'s run: the runner's, then the task's
        ``config_overrides``, its excluded toolsets and its model, toolset, budget, streaming and
        source fields on top (the agent is built with nothing left to override). Tasks without
        ``config_overrides`` that differ in no field share one cached copy: a copy costs a deep
        copy and a validation of the whole configuration, and a gateway makes one per message."""
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
        key = None
        if not task.config_overrides:
            key = (
                tuple(task.exclude_toolsets),
                tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in fields.items()),
            )
            with self._configs_lock:
                cached = self._configs.get(key)
            if cached is not None:  # cached once checked: the check depends on the key only
                return cached
        config = self.config.with_overrides(task.config_overrides)
        if task.exclude_toolsets:
            config = self._excluding(config, task.exclude_toolsets)
        self._check_toolsets(config, task)
        config = config.with_overrides(fields)
        if key is not None:
            with self._configs_lock:
                if len(self._configs) >= _MAX_CACHED_CONFIGS:
                    self._configs.pop(next(iter(self._configs)))
                self._configs[key] = config
        return config

    def _excluding(self, config: Config, names: Sequence[str]) -> Config:
        """``config`` with the installed toolsets among ``names`` added to ``disabled_toolsets``."""
        installed = Registry.of(self.plugins, self.config.data).toolsets
        disabled = list(config.data.get("disabled_toolsets") or [])
        disabled += [n for n in names if n in installed and n not in disabled]
        return config.with_overrides({"disabled_toolsets": disabled})

    def _check_toolsets(self, config: Config, task: AgentTask) -> None:
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
    calling agent. Runs inherit the caller's configuration, plugins, session store, model client
; they are offered no toolset the caller lacks; their usage and cost count
    towards the calling turn (so the parent's totals include its children's); and
    ``hermes_subagent_start`` / ``hermes_subagent_stop`` are called around each."""

    def __init__(self, parent: Agent, turn: _Turn) -> None:
        primary = parent.connection.primary
        super().__init__(
            config=parent.config,
            plugins=parent.plugins,
            session_store=parent.session_store,
            client=primary.client if primary.create_client is None else None,
        )
        self._turn = turn
        self._parent_session_id = parent.session_id
        self._parent_toolsets = frozenset(parent.toolbox.toolsets)

    def run(self, task: AgentTask) -> AgentOutcome:
        """Run ``task`` as a subagent and add its usage and cost to the calling turn's."""
        if task.session_id is None:
            task = dataclasses.replace(task, session_id=new_session_id())
        if task.parent_session_id is None:
            task = dataclasses.replace(task, parent_session_id=self._parent_session_id)
        child_id = task.session_id or ""
        self.plugins.call_each(
            "hermes_subagent_start",
            parent_session_id=self._parent_session_id,
            child_session_id=child_id,
            goal=task.prompt,
            source=task.source,
        )
        outcome = super().run(task)
        with _ACCOUNT_LOCK:
            self._turn.usage.add(outcome.usage)
            if outcome.cost_usd:
                self._turn.cost_usd = (self._turn.cost_usd or 0.0) + outcome.cost_usd
        self.plugins.call_each(
            "hermes_subagent_stop",
            parent_session_id=self._parent_session_id,
            child_session_id=outcome.session_id or child_id,
            goal=task.prompt,
            status=outcome.status,
            duration=outcome.duration,
            outcome=outcome,
        )
        return outcome

    def _check_toolsets(self, config: Config, task: AgentTask) -> None:
        from ..tools.toolsets import enabled_toolsets

        data = config.data
        if task.toolsets is not None:
            data = {**data, "toolsets": list(task.toolsets)}
        wanted = enabled_toolsets(Registry.of(self.plugins, self.config.data), data)
        extra = sorted(set(wanted) - self._parent_toolsets)
        if extra:
            offered = ", ".join(sorted(self._parent_toolsets)) or "none"
            raise HermesError(
                f"toolset(s) {', '.join(extra)} are not available to the calling agent, so not "
                f"to its subagents either (available: {offered})"
            )


def new_session_id() -> str:
    """A fresh session id in the agent's format (for callers that name a session up front)."""
    return f"session_{uuid.uuid4().hex[:16]}"
