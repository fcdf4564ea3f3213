"""The agent loop: send the transcript and tools to the model, run the tools it asks for, append
the results in order, and repeat until it answers in text."""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hermes_hookspecs import (
    Cancelled,
    ContextEngine,
    HermesError,
    ModelClient,
    ModelResponse,
    ProviderError,
    SessionInfo,
    SessionStore,
    Tool,
    ToolError,
    TurnResult,
    Usage,
    check_person,
)

from ..budgets import BudgetExhausted, SpendGuard, estimate_prompt_tokens
from ..config.loading import Config
from ..context.engines import make_engine
from ..context.prompt import BuiltLayer
from ..context.windows import context_window
from ..host import Host
from ..models.auxiliary import AuxiliaryModels
from ..models.calls import ModelConnection
from ..models.pricing import PriceBook
from ..plugins.manager import PluginManager
from ..session_store.personal_view import PersonalView
from ..tools.bridge import install_bridge
from ..tools.environments import EnvironmentManager
from ..tools.toolsets import build_toolbox
from . import images, session_keeping, transcript
from .accounting import CallAccounting
from .approvals import ApprovalGate
from .compactable import AgentConversation
from .compaction import Compactor
from .events import Callbacks, Events
from .ids import new_id
from .requests import RequestMaker
from .settings import host_for, make_dispatcher
from .steps import ModelCall, Steps, drive
from .store_writes import StoreWrites
from .tool_calls import assistant_message
from .tool_context import ToolContexts
from .turn import BUDGET_SUMMARY_PROMPT, RESULT_KEYS, UNANSWERED_NOTE, Turn
from .vision import ImageDescriber
from .wire import WireCache, with_note

log = logging.getLogger("hermes.agent")

__all__ = ["RESULT_KEYS", "UNANSWERED_NOTE", "Agent", "AgentError"]


class AgentError(HermesError):
    """The agent could not produce an answer (``chat`` raises it with the turn's error)."""


class Agent:
    """A conversation with a model that can call tools.

    An agent is made from a :class:`~hermes_core.host.Host` (configuration, plugins, registry,
    session store), a session (``session_id`` resumes a stored one; by default a new one) and
    the user interface's :class:`~hermes_core.loop.events.Callbacks`; ``yolo`` approves every
    dangerous action without asking. :meth:`from_config` makes one with a host of its own.
    ``person`` is the person it acts for (a gateway's user): its session is theirs, its tools
    see only their data and the sessions of ``shared_people`` besides their own, and it may
    resume only their sessions.
    """

    def __init__(
        self,
        host: Host,
        *,
        session_id: str | None = None,
        callbacks: Callbacks | None = None,
        yolo: bool = False,
        person: str | None = None,
        shared_people: Sequence[str] = (),
        extra_tools: Sequence[Tool] = (),
    ) -> None:
        self.host = host
        self.person = check_person(person)
        """The person this agent acts for (``None``: the home's owner; see
        :mod:`hermes_hookspecs.people`)."""
        self.config = host.config
        cfg = self.config.data
        self.plugins = host.plugins
        self.registry = host.registry
        callbacks = callbacks or Callbacks()
        self.events = Events(callbacks)
        self.clarify_callback = callbacks.clarify
        approvals_mode = (cfg.get("approvals") or {}).get("mode", "manual")
        self.approvals = ApprovalGate(
            self.plugins,
            callback=None if approvals_mode == "deny" else callbacks.approval,
            yolo=yolo or approvals_mode == "yolo",
        )
        agent_cfg = cfg.get("agent") or {}
        self.max_turns = int(agent_cfg.get("max_turns") or 90)
        self.max_invalid = int(agent_cfg.get("tool_max_invalid") or 3)
        self.platform = str(agent_cfg.get("platform") or "library")
        self.stream = (
            bool(agent_cfg.get("stream"))
            if agent_cfg.get("stream") is not None
            else self.events.streaming
        )

        self.connection = ModelConnection(
            self.registry, self.plugins, cfg, self.events, host.client, store=host.session_store
        )
        self.auxiliary = AuxiliaryModels(
            self.registry, self.plugins, cfg, self.events, self.connection
        )
        self.vision = ImageDescriber(cfg, self.side_request)
        """Descriptions of images for a model that does not take them."""
        self.engine: ContextEngine | None = make_engine(self.registry, cfg)
        self.compactor = Compactor(
            AgentConversation(self), self.engine, self.events, self._context_window
        )
        self.tool_problems: list[str] = []
        """Problems met while building the tool list (e.g. a server that did not start), one
        line each; each is also emitted as a ``status`` event."""
        self.toolbox = build_toolbox(
            self.registry,
            cfg,
            extra_tools=[*(self.engine.tools() if self.engine else ()), *extra_tools],
            report=self._tool_problem,
        )
        self.bridge = install_bridge(
            self.toolbox, cfg, self._context_window(self.connection.primary.model)
        )
        """Tool search over the deferred tools (``tools.defer``), if any are deferred."""
        self.dispatcher = make_dispatcher(
            self.toolbox, self.plugins, self.approvals, self.events, cfg
        )
        self.environments = EnvironmentManager(self.registry, cfg)
        self.hermes_home = str(host.home) if host.has_home else ""
        """The HERMES_HOME folder; empty for a configuration given as a mapping."""
        self.session_store: SessionStore = host.session_store
        self._writes = StoreWrites(self.session_store, lambda t: self.events.emit("status", text=t))
        self.prices = PriceBook(cfg)
        self.budget = SpendGuard(
            cfg,
            self.prices,
            self.session_store,
            person=self.person,
            source=self.platform,
            job=agent_cfg.get("job"),
            say=lambda t: self.events.emit("status", text=f"budget: {t}"),
        )
        """The spend caps checked before every model call (``budgets`` in config.yaml)."""
        self.accounting = CallAccounting(self.prices, self.budget, self._store)
        """Each model call's cost, usage record and ledger entry."""
        self.tool_contexts = ToolContexts(
            config=MappingProxyType(cfg),
            hermes_home=Path(self.hermes_home) if self.hermes_home else None,
            session_store=(
                self.session_store
                if self.person is None
                else PersonalView(self.session_store, self.person, shared_people)
            ),
            person=self.person,
            shared_people=tuple(shared_people),
            environments=self.environments,
            approvals=self.approvals,
            events=self.events,
            host=host,
            toolsets=frozenset(self.toolbox.toolsets),
            clarify=self._clarify,
        )

        if session_id is not None:
            newest = getattr(self.session_store, "newest_in_lineage", None)
            session_id = newest(session_id) if newest is not None else session_id
        self.session_id = session_id or new_id("session")
        self.session: SessionInfo | None = None
        self.messages: list[dict[str, Any]] = []
        self.system_prompt: str | None = None
        self.prompt_layers: list[BuiltLayer] = []
        """The layers the system prompt was built from (once per session)."""
        self.requests = RequestMaker(self.connection, self.plugins, self.events, cfg, self.stream)
        self.usage = Usage()
        self.cost_usd = 0.0
        self._cancel = threading.Event()
        self._turn: Turn | None = None  # the turn going on, which side requests count towards
        self._ask_lock = threading.Lock()
        self._wire_cache = WireCache()
        self.compactor.sync_window()
        self._closed = False

    @classmethod
    def from_config(
        cls,
        config: Config | Mapping[str, Any] | None = None,
        *,
        home: str | Path | None = None,
        profile: str | None = None,
        plugins: PluginManager | None = None,
        client: ModelClient | None = None,
        session_store: SessionStore | None = None,
        session_id: str | None = None,
        callbacks: Callbacks | None = None,
        yolo: bool = False,
        person: str | None = None,
        **settings: Any,
    ) -> Agent:
        """An agent with a :class:`~hermes_core.host.Host` of its own: the simple way to embed
        hermes (``Agent.from_config(provider="anthropic", model="claude-sonnet-4-5")``).

        The configuration comes from ``$HERMES_HOME`` (or ``home``/``profile``), or is
        ``config`` (a mapping: exactly that, nothing read from disk). ``settings`` override it:
        ``model``, ``provider``, ``base_url``, ``api_key``, ``api_mode``, ``toolsets``,
        ``max_turns``, ``stream`` and ``platform``. ``client`` is a model client to use instead
        of a provider plugin's; ``plugins``, ``session_store`` replace the installed plugins and
        the home's store; ``session_id``, ``callbacks``, ``yolo`` and ``person`` are the
        agent's own.
        """
        host = host_for(
            config,
            home=home,
            profile=profile,
            plugins=plugins,
            client=client,
            session_store=session_store,
            settings=settings,
        )
        return cls(host, session_id=session_id, callbacks=callbacks, yolo=yolo, person=person)

    # --- set-up ----------------------------------------------------------------------------

    def _tool_problem(self, line: str) -> None:
        log.info("%s", line)
        self.tool_problems.append(line)
        self.events.emit("status", text=f"warning: {line}")

    def _context_window(self, model: str) -> int:
        return context_window(model, self.config.data, self.connection.primary.model)

    # --- public API ------------------------------------------------------------------------

    @property
    def client(self) -> ModelClient:
        """The model client of the current turn (the primary one between turns)."""
        return self.connection.active.client

    @property
    def model(self) -> str:
        """The model of the current turn."""
        return self.connection.active.model

    @property
    def provider_name(self) -> str:
        """The provider of the current turn."""
        return self.connection.active.provider

    def chat(self, message: str, images: Sequence[str | os.PathLike[str]] = ()) -> str:
        """Send ``message`` (with the image files ``images``, if any) and return the model's
        final answer; raise :class:`AgentError` when the turn ended without one."""
        result = self.run_conversation(self.user_content(message, images))
        if result["final_response"] is None:
            raise AgentError(result["error"] or f"no answer ({result['exit_reason']})")
        return result["final_response"]

    def user_content(
        self, text: str, image_paths: Sequence[str | os.PathLike[str]] = ()
    ) -> str | list[dict[str, Any]]:
        """The content of a user message: ``text``, and the image files ``image_paths`` copied
        into the home's ``images/`` folder and referenced from the message (see
        :mod:`hermes_core.loop.images`).

        :raises HermesError: an image cannot be read or is not an image, in one line.
        """
        home = Path(self.hermes_home) if self.hermes_home else None
        return images.user_content(text, [images.attach(p, home) for p in image_paths])

    def interrupt(self) -> None:
        """Stop the current turn from any thread: the model call in flight is abandoned and
        leaves nothing in the history; unfinished tool calls are answered with an error."""
        self._cancel.set()

    def side_request(
        self, task: str, messages: list[dict[str, Any]], max_tokens: int | None = None
    ) -> ModelResponse:
        """Ask a model for a side task (a compression summary, ...), without tools.

        ``auxiliary.<task>`` in config.yaml (``provider``, ``model``, ``base_url``, ``api_mode``,
        ``fallback_providers``) chooses the model; without it, or when it cannot be set up, the
        main model answers. Retries and fallbacks apply as for the main model.

        :raises Cancelled: :meth:`interrupt` was called meanwhile.
        :raises HermesError: the call failed.
        """
        response = self.auxiliary.request(
            task, messages, max_tokens, session_id=self.session_id, cancel=self._cancel
        )
        self._count_side_request(response)
        return response

    def _count_side_request(self, response: ModelResponse) -> None:
        """A side request's usage and cost: in the turn going on (so the caps see it), else
        in the session's totals at once; and its usage record."""
        model, provider, key_id = self.auxiliary.last_call
        turn, session = self._turn, self.session
        cost = self.accounting.side_call(
            response,
            model=model,
            provider=provider,
            key_id=key_id,
            session_id=session.id if session is not None else None,
        )
        if turn is not None:
            turn.add_side(response.usage, cost)
        elif session is not None and hasattr(self.session_store, "add_usage"):
            self._store("add_usage", session.id, response.usage.as_dict(), cost)
            if cost is not None:
                self.cost_usd += cost

    def compress(self, focus: str | None = None) -> dict[str, Any]:
        """Compress the transcript now with the context engine (``/compress [focus]``).

        The engine's result is repaired and validated, the conversation continues in a child
        session (``parent_session_id`` is the current one) holding the shorter transcript, and the
        system prompt is rebuilt once. Returns the figures of the compaction: ``session_id``,
        ``parent_session_id``, ``messages_before``, ``messages_after``, ``tokens_before`` and
        ``tokens_after`` (estimates, about 4 characters a token).

        When the engine keeps every message, nothing changes: the figures name the current
        session and no child is created.

        :raises HermesError: no engine is active, the conversation is empty, the engine
            failed, or :meth:`interrupt` was called while it worked (nothing changed then).
        """
        return self.compactor.compress(focus)

    def close(self, reason: str = "closed") -> None:
        """End the session (``hermes_session_end``) and release environments and threads."""
        if self._closed:
            return
        self._closed = True
        if self.session is not None:
            self.session.ended_at = time.time()
            self.session.end_reason = reason
            self._store(
                "update_session", self.session.id, ended_at=self.session.ended_at, end_reason=reason
            )
            self._writes.flush()
            self.plugins.call_each("hermes_session_end", session=self.session)
            if self.engine is not None:
                self.engine.on_session_end(self.session.id)
        self.environments.cleanup()
        self.dispatcher.close()
        self.connection.close()
        self.auxiliary.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_conversation(
        self,
        user_message: str | list[dict[str, Any]],
        system_message: str | None = None,
        conversation_history: list[dict[str, Any]] | None = None,
        task_id: str | None = None,
        *,
        cancel_event: threading.Event | None = None,
        join_unanswered: bool = False,
        trace_context: Mapping[str, str] | None = None,
        resume_unanswered: bool = False,
    ) -> TurnResult:
        """Run one user turn to the end and return its result, a
        :class:`~hermes_hookspecs.TurnResult`: ``final_response`` (str or None), ``messages``
        (the transcript, without the system prompt), ``session_id``, ``task_id``, ``api_calls``,
        ``usage`` (input/output/cache/reasoning tokens of this turn), ``completed``,
        ``interrupted``, ``exit_reason`` (``completed``, ``max_turns``, ``interrupted``,
        ``invalid_tool_calls``, ``provider_error``, ``error``), ``error`` (one line or None),
        ``model`` and ``provider``.

        ``user_message`` is text, or a list of content parts (text and images, as
        :meth:`user_content` makes them).

        ``system_message`` is used when the session's system prompt is first built; later turns
        reuse the stored prompt byte for byte.

        ``cancel_event``, when given, interrupts the turn once set, as :meth:`interrupt` does
        (which then sets it); by default each turn has a fresh one.

        A user message an interrupted or failed turn left unanswered is closed with a short
        assistant note before ``user_message`` is added, so the model answers the new message
        and not the old one again; ``join_unanswered`` joins the two messages instead (the
        gateway's ``busy: interrupt``). ``resume_unanswered`` continues the session's turn
        instead when its last user message is ``user_message`` and has no answer yet (the turn
        is repeated after its process died): nothing is added, what it recorded is kept.

        ``trace_context`` is the W3C trace context the turn belongs to (``traceparent``,
        ``tracestate``), handed to the ``hermes_turn_start`` hooks.
        """
        task_id = task_id or new_id("task")
        self._cancel = cancel_event if cancel_event is not None else threading.Event()
        self.connection.start_turn()
        switches_before = len(self.connection.switches)
        rotations_before = self.connection.rotations
        turn = self._turn = Turn(task_id)
        self.plugins.call_each(
            "hermes_turn_start",
            session_id=self.session_id,
            task_id=task_id,
            source=self.platform,
            model=self.model,
            provider=self.provider_name,
            config=self.tool_contexts.config,
            trace_context=MappingProxyType(dict(trace_context or {})),
        )
        try:
            self._start_session()
            self.budget.start_turn(self.session_id)
            if conversation_history is not None:
                self.messages = [
                    transcript.clean_value(dict(m))
                    for m in conversation_history
                    if m.get("role") != "system"
                ]
            if self.system_prompt is None:
                self._build_system_prompt(system_message)
            user_message = transcript.clean_value(user_message)
            if not (resume_unanswered and transcript.open_turn_of(self.messages, user_message)):
                last = self.messages[-1].get("role") if self.messages else None
                if not join_unanswered and last == "user":
                    self._append({"role": "assistant", "content": UNANSWERED_NOTE})
                self._append({"role": "user", "content": user_message})
            self.compactor.request_content = user_message
            if not self._wire_cache.valid(self.messages):  # e.g. two user messages in a row
                self.messages = transcript.repair(self.messages)
            drive(self._loop(turn), self._cancel)
        except Cancelled:  # an interrupt of a model call, a summary or a tool batch
            turn.finish("interrupted")
        except ProviderError as exc:
            provider = exc.provider or self.provider_name
            turn.finish("provider_error", f"{provider}: {exc}")
        except BudgetExhausted as exc:  # checked before a call: nothing of it was made
            self.events.emit("status", text=str(exc))
            turn.finish("budget_exhausted", str(exc))
        except HermesError as exc:
            turn.finish("error", str(exc))
        except Exception as exc:  # the result shape holds on every path, bugs included
            log.exception("unexpected error in the agent loop")
            turn.finish("error", f"{type(exc).__name__}: {exc}")
        self._turn = None
        session_keeping.record_turn(self, turn, rotations_before, switches_before)
        result = turn.result(self.messages, self.session_id, self.model, self.provider_name)
        self.plugins.call_each(
            "hermes_turn_end", session_id=self.session_id, task_id=task_id, result=result
        )
        return result

    # --- the loop --------------------------------------------------------------------------

    def _loop(self, turn: Turn) -> Steps[None]:
        invalid_steps = 0  # steps in a row whose every tool call was invalid
        while True:
            if self._cancel.is_set():
                raise Cancelled("interrupted by the user")
            if turn.api_calls >= self.max_turns:
                yield from self._budget_summary(turn)
                return
            response = yield from self._request(
                turn, self.toolbox.schemas, deferred=self.toolbox.deferred_schemas
            )
            message = assistant_message(response, self.events)
            self.accounting.keep_ledger(message)
            if self.bridge is not None and message.get("tool_calls"):
                message["tool_calls"] = [self.bridge.unwrap(c) for c in message["tool_calls"]]
            calls = message.get("tool_calls") or []
            self._append(message)
            if not calls:
                turn.final_response = message.get("content") or ""
                self._step(turn, response, 0)
                turn.finish("completed")
                return
            self._writes.flush()  # the model's step, before the tools run
            outcomes = yield from self.dispatcher.batch_steps(
                calls,
                lambda c: self.tool_contexts.make(c, turn, self.session_id, self._cancel),
                self._cancel,
            )
            for outcome in outcomes:
                answer = outcome.message()
                if self.bridge is not None:
                    self.bridge.annotate(answer)
                self._append(answer)
            invalid_steps = invalid_steps + 1 if all(o.invalid for o in outcomes) else 0
            self._step(turn, response, len(calls))
            if self._cancel.is_set():
                raise Cancelled("interrupted by the user")
            if invalid_steps >= self.max_invalid:
                turn.finish(
                    "invalid_tool_calls",
                    f"every tool call of the model was invalid, {invalid_steps} steps in a row; "
                    "stopped",
                )
                return

    def _budget_summary(self, turn: Turn) -> Steps[None]:
        self.events.emit(
            "status", text=f"iteration budget of {self.max_turns} used up; summarising"
        )
        response = yield from self._request(turn, [], extra_user=BUDGET_SUMMARY_PROMPT)
        message = assistant_message(response, self.events)
        self.accounting.keep_ledger(message)
        message.pop("tool_calls", None)
        self._append(message)
        turn.final_response = message.get("content") or ""
        turn.finish("max_turns")

    def _step(self, turn: Turn, response: ModelResponse, tool_calls: int) -> None:
        self.events.emit(
            "step",
            api_calls=turn.api_calls,
            finish_reason=response.finish_reason,
            tool_calls=tool_calls,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            context_window=self._context_window(self.model),
        )

    def _request(
        self,
        turn: Turn,
        tools: list[dict[str, Any]],
        extra_user: str | None = None,
        deferred: list[dict[str, Any]] | None = None,
    ) -> Steps[ModelResponse]:
        """One model call, with the compactor's checks around it; retries, fallbacks and
        interrupts are the connection's."""
        overflow_retried = False
        cancel = self._cancel
        while True:
            self._writes.flush()  # the step before (or the user's message), before this call
            self.compactor.before_request()
            # images: tool results' images added, file references made data URLs (or
            # descriptions, for a model configured with model.vision: false)
            messages, source = self._wire_cache.build(
                self.messages,
                self.system_prompt,
                self.vision.describe if self.vision.needed else None,
            )
            if extra_user is not None:
                messages, source = with_note(messages, source, extra_user)
            if self.budget.active:
                self._check_budget(turn, messages)
            make_request = self.requests.maker(
                messages, source, tools, self.session_id, turn.task_id, deferred
            )

            try:
                response: ModelResponse = yield ModelCall(
                    functools.partial(self.connection.call, make_request, cancel), cancel
                )
            except ProviderError as exc:
                if exc.kind != "context_overflow" or self.engine is None or overflow_retried:
                    raise
                overflow_retried = True
                self.compactor.after_overflow(exc, messages, tools)
                continue
            self.accounting.after_call(
                turn,
                response,
                make_request.last,
                session_id=self.session_id,
                model=response.model or self.model,
                provider=self.provider_name,
                key_id=self.connection.key_id,
            )
            self.plugins.call_each(
                "hermes_after_response", response=response, request=make_request.last
            )
            self.compactor.after_response(response)
            return response

    def _check_budget(self, turn: Turn, messages: list[dict[str, Any]]) -> None:
        """Before a call: move to ``budgets.downshift_to`` when a cap is nearly spent, and
        raise :class:`BudgetExhausted` when the call could exceed one."""
        model = self.budget.choose_model(self.model)
        if model != self.model and self.connection.downshift(model):
            self.events.emit("status", text=f"budget nearly spent: using {model} for this turn")
        prompt = self.budget.prompt_tokens or estimate_prompt_tokens(messages)
        self.budget.check(self.model, turn.cost_usd or 0.0, prompt)

    # --- sessions, prompt, persistence -----------------------------------------------------

    def _start_session(self) -> None:
        """Open the agent's session: resume the stored one, or record a new one."""
        session_keeping.start_session(self)

    def _build_system_prompt(self, system_message: str | None) -> None:
        """Build the session's system prompt from the prompt layers (and the catalogue)."""
        session_keeping.build_system_prompt(self, system_message)

    def _append(self, message: dict[str, Any]) -> None:
        """Add a completed message to the transcript and persist it before going on."""
        self.messages.append(message)
        self._store("append_message", self.session_id, message)

    def _continue_in(
        self,
        child: SessionInfo,
        messages: list[dict[str, Any]],
        system_message: str | None,
        ended_at: float,
    ) -> None:
        """End the current session as compressed and go on in ``child`` holding ``messages``;
        the system prompt is built again for it."""
        assert self.session is not None
        self._store("update_session", self.session.id, ended_at=ended_at, end_reason="compressed")
        self._store("create_session", child)
        self.session = child
        self.session_id = child.id
        self.messages = []
        for message in messages:
            self._append(message)
        self._build_system_prompt(system_message)
        self._writes.flush()

    def _store(self, method: str, *args: Any, **kwargs: Any) -> None:
        """Queue a session store write; the step it belongs to commits it (``StoreWrites``)."""
        self._writes.add(method, *args, **kwargs)

    def _clarify(self, question: str, choices: Sequence[str] | None) -> str:
        if self.clarify_callback is None:
            raise ToolError(
                "no user is available to answer questions now; "
                "proceed with your best judgement and state your assumptions"
            )
        with self._ask_lock:  # a person answers one question at a time
            return self.clarify_callback(question, choices)
