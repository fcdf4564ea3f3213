"""The agent loop: send the transcript and tools to the model, run the tools it asks for, append
the results in order, and repeat until it answers in text."""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hermes_hookspecs import (
    ContextEngine,
    HermesError,
    ModelClient,
    ModelRequest,
    ModelResponse,
    PromptContext,
    ProviderError,
    SessionInfo,
    SessionStore,
    ToolCall,
    ToolContext,
    ToolError,
    Usage,
)

from . import transcript
from .approvals import ApprovalCallback, ApprovalGate
from .config import Config, ConfigError, load_config, load_dotenv, resolve_home
from .context_windows import context_window, stated_window
from .dispatch import DEFAULT_TOOL_TIMEOUT, REQUESTED_NAME, Dispatcher, normalize_calls
from .engines import make_engine
from .environments import EnvironmentManager
from .events import Events, EventSink
from .model_calls import Interrupted, ModelConnection
from .plugins import PluginManager
from .pricing import estimate_cost
from .prompt import collect_layers, join_layers
from .registry import Registry
from .session_store.memory_store import MemorySessionStore
from .toolsets import build_toolbox

log = logging.getLogger("hermes.agent")

BUDGET_SUMMARY_PROMPT = (
    "You have used all the steps allowed for this task, so no more tools can be called. "
    "Summarise for the user what you did, what you found, and what is left to do."
)


RESULT_KEYS: frozenset[str] = frozenset(
    {
        "final_response",
        "messages",
        "session_id",
        "task_id",
        "api_calls",
        "usage",
        "completed",
        "interrupted",
        "exit_reason",
        "error",
        "model",
        "provider",
        "estimated_cost_usd",
    }
)
"""The keys of the dict ``run_conversation`` returns, on every path."""


class AgentError(HermesError):
    """The agent could not produce an answer (``chat`` raises it with the turn's error)."""


class _Interrupted(Exception):
    pass


class _SummaryInterrupted(BaseException):
    """The user interrupted an engine's summary request. A ``BaseException``, so that it passes
    through an engine's own ``except Exception`` (which would fall back to another summary)."""


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


class Agent:
    """A conversation with a model that can call tools.

    Everything but ``client`` is optional: the configuration comes from ``$HERMES_HOME`` (or
    ``home``/``profile``) and the arguments override it. Pass ``client`` to use a model client
    directly (the test kit's scripted model, or your own) instead of a provider plugin.

    Callbacks: ``event_sink(Event)`` receives every event; the named callbacks receive one kind
    each (see :mod:`hermes_core.events`). ``clarify_callback(question, choices) -> str`` answers
    the clarify tool; ``approval_callback(request) -> decision`` asks a person to approve.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        provider: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        api_mode: str | None = None,
        client: ModelClient | None = None,
        config: Config | Mapping[str, Any] | None = None,
        home: str | Path | None = None,
        profile: str | None = None,
        plugins: PluginManager | None = None,
        toolsets: Sequence[str] | None = None,
        max_turns: int | None = None,
        stream: bool | None = None,
        session_store: SessionStore | None = None,
        session_id: str | None = None,
        platform: str | None = None,
        yolo: bool = False,
        services: Mapping[str, Any] | None = None,
        event_sink: EventSink | None = None,
        tool_progress_callback: Callable[[str, dict[str, Any]], None] | None = None,
        thinking_callback: Callable[[bool], None] | None = None,
        reasoning_callback: Callable[[str], None] | None = None,
        clarify_callback: Callable[[str, Sequence[str] | None], str] | None = None,
        step_callback: Callable[[dict[str, Any]], None] | None = None,
        stream_delta_callback: Callable[[str], None] | None = None,
        tool_gen_callback: Callable[[str], None] | None = None,
        status_callback: Callable[[str], None] | None = None,
        approval_callback: ApprovalCallback | None = None,
    ) -> None:
        overrides = {
            "model.default": model,
            "model.provider": provider,
            "model.base_url": base_url,
            "model.api_key": api_key,
            "model.api_mode": api_mode,
            "toolsets": list(toolsets) if toolsets is not None else None,
            "agent.max_turns": max_turns,
            "agent.stream": stream,
            "agent.platform": platform,
        }
        self.config = self._load_config(config, home, profile, overrides)
        cfg = self.config.data
        self.plugins = plugins or PluginManager(
            disabled=cfg.get("plugins", {}).get("disabled") or ()
        )
        self.registry = Registry.of(self.plugins, cfg)
        self.events = Events(
            event_sink,
            tool_progress=tool_progress_callback,
            thinking=thinking_callback,
            reasoning=reasoning_callback,
            step=step_callback,
            stream_delta=stream_delta_callback,
            tool_generation=tool_gen_callback,
            status=status_callback,
        )
        self.clarify_callback = clarify_callback
        approvals_mode = (cfg.get("approvals") or {}).get("mode", "manual")
        self.approvals = ApprovalGate(
            self.plugins,
            callback=None if approvals_mode == "deny" else approval_callback,
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

        self.connection = ModelConnection(self.registry, self.plugins, cfg, self.events, client)
        self.engine: ContextEngine | None = make_engine(self.registry, cfg)
        if self.engine is not None:
            self.engine.summarize = self._summarize
            self.engine.notify = self._engine_status
        self.tool_problems: list[str] = []
        """Problems met while building the tool list (e.g. a server that did not start), one
        line each; each is also emitted as a ``status`` event."""
        self.toolbox = build_toolbox(
            self.registry,
            cfg,
            extra_tools=self.engine.tools() if self.engine else (),
            report=self._tool_problem,
        )
        tools_cfg = cfg.get("tools") or {}
        self.dispatcher = Dispatcher(
            self.toolbox,
            self.plugins,
            self.approvals,
            self.events,
            concurrency=int(agent_cfg.get("tool_concurrency") or 8),
            max_result_chars=int(tools_cfg.get("max_result_chars") or 100_000),
            timeout=_seconds(tools_cfg.get("timeout", DEFAULT_TOOL_TIMEOUT), "tools.timeout"),
            timeouts=_tool_timeouts(tools_cfg.get("timeouts")),
        )
        self.environments = EnvironmentManager(self.registry, cfg)
        home = str(self.config.home)
        self.hermes_home = "" if home == os.devnull else home
        """The HERMES_HOME folder; empty for a configuration given as a mapping."""
        self.session_store: SessionStore = session_store or self._default_store()
        self.services: dict[str, Any] = {"session_store": self.session_store, "agent": self}
        if self.hermes_home:
            self.services["hermes_home"] = self.hermes_home
        self.services.update(services or {})
        self._read_only_config = MappingProxyType(cfg)

        if session_id is not None:
            newest = getattr(self.session_store, "newest_in_lineage", None)
            session_id = newest(session_id) if newest is not None else session_id
        self.session_id = session_id or _new_id("session")
        self.session: SessionInfo | None = None
        self.messages: list[dict[str, Any]] = []
        self.system_prompt: str | None = None
        model_cfg = cfg.get("model") or {}
        self._max_tokens: int | None = model_cfg.get("max_tokens")
        options = model_cfg.get("options")
        self._options: dict[str, Any] = dict(options) if isinstance(options, Mapping) else {}
        self.usage = Usage()
        self.cost_usd = 0.0
        self._cancel = threading.Event()
        self._ask_lock = threading.Lock()
        self._wire_cache = transcript.WireCache()
        self._auxiliary: dict[str, ModelConnection] = {}
        self._compress_pending = False
        self._last_prompt_tokens: int | None = None
        self._request_content: Any = None  # the user's message of the latest turn
        self._window_model: str | None = None
        self._window_overrides: dict[str, int] = {}  # windows providers proved smaller
        self._sync_context_window()
        self._closed = False

    # --- set-up ----------------------------------------------------------------------------

    def _tool_problem(self, line: str) -> None:
        log.info("%s", line)
        self.tool_problems.append(line)
        self.events.emit("status", text=f"warning: {line}")

    @staticmethod
    def _load_config(
        config: Config | Mapping[str, Any] | None,
        home: str | Path | None,
        profile: str | None,
        overrides: dict[str, Any],
    ) -> Config:
        if isinstance(config, Config):
            return config.with_overrides({k: v for k, v in overrides.items() if v is not None})
        if config is not None:  # a plain mapping: exactly this configuration, nothing from disk
            # ``${NAME}`` in a secret key still means the process's variable NAME
            return load_config(
                Path(home or os.devnull),
                environ={},
                overrides=overrides,
                file_data=dict(config),
                references=os.environ,
            )
        root = Path(home) if home is not None else resolve_home(profile)
        load_dotenv(root / ".env")
        return load_config(root, overrides=overrides)

    def _default_store(self) -> SessionStore:
        """``$HERMES_HOME/state.db`` for a configuration read from a home folder; in memory for
        one given as a mapping (tests, embedded use without a home)."""
        home = Path(self.config.home)
        if str(home) == os.devnull:
            return MemorySessionStore()
        from .config import ensure_home
        from .session_store.sqlite_store import SQLiteSessionStore

        return SQLiteSessionStore(ensure_home(home) / "state.db")

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

    def chat(self, message: str) -> str:
        """Send ``message`` and return the model's final answer; raise :class:`AgentError` when
        the turn ended without one."""
        result = self.run_conversation(message)
        if result["final_response"] is None:
            raise AgentError(result["error"] or f"no answer ({result['exit_reason']})")
        return result["final_response"]

    def interrupt(self) -> None:
        """Stop the current turn from any thread: the model call in flight is abandoned and
        leaves nothing in the history; unfinished tool calls are answered with an error."""
        self._cancel.set()

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
            self.plugins.call_each("hermes_session_end", session=self.session)
            if self.engine is not None:
                self.engine.on_session_end(self.session.id)
        self.environments.cleanup()
        self.dispatcher.close()
        self.connection.close()
        for connection in self._auxiliary.values():
            if connection is not self.connection:
                connection.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_conversation(
        self,
        user_message: str,
        system_message: str | None = None,
        conversation_history: list[dict[str, Any]] | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """Run one user turn to the end and return its result.

        The result always has: ``final_response`` (str or None), ``messages`` (the transcript,
        without the system prompt), ``session_id``, ``task_id``, ``api_calls``, ``usage``
        (input/output/cache/reasoning tokens of this turn), ``completed``, ``interrupted``,
        ``exit_reason`` (``completed``, ``max_turns``, ``interrupted``, ``invalid_tool_calls``,
        ``provider_error``, ``error``), ``error`` (one line or None), ``model`` and ``provider``.

        ``system_message`` is used when the session's system prompt is first built; later turns
        reuse the stored prompt byte for byte.
        """
        task_id = task_id or _new_id("task")
        self._cancel = threading.Event()
        self.connection.start_turn()
        switches_before = len(self.connection.switches)
        turn = _Turn(task_id)
        try:
            self._start_session()
            if conversation_history is not None:
                self.messages = [
                    transcript.clean_value(dict(m))
                    for m in conversation_history
                    if m.get("role") != "system"
                ]
            if self.system_prompt is None:
                self._build_system_prompt(system_message)
            user_message = transcript.clean_value(user_message)
            self._append({"role": "user", "content": user_message})
            self._request_content = user_message
            if transcript.validate(self.messages):  # e.g. a failed turn left two user messages
                self.messages = transcript.repair(self.messages)
            self._loop(turn)
        except _Interrupted:
            turn.finish("interrupted")
        except ProviderError as exc:
            provider = exc.provider or self.provider_name
            turn.finish("provider_error", f"{provider}: {exc}")
        except HermesError as exc:
            turn.finish("error", str(exc))
        except Exception as exc:  # the result shape holds on every path, bugs included
            log.exception("unexpected error in the agent loop")
            turn.finish("error", f"{type(exc).__name__}: {exc}")
        self.usage.add(turn.usage)
        if turn.cost_usd is not None:
            self.cost_usd += turn.cost_usd
        add_usage = getattr(self.session_store, "add_usage", None)
        if add_usage is not None and self.session is not None and turn.api_calls:
            try:
                add_usage(self.session.id, turn.usage.as_dict(), turn.cost_usd)
            except Exception as exc:
                self.events.emit("status", text=f"warning: could not save token usage ({exc})")
        if len(self.connection.switches) > switches_before and self.session is not None:
            self._store("update_session", self.session.id, fallbacks=list(self.connection.switches))
        return turn.result(self)

    # --- the loop --------------------------------------------------------------------------

    def _loop(self, turn: _Turn) -> None:
        invalid_steps = 0  # steps in a row whose every tool call was invalid
        while True:
            if self._cancel.is_set():
                raise _Interrupted
            if turn.api_calls >= self.max_turns:
                self._budget_summary(turn)
                return
            response = self._request(turn, self.toolbox.schemas)
            message = self._assistant_message(response)
            calls = message.get("tool_calls") or []
            self._append(message)
            if not calls:
                turn.final_response = message.get("content") or ""
                self._step(turn, response, 0)
                turn.finish("completed")
                return
            outcomes = self.dispatcher.run_batch(
                calls, lambda c: self._tool_context(c, turn), self._cancel
            )
            for outcome in outcomes:
                self._append(outcome.message())
            invalid_steps = invalid_steps + 1 if all(o.invalid for o in outcomes) else 0
            self._step(turn, response, len(calls))
            if self._cancel.is_set():
                raise _Interrupted
            if invalid_steps >= self.max_invalid:
                turn.finish(
                    "invalid_tool_calls",
                    f"every tool call of the model was invalid, {invalid_steps} steps in a row; "
                    "stopped",
                )
                return

    def _budget_summary(self, turn: _Turn) -> None:
        self.events.emit(
            "status", text=f"iteration budget of {self.max_turns} used up; summarising"
        )
        response = self._request(turn, [], extra_user=BUDGET_SUMMARY_PROMPT)
        message = self._assistant_message(response)
        message.pop("tool_calls", None)
        self._append(message)
        turn.final_response = message.get("content") or ""
        turn.finish("max_turns")

    def _step(self, turn: _Turn, response: ModelResponse, tool_calls: int) -> None:
        self.events.emit(
            "step",
            api_calls=turn.api_calls,
            finish_reason=response.finish_reason,
            tool_calls=tool_calls,
        )

    def _assistant_message(self, response: ModelResponse) -> dict[str, Any]:
        """The model's message as it enters the transcript: encodable text, and tool calls
        that can be stored, answered and sent back (see :func:`normalize_calls`)."""
        message = dict(transcript.clean_value(response.message))
        message["role"] = "assistant"
        message.setdefault("content", None)
        if message.get("tool_calls"):
            message["tool_calls"] = normalize_calls(message["tool_calls"])
        if not message.get("tool_calls"):
            message.pop("tool_calls", None)
        message["finish_reason"] = response.finish_reason
        if message.get("reasoning"):
            self.events.emit("reasoning", text=message["reasoning"])
        return message

    def _request(
        self, turn: _Turn, tools: list[dict[str, Any]], extra_user: str | None = None
    ) -> ModelResponse:
        """One model call, with compression checks; retries, fallbacks and interrupts are the
        connection's."""
        overflow_retried = False
        while True:
            self._maybe_compress(preflight=True)
            messages, source = self._wire_cache.build(self.messages, self.system_prompt)
            if extra_user is not None:
                if messages[-1]["role"] == "user":
                    messages[-1] = {
                        **messages[-1],
                        "content": f"{messages[-1]['content']}\n\n{extra_user}",
                    }
                else:
                    messages.append({"role": "user", "content": extra_user})
                    source = [*source, messages[-1]]  # keeps source aligned with messages

            def make_request(
                model: str,
                cancel: threading.Event,
                messages: list[dict[str, Any]] = messages,
                source: list[dict[str, Any]] = source,
            ) -> ModelRequest:
                request = ModelRequest(
                    model=model,
                    messages=messages,
                    tools=tools,
                    stream=self.stream,
                    sink=self._stream_sink,
                    cancel=cancel,
                    session_id=self.session_id,
                    task_id=turn.task_id,
                    source_messages=source,
                    max_tokens=self._max_tokens,
                    options=dict(self._options),
                )
                self.plugins.call_each("hermes_before_request", request=request)
                return request

            try:
                response = self.connection.call(make_request, self._cancel)
            except Interrupted:
                raise _Interrupted from None
            except ProviderError as exc:
                if exc.kind != "context_overflow" or self.engine is None or overflow_retried:
                    raise
                overflow_retried = True
                self._learn_window(exc, messages, tools)
                self._compress_after_overflow(exc)
                continue
            turn.api_calls += 1
            turn.usage.add(response.usage)
            cost = estimate_cost(response.usage, response.model or self.model, self.config.data)
            if cost is not None:
                turn.cost_usd = (turn.cost_usd or 0.0) + cost
            self.plugins.call_each("hermes_after_response", response=response)
            if response.usage.input_tokens > 0:
                self._last_prompt_tokens = response.usage.input_tokens
            if self.engine is not None:
                self._sync_context_window()
                try:
                    self.engine.update_from_response(response.usage)
                    if self.engine.should_compress(response.usage.input_tokens):
                        self._compress_pending = True
                except Exception as exc:  # an engine's bug must not lose the answer
                    self._engine_failed("update_from_response/should_compress", exc)
            return response

    def _stream_sink(self, event: str, data: dict[str, Any]) -> None:
        if event == "text_delta":
            self.events.emit("text_delta", text=data.get("text", ""))
        elif event == "reasoning_delta":
            self.events.emit("reasoning", text=data.get("text", ""), delta=True)
        elif event == "tool_call_started":
            self.events.emit("tool_generation", **data)
        else:
            self.events.emit(event, **data)

    def _maybe_compress(self, preflight: bool = True) -> None:
        """Before a request: compress when a response asked for it or the engine's preflight
        estimate says so. A failing engine is reported and the request goes out uncompressed."""
        if self.engine is None:
            return
        self._sync_context_window()
        if not self._compress_pending:
            try:
                wanted = preflight and self.engine.should_compress_preflight(self.messages)
            except Exception as exc:
                self._engine_failed("should_compress_preflight", exc)
                return
            if not wanted:
                return
        self._compress_pending = False
        try:
            shortened = self._compressed(None)
        except _SummaryInterrupted:
            raise _Interrupted from None
        except Exception as exc:
            self._engine_failed("compress", exc)
            return
        if self._cancel.is_set():  # interrupted while the engine worked: nothing changes
            raise _Interrupted
        self._commit_compression(shortened)

    def _compress_after_overflow(self, error: ProviderError) -> None:
        """The provider said the request does not fit: compress now (the caller retries once)."""
        assert self.engine is not None
        self.events.emit(
            "status", text="the request did not fit in the context window; compressing and retrying"
        )
        self._sync_context_window()
        self._compress_pending = False
        try:
            shortened = self._compressed(None)
        except _SummaryInterrupted:
            raise _Interrupted from None
        except Exception as exc:
            raise error from exc
        if self._cancel.is_set():
            raise _Interrupted
        self._commit_compression(shortened)

    def _engine_failed(self, what: str, exc: Exception) -> None:
        assert self.engine is not None
        log.warning("context engine %r failed in %s", self.engine.name, what, exc_info=exc)
        self.events.emit(
            "status",
            text=f"context engine {self.engine.name!r} failed ({type(exc).__name__}: {exc}); "
            "continuing without compressing",
        )

    def _engine_status(self, text: str) -> None:
        """``ContextEngine.notify``: a status line from the engine."""
        self.events.emit("status", text=str(text))

    def _summarize(self, messages: list[dict[str, Any]], max_tokens: int | None) -> str:
        """``ContextEngine.summarize``: the compression model's answer to ``messages``."""
        if self._cancel.is_set():
            raise _SummaryInterrupted
        try:
            response = self.side_request("compression", messages, max_tokens)
        except HermesError:
            if self._cancel.is_set():
                raise _SummaryInterrupted from None
            raise
        content = response.message.get("content")
        if isinstance(content, list):
            return "\n".join(
                str(part.get("text") or "")
                for part in content
                if isinstance(part, Mapping) and part.get("type") in (None, "text", "output_text")
            )
        return content if isinstance(content, str) else ""

    def _sync_context_window(self) -> None:
        """Tell the engine the window of the model in use, when that model changed."""
        if self.engine is None:
            return
        model = self.model
        if model == self._window_model:
            return
        self._window_model = model
        window = self._window_overrides.get(model) or context_window(
            model, self.config.data, self.connection.primary.model
        )
        self.engine.set_context_window(window)

    def _learn_window(
        self, error: ProviderError, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> None:
        """After an overflow: the model's window is smaller than assumed. Use the limit the
        provider stated, else 90% of the refused request's estimated size, for this model from
        now on."""
        assert self.engine is not None
        refused = _estimate_tokens(messages) + len(json.dumps(tools, default=str)) // 4
        window = stated_window(str(error)) or int(refused * 0.9)
        current = self.engine.context_window
        if window <= 0 or (current and window >= current):
            return
        self._window_overrides[self.model] = window
        self._window_model = self.model
        self.engine.set_context_window(window)
        self.events.emit(
            "status", text=f"assuming a context window of {window:,} tokens for {self.model}"
        )

    def side_request(
        self, task: str, messages: list[dict[str, Any]], max_tokens: int | None = None
    ) -> ModelResponse:
        """Ask a model for a side task (a compression summary, ...), without tools.

        ``auxiliary.<task>`` in config.yaml (``provider``, ``model``, ``base_url``, ``api_mode``,
        ``fallback_providers``) chooses the model; without it, or when it cannot be set up, the
        main model answers. Retries and fallbacks apply as for the main model.
        """
        connection = self._auxiliary.get(task)
        if connection is None:
            connection = self.connection
            entry = (self.config.data.get("auxiliary") or {}).get(task)
            if isinstance(entry, Mapping) and entry.get("provider"):
                derived = dict(self.config.data)
                derived["model"] = {
                    "provider": entry["provider"],
                    "default": entry.get("model"),
                    "base_url": entry.get("base_url"),
                    "api_mode": entry.get("api_mode"),
                }
                derived["fallback_providers"] = list(entry.get("fallback_providers") or []) + [
                    {"provider": self.provider_name, "model": self.model}
                ]
                try:
                    connection = ModelConnection(self.registry, self.plugins, derived, self.events)
                except HermesError as exc:
                    self.events.emit(
                        "status", text=f"auxiliary.{task} unusable ({exc}); using the main model"
                    )
            self._auxiliary[task] = connection
        if connection is not self.connection:
            connection.start_turn()  # a fallback lasts for one side request
        wire = transcript.wire_messages(messages, None)

        def make_request(model: str, cancel: threading.Event) -> ModelRequest:
            return ModelRequest(
                model=model,
                messages=wire,
                cancel=cancel,
                max_tokens=max_tokens,
                session_id=self.session_id,
            )

        try:
            return connection.call(make_request, self._cancel)
        except Interrupted:
            raise HermesError(f"side task {task!r} interrupted") from None

    def compress(self, focus: str | None = None) -> dict[str, Any]:
        """Compress the transcript now with the context engine (``/compress [focus]``).

        The engine's result is repaired and validated, the conversation continues in a child
        session (``parent_session_id`` is the current one) holding the shorter transcript, and the
        system prompt is rebuilt once. Returns the figures of the compaction: ``session_id``,
        ``parent_session_id``, ``messages_before``, ``messages_after``, ``tokens_before`` and
        ``tokens_after`` (estimates, about 4 characters a token).

        When the engine keeps every message, nothing changes: the figures name the current
        session and no child is created.

        :raises HermesError: no engine is active, the conversation is empty, or the engine
            failed.
        """
        if self.engine is None:
            raise HermesError(
                "no context engine is active (context.engine in config.yaml; install one, e.g. "
                "hermes-engine-compressor)"
            )
        self._start_session()
        if not self.messages:
            raise HermesError("nothing to compress yet: the conversation is empty")
        self._cancel = threading.Event()  # an interrupt of an earlier turn does not apply
        self._sync_context_window()
        self._compress_pending = False
        try:
            shortened = self._compressed(focus)
        except _SummaryInterrupted:
            raise HermesError("compression interrupted; nothing changed") from None
        except HermesError:
            raise
        except Exception as exc:
            raise HermesError(
                f"context engine {self.engine.name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        parent = self.session_id
        figures = self._commit_compression(shortened)
        if figures["session_id"] == parent:
            self.events.emit("status", text="nothing to compress: the engine kept every message")
        return figures

    def _compressed(self, focus: str | None) -> list[dict[str, Any]]:
        """The engine's shorter transcript, repaired and validated; nothing is changed yet."""
        assert self.engine is not None
        # Memory needs no flush first: the memory toolset writes to disk before a call returns.
        before = self.messages
        result = self.engine.compress([dict(m) for m in before], self._last_prompt_tokens, focus)
        if not isinstance(result, list):
            raise HermesError(
                f"context engine {self.engine.name!r} returned {type(result).__name__}, "
                "not a list of messages"
            )
        shortened = [m for m in result if not (isinstance(m, dict) and m.get("role") == "system")]
        shortened = _keep_latest_request(before, shortened, self._request_content)
        shortened = transcript.repair(shortened)
        transcript.ensure_valid(shortened)
        return shortened

    def _commit_compression(self, shortened: list[dict[str, Any]]) -> dict[str, Any]:
        """Continue in a child session holding ``shortened``; rebuild the system prompt once.
        A result equal to the transcript changes nothing (no child session)."""
        before = self.messages
        parent = self.session
        assert parent is not None
        if shortened == before:
            tokens = _estimate_tokens(before)
            return {
                "session_id": parent.id,
                "parent_session_id": parent.parent_session_id,
                "messages_before": len(before),
                "messages_after": len(before),
                "tokens_before": tokens,
                "tokens_after": tokens,
            }
        now = time.time()
        stored = self._stored_session(parent.id)
        metadata = {**parent.metadata, **(stored.metadata if stored is not None else {})}
        for key in _SESSION_COUNTERS:
            metadata.pop(key, None)
        child = SessionInfo(
            id=_new_id("session"),
            source=parent.source,
            model=self.model,
            provider=self.provider_name,
            parent_session_id=parent.id,
            started_at=max(now, parent.started_at),
            title=(stored.title if stored is not None else None) or parent.title,
            metadata=metadata,
        )
        self._store("update_session", parent.id, ended_at=now, end_reason="compressed")
        self._store("create_session", child)
        self.session = child
        self.session_id = child.id
        self.messages = []
        for message in shortened:
            self._append(message)
        self._last_prompt_tokens = None  # reported for the transcript just replaced
        self._build_system_prompt(metadata.get("system_message"))
        figures = {
            "session_id": child.id,
            "parent_session_id": parent.id,
            "messages_before": len(before),
            "messages_after": len(self.messages),
            "tokens_before": _estimate_tokens(before),
            "tokens_after": _estimate_tokens(self.messages),
        }
        self.events.emit(
            "status",
            text=(
                f"context compressed: {figures['messages_before']} -> "
                f"{figures['messages_after']} messages, ~{figures['tokens_before']:,} -> "
                f"~{figures['tokens_after']:,} tokens; continuing in session {child.id}"
            ),
        )
        return figures

    def _stored_session(self, session_id: str) -> SessionInfo | None:
        try:
            return self.session_store.get_session(session_id)
        except Exception:
            return None

    # --- sessions, prompt, persistence -----------------------------------------------------

    def _start_session(self) -> None:
        if self.session is not None:
            return
        existing = self.session_store.get_session(self.session_id)
        if existing is not None:  # resuming: replay the stored prompt and messages
            self.session = existing
            self.system_prompt = existing.system_prompt
            # A session saved before text was cleaned at the boundary may hold lone surrogates.
            stored = self.session_store.get_messages(self.session_id)
            self.messages = [transcript.clean_value(m) for m in stored]
            self._answer_dangling_calls()
        else:
            self.session = SessionInfo(
                id=self.session_id,
                source=self.platform,
                model=self.model,
                provider=self.provider_name,
                started_at=time.time(),
            )
            self._store("create_session", self.session)
        self.approvals.reset()
        self.plugins.call_each("hermes_session_start", session=self.session)
        if self.engine is not None:
            self.engine.on_session_start(self.session_id)

    def _answer_dangling_calls(self) -> None:
        """On resume: a process killed during a tool batch left calls without a result.
        Answer each once, in the store too, so the stored session is valid again."""
        for call in transcript.dangling_calls(self.messages):
            function = call.get("function") or {}
            self._append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": transcript.INTERRUPTED_RESULT,
                    "tool_name": call.get(REQUESTED_NAME, function.get("name")),
                }
            )

    def _build_system_prompt(self, system_message: str | None) -> None:
        context = PromptContext(
            model=self.model,
            provider=self.provider_name,
            platform=self.platform,
            system_message=system_message,
            tool_names=self.toolbox.names,
            toolsets=self.toolbox.toolsets,
            hermes_home=self.hermes_home,
            cwd=os.getcwd(),
            session_id=self.session_id,
            date=_dt.date.today().isoformat(),
            config=self._read_only_config,
        )
        self.prompt_layers = collect_layers(self.plugins, context)
        self.system_prompt = join_layers(self.prompt_layers) or None
        if self.session is not None:
            self.session.system_prompt = self.system_prompt
            self.session.metadata["system_message"] = system_message
            self._store(
                "update_session",
                self.session.id,
                system_prompt=self.system_prompt,
                system_message=system_message,
            )

    def _append(self, message: dict[str, Any]) -> None:
        """Add a completed message to the transcript and persist it before going on."""
        self.messages.append(message)
        self._store("append_message", self.session_id, message)

    def _store(self, method: str, *args: Any, **kwargs: Any) -> None:
        try:
            getattr(self.session_store, method)(*args, **kwargs)
        except Exception as exc:
            log.error("session store %s failed: %s", method, exc)
            self.events.emit("status", text=f"warning: could not save the session ({exc})")

    # --- tool context ----------------------------------------------------------------------

    def _tool_context(self, call: ToolCall, turn: _Turn) -> ToolContext:
        ctx = ToolContext(
            task_id=turn.task_id,
            session_id=self.session_id,
            call_id=call.id,
            tool_name=call.name,
            config=self._read_only_config,
            services=self.services,
            cancel_event=self._cancel,
            environment_factory=lambda: self.environments.get(turn.task_id),
            clarifier=self._clarify,
            emitter=lambda event, data: self.events.emit(event, **data),
        )
        ctx.approver = lambda request: self.approvals.approve(request, ctx)
        from .runner import ChildRunner  # imported here: runner.py imports this module

        ctx.agents = ChildRunner(self, turn)
        return ctx

    def _clarify(self, question: str, choices: Sequence[str] | None) -> str:
        if self.clarify_callback is None:
            raise ToolError(
                "no user is available to answer questions now; "
                "proceed with your best judgement and state your assumptions"
            )
        with self._ask_lock:  # a person answers one question at a time
            return self.clarify_callback(question, choices)


_SESSION_COUNTERS = (
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "estimated_cost_usd",
)
"""Metadata a store keeps per session (see ``SQLiteSessionStore``): never copied to a child."""


def _seconds(value: Any, key: str) -> float | None:
    """A timeout setting: seconds > 0, or ``None`` for no limit (``0`` or ``null``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"{key}: expected a number of seconds >= 0 (0: no limit), got {value!r}")
    return float(value) or None


def _tool_timeouts(value: Any) -> dict[str, float | None]:
    """``tools.timeouts``: a timeout per tool name, replacing ``tools.timeout`` for that tool."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"tools.timeouts: expected a mapping of tool name to seconds, got {value!r}"
        )
    return {str(name): _seconds(v, f"tools.timeouts.{name}") for name, v in value.items()}


def _estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """About 4 characters a token, for the figures of a compaction."""
    chars = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif content is not None:
            chars += len(str(content))
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                chars += len(str(function.get("arguments") or "")) + 16
    return chars // 4 + 4 * len(messages)


def _keep_latest_request(
    before: list[dict[str, Any]], after: list[dict[str, Any]], request: Any = None
) -> list[dict[str, Any]]:
    """``after``, with the user's latest request in ``before`` put back if an engine dropped it.

    ``request`` is the content of the latest user turn when the agent knows it; otherwise the
    latest user message that is not marked ``_context_summary`` counts. A user message whose
    content ends with the request's content, or is the end of it (a summary an engine put in
    front of the request, in the same message, now or in an earlier compaction) keeps it.
    A dropped request goes back in front of the first message of ``after`` that came after it
    in ``before`` (so the tool calls that answer it follow it), or at the end.
    """
    index: int | None = None
    for i in range(len(before) - 1, -1, -1):
        message = before[i]
        if message.get("role") != "user" or message.get("_context_summary"):
            continue
        if request is None or _keeps(message, request):
            index = i
            break
    if index is None:
        return after
    original = before[index]
    if any(_keeps(message, original.get("content")) for message in after):
        return after
    later = before[index + 1 :]
    position = next(
        (i for i, message in enumerate(after) if any(message == m for m in later)), len(after)
    )
    return [*after[:position], dict(original), *after[position:]]


def _keeps(message: Any, content: Any) -> bool:
    """Whether ``message`` is a user message holding ``content``, or the end of it."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    kept = message.get("content")
    if kept == content:
        return True
    if isinstance(kept, str) and isinstance(content, str) and kept and content:
        return kept.endswith(content) or content.endswith(kept)
    if isinstance(kept, list) and isinstance(content, list) and kept and content:
        size = min(len(kept), len(content))
        return kept[-size:] == content[-size:]
    return False


class _Turn:
    """Book-keeping of one ``run_conversation`` call."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.api_calls = 0
        self.usage = Usage()
        self.final_response: str | None = None
        self.cost_usd: float | None = None
        self.exit_reason = "error"
        self.error: str | None = None

    def finish(self, exit_reason: str, error: str | None = None) -> None:
        self.exit_reason = exit_reason
        self.error = error

    def result(self, agent: Agent) -> dict[str, Any]:
        return {
            "final_response": self.final_response,
            "messages": list(agent.messages),
            "session_id": agent.session_id,
            "task_id": self.task_id,
            "api_calls": self.api_calls,
            "usage": self.usage.as_dict(),
            "estimated_cost_usd": self.cost_usd,
            "completed": self.exit_reason in ("completed", "max_turns"),
            "interrupted": self.exit_reason == "interrupted",
            "exit_reason": self.exit_reason,
            "error": self.error,
            "model": agent.model,
            "provider": agent.provider_name,
        }
